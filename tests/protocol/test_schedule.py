"""Every method's schedule (vertimrf.protocol.schedule) is the one its consumers follow: the
drivers' steps and their input and output messages, the service's uploads and limits, the
folder transport's names, the file transport's limits and the CLI step commands."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vertimrf.cli.app import build_parser
from vertimrf.cli.party_steps import STEP_COMMANDS as PARTY_COMMANDS
from vertimrf.cli.server_steps import STEP_COMMANDS as SERVER_COMMANDS
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.driver.files import FileTransport
from vertimrf.driver.transport import MissingMessageError
from vertimrf.errors import MessageError
from vertimrf.protocol import ProtocolConfig
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.schedule import (
    CONTAINER_KINDS,
    CROSS_NOISES,
    OWN_DEALER,
    PRODUCT_STEPS,
    SEALED_KINDS,
    SYNTHESIZE,
    Kind,
    schedule,
)
from vertimrf.protocol.secure.tokens import TOKENS_MAGIC
from vertimrf.protocol.seeds import SERVER
from vertimrf.service.app import CONTAINER_FORMATS

COLUMNS = {"A": ["c0", "c1"], "B": ["c2"], "C": ["c3", "c4"]}
METHODS = {
    "secure/select": {"method": "secure", "secure_feature_width": 16},
    "secure/select/partial": {
        "method": "secure",
        "secure_feature_width": 16,
        "record_sets": "partial",
        "max_rows": 4096,
    },  # fmt: skip
    "secure/paper": {"method": "secure", "secure_pipeline": "paper"},
    "fo": {"method": "fo"},
    "fm": {"method": "fm", "t": 32, "allow_non_dp": True},
}


def _data() -> tuple[pd.DataFrame, DomainSpec]:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({f"c{j}": rng.integers(0, 3, 200) for j in range(5)})
    return df, DomainSpec.from_dict({f"c{j}": 3 for j in range(5)})


def _config(method: str) -> ProtocolConfig:
    _, spec = _data()
    return from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(COLUMNS.items()),
        run_nonce="ab" * 16, **{"max_rows": 256, "record_sets": "equal", **METHODS[method]},
    )  # fmt: skip


def _schedules() -> dict[str, type]:
    """Each method's schedule class, by its name, as its Method gives it."""
    return {m: type(schedule(_config(m))) for m in METHODS}


def test_one_schedule_per_method_and_every_step_names_its_kind():
    """Five schedules, one per method; a step that sends names the kind it sends first (a
    second kind to the same receivers is ``<step>-<part>``)."""
    assert sorted(cls.method for cls in _schedules().values()) == sorted(METHODS)
    for method in METHODS:
        run = schedule(_config(method))
        assert run.method == method
        for step in run.STEPS:
            if step.sends:
                named = [s.kind for s in step.sends if s.kind == step.name]
                assert named, step
                assert all(s.kind.startswith(step.name) for s in step.sends), step
        assert run.STEPS[-1].name == SYNTHESIZE and run.STEPS[-1].by == SERVER
        assert set(run.kinds) == {m.kind for m in run.messages()}
        for step in CROSS_NOISES["coins"](run.STEPS):  # the coins' kinds are named so too
            assert all(s.kind.startswith(step.name) for s in step.sends), step


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_drivers_take_the_schedules_steps_and_send_its_messages(method, tmp_path):
    """Each role's driver has the schedule's steps, each reading the messages the schedule
    addresses to it; run over folders, each step writes exactly the messages the schedule
    says, under the folder transport's names (``<receiver>/<sender>.<kind>``)."""
    cfg = _config(method)
    run_schedule = schedule(cfg)
    df, _ = _data()
    frame = df.assign(id=np.arange(len(df)))
    data = {n: frame[["id", *cols]] for n, cols in COLUMNS.items()}
    mail = tmp_path / "mail"
    run = local_run(data, cfg, bytes(range(32)), seed=1, message_dir=mail)
    roles = [run.server, *run.parties]
    for role in roles:
        want = run_schedule.steps(role.name)
        assert [s.name for s in role.steps()] == [s.name for s in want]
        for step in role.steps():
            assert step.inputs == run_schedule.inputs(step.name, role.name)
            assert step.lazy == run_schedule.lazy(step.name, role.name)

    def written() -> set[str]:
        return {str(p.relative_to(mail)) for p in mail.rglob("*") if p.is_file()}

    seen: set[str] = set()
    while any(role.next_step() is not None for role in roles):
        moved = False
        for role in roles:
            step = role.next_step()
            if step is None:
                continue
            try:
                inputs = role.gather(step)
            except MissingMessageError:
                continue
            role.execute(step, inputs)
            moved = True
            sends = run_schedule.sends(step.name, role.name)
            now = written()
            assert now - seen == {f"{m.receiver}/{m.file_name}" for m in sends}, step.name
            seen = now
        assert moved
    assert seen == {f"{m.receiver}/{m.file_name}" for m in run_schedule.messages()}


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_service_takes_uploads_of_the_parties_messages_with_the_schedules_limits(method):
    """The service lets a party upload exactly its messages of the schedule, each with one
    limit; a body's first bytes are those of its format."""
    cfg = _config(method)
    run = schedule(cfg)
    parties = [m for m in run.messages() if m.sender != SERVER]
    uploads = run.uploads()
    assert set(uploads) == {(m.sender, m.receiver, m.kind) for m in parties}
    for m in parties:
        limit = uploads[m.sender, m.receiver, m.kind]
        assert limit == run.limit(m) and limit.limit > 0
        if m.kind in CONTAINER_KINDS:
            assert limit.magic == b"PK\x03\x04" and m.kind in CONTAINER_FORMATS
        elif m.kind in SEALED_KINDS:
            assert limit.magic == b""
        elif m.kind == Kind.TOKENS:
            assert limit.magic == TOKENS_MAGIC
        else:
            assert limit.magic == b"{"
    assert set(CONTAINER_FORMATS) == CONTAINER_KINDS


@pytest.mark.parametrize("method", sorted(METHODS))
def test_the_file_transport_refuses_a_file_over_the_schedules_limit(method, tmp_path):
    """A step command's transport limits every input file to the schedule's limit."""
    run = schedule(_config(method))
    for m in run.messages():
        limit = run.bytes_limit(m)
        if limit is None or limit > 1 << 24:
            continue
        path = tmp_path / m.step_file_name
        with open(path, "wb") as fh:
            fh.truncate(limit + 1)
        transport = FileTransport({m: path}, {}, limits=run.bytes_limit)
        with pytest.raises(MessageError, match=f"more than any {m.kind} of this run"):
            transport.receive(m)


def test_the_cli_has_one_step_command_per_step_of_the_schedules():
    """`vertimrf party STEP` and `vertimrf server STEP` exist for every step of every
    schedule (besides `run`), each running the step of its name."""
    parser = build_parser()
    roles = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    party_steps = {s.name for cls in _schedules().values() for s in cls.STEPS if s.by != SERVER}
    paillier_steps = (
        s for cls in _schedules().values() for s in PRODUCT_STEPS["paillier"](cls.STEPS)
    )
    party_steps |= {s.name for s in paillier_steps if s.by != SERVER}
    server_steps = {s.name for cls in _schedules().values() for s in cls.STEPS if s.by == SERVER}
    assert set(PARTY_COMMANDS) == party_steps and set(SERVER_COMMANDS) == server_steps
    for role, steps, commands in (
        ("party", party_steps, PARTY_COMMANDS),
        ("server", server_steps, SERVER_COMMANDS),
    ):
        actions = roles[role]._subparsers._group_actions[0].choices
        assert set(actions) - {"run", "refit"} == steps  # refit: a server's fit again, no step
        for step in steps:
            assert actions[step].get_default("func") is commands[step]
    own = [step for steps in OWN_DEALER.values() for step in steps]  # an own dealer's steps
    coins = [step for cls in _schedules().values() for step in CROSS_NOISES["coins"](cls.STEPS)]
    paillier = [s for cls in _schedules().values() for s in PRODUCT_STEPS["paillier"](cls.STEPS)]
    every = [step for cls in _schedules().values() for step in cls.STEPS] + own + coins + paillier
    assert {k.value for k in Kind} == {s.kind for step in every for s in step.sends}
