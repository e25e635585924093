"""The driver: every role a state machine over its steps, run over a transport. The
directory transport writes whole messages and never replaces one with other bytes; a run
of separate processes that exchange only inbox and outbox files writes the synthetic CSV
simulate writes; a party resumed from its state folder spends nothing new."""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf import simulate
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import (
    DirectoryTransport,
    InProcessTransport,
    Message,
    MissingMessageError,
    PartyDriver,
    local_run,
    run_in_process,
)
from vertimrf.errors import ConfigError, MessageError, RunChangedError
from vertimrf.party.roles import Party
from vertimrf.party.secure import SecureParty
from vertimrf.protocol import from_preset
from vertimrf.protocol.config import ProtocolConfig

SECRET = bytes(range(32))
SEED = 5
PARTIES = {"A": ["c0", "c1", "c2"], "B": ["c3", "c4"]}
DEAL = Message("server", "A", "deal")


def _table(rows: int = 300) -> tuple[pd.DataFrame, DomainSpec]:
    """A small correlated table: every column a noisy function of one latent code."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 6, rows)
    sizes = [6, 2, 3, 4, 5]
    df = pd.DataFrame(
        {
            f"c{j}": np.where(rng.random(rows) < 0.7, latent % u, rng.integers(0, u, rows))
            for j, u in enumerate(sizes)
        }
    )
    return df, DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(sizes)})


def _config(spec: DomainSpec, **fields) -> ProtocolConfig:
    return from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(PARTIES.items()),
        max_rows=512, run_nonce="cd" * 16, **fields,
    )  # fmt: skip


# ------------------------------------------------------------------ transports


@pytest.mark.parametrize("kind", ["in-process", "directory"])
def test_a_message_is_sent_once_and_never_replaced_by_other_bytes(tmp_path, kind):
    transport = (
        InProcessTransport()
        if kind == "in-process"
        else DirectoryTransport(tmp_path / "A", tmp_path)
    )
    with pytest.raises(MissingMessageError, match="deal from server to A"):
        transport.receive(DEAL)
    transport.send(DEAL, b"sealed deal")
    transport.send(DEAL, bytearray(b"sealed deal"))  # a re-run sends the same bytes: fine
    with pytest.raises(MessageError, match="already sent with other bytes"):
        transport.send(DEAL, b"another deal")
    assert transport.receive(DEAL) == b"sealed deal"
    if kind == "directory":
        assert (tmp_path / "A" / "server.deal").read_bytes() == b"sealed deal"
        assert [p.name for p in (tmp_path / "A").iterdir()] == ["server.deal"]  # no temp file


def test_the_directory_transport_waits_a_bounded_time_and_bounds_a_message(tmp_path):
    transport = DirectoryTransport(tmp_path / "A", tmp_path, timeout=0.3, max_bytes=4)
    start = time.monotonic()
    with pytest.raises(MissingMessageError, match=r"did not arrive within 0.3 s"):
        transport.receive(DEAL)
    assert 0.3 <= time.monotonic() - start < 2.0
    transport.send(DEAL, b"12345")
    with pytest.raises(MessageError, match="5 bytes is more than the 4"):
        transport.receive(DEAL)
    with pytest.raises(ConfigError, match="cannot name a message"):
        Message("server", "../A", "deal")
    with pytest.raises(ConfigError, match="timeout"):
        DirectoryTransport(tmp_path, tmp_path, timeout=-1)


def test_a_stuck_in_process_run_names_the_missing_message():
    """A party whose server never deals cannot move: the runner says which message is
    missing instead of looping."""
    df, spec = _table(50)
    cfg = _config(spec)
    keys = {n: KeyPair.generate(n) for n in PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    party = Party(
        "A", frame[["id", *PARTIES["A"]]], cfg, SECRET, keypair=keys["A"],
        peers={"B": keys["B"].public()}, seed=SEED,
    )  # fmt: skip
    with pytest.raises(MessageError, match="cannot go on: the deal from server to A"):
        run_in_process([PartyDriver(party, InProcessTransport())])


# ------------------------------------------------------------------ resuming


def _drivers(frame, cfg, keys, state, message_dir=None):
    data = {n: frame[["id", *cols]] for n, cols in PARTIES.items()}
    run = local_run(
        data, cfg, SECRET, seed=SEED, message_dir=message_dir, state_dir=state, keys=keys
    )
    return run.server, {d.name: d for d in run.parties}


@pytest.mark.parametrize("pipeline", ["select", "paper"])
def test_a_party_resumed_from_its_state_writes_the_same_bytes_and_releases_nothing_new(
    tmp_path, monkeypatch, pipeline
):
    """Parties stop after their first secure release; new party objects on the same state
    folders resend the recorded messages (the transport refuses other bytes), never release
    again, finish the run, and the synthetic table is simulate's, byte for byte."""
    df, spec = _table()
    cfg = _config(spec, secure_pipeline=pipeline)
    keys = {n: KeyPair.generate(n) for n in PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    mail = tmp_path / "mail"
    server, parties = _drivers(frame, cfg, keys, tmp_path / "state", mail)
    first = "release"
    while any(first not in d.done for d in parties.values()):
        for role in [server, *parties.values()]:
            step = role.next_step()
            if step is not None and step.name != "synthesize":
                with contextlib.suppress(MissingMessageError):
                    role.execute(step, role.gather(step))
    sent = {p.relative_to(mail): p.read_bytes() for p in mail.rglob("*") if p.is_file()}
    want, _ = simulate(df, config=cfg, seed=SEED, secret=SECRET)

    def refuse(*args, **kwargs):
        raise AssertionError("a resumed party released again")

    monkeypatch.setattr(SecureParty, "release", refuse)
    monkeypatch.setattr(SecureParty, "features", refuse)
    _, again = _drivers(frame, cfg, keys, tmp_path / "state", mail)
    run_in_process([server, *again.values()])
    for path, data in sent.items():
        assert (mail / path).read_bytes() == data
    folder = next(p for p in (tmp_path / "state" / "A").iterdir() if p.is_dir())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # the party's private state
    assert all(d.done == parties[n].done + [s.name for s in d.steps()][len(parties[n].done) :]
               for n, d in again.items())  # fmt: skip
    synth = server.fitted().sample()
    assert synth.to_csv(index=False) == want.to_csv(index=False)


def test_a_state_folder_of_another_data_set_is_refused(tmp_path):
    df, spec = _table(60)
    cfg = _config(spec)
    keys = {n: KeyPair.generate(n) for n in PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    server, parties = _drivers(frame, cfg, keys, tmp_path)
    run_in_process([server, *parties.values()])
    other = frame.assign(c0=(frame["c0"] + 1) % 6)
    with pytest.raises(RunChangedError, match="a corrected table needs a new config"):
        _drivers(other, cfg, keys, tmp_path)


# ------------------------------------------------------------------ separate processes


def _role_files(tmp_path: Path, df: pd.DataFrame, cfg: ProtocolConfig) -> tuple[list, list]:
    """The config, the group secret, every key pair (the server's too), the public keys and
    each party's rows (shuffled, linked by ``rid``) as files in ``tmp_path``; the server's
    and each party's arguments to ``vertimrf server run`` / ``party run``, sharing the mail
    folder."""
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    KeyPair.generate("server").save(tmp_path / "server.key")
    for n, cols in PARTIES.items():
        KeyPair.generate(n).save(tmp_path / f"{n}.key")
        KeyPair.load(tmp_path / f"{n}.key").public().save(tmp_path / f"{n}.pub")
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n))
        frame.to_csv(tmp_path / f"{n}.csv", index=False)
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED)]  # fmt: skip
    server = ["server", "run", *common, "--inbox", "mail/server", "--keys", "A.pub", "B.pub",
              "--server-key", "server.key", "--out", "synth.csv"]  # fmt: skip
    parties = [
        ["party", "run", *common, "--inbox", f"mail/{n}", "--name", n, "--data", f"{n}.csv",
         "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
         "--peers", *[f"{q}.pub" for q in PARTIES if q != n], "--state-dir", f"state-{n}"]
        for n in PARTIES
    ]  # fmt: skip
    return server, parties


def _start(tmp_path: Path, args: list[str]) -> subprocess.Popen:
    """One role's process (``vertimrf ARGS``), in ``tmp_path``; the default state folder
    under ``tmp_path/xdg``."""
    return subprocess.Popen(
        [sys.executable, "-m", "vertimrf", *args], cwd=tmp_path, env=_env(tmp_path),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _env(tmp_path: Path) -> dict[str, str]:
    """The environment of a role's process: the per-user state folder under ``tmp_path``."""
    return {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}


def test_two_parties_and_a_server_in_separate_processes_write_simulates_bytes(tmp_path):
    """Each role its own process (``vertimrf server run`` / ``party run``), exchanging only
    files: every role's outbox is the shared mail folder, its inbox the subfolder of its name."""
    df, spec = _table()
    cfg = _config(spec, secure_binning="auto")
    server, parties = _role_files(tmp_path, df, cfg)
    mail = tmp_path / "mail"
    procs = [_start(tmp_path, args) for args in [server, *parties]]
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-2000:]
    finally:
        for proc in procs:
            proc.kill()
    assert {p.name for p in mail.iterdir()} == {"server", *PARTIES}
    want, _ = simulate(df, config=cfg, seed=SEED, secret=SECRET)
    assert (tmp_path / "synth.csv").read_bytes() == want.to_csv(index=False).encode()


def test_a_server_whose_parties_never_join_stops_after_its_timeout(tmp_path):
    """No party runs: the server process waits its bounded time for the first message,
    then exits with one line naming the missing message, and writes nothing."""
    df, spec = _table(50)
    _config(spec, method="fo").save(tmp_path / "config.json")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", "server", "run", "--config", "config.json",
         "--inbox", "mail/server", "--outbox", "mail", "--timeout", "1", "--out", "synth.csv"],
        cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "the local from A to server did not arrive within 1 s" in lines[0]
    assert time.monotonic() - start < 60 and not (tmp_path / "synth.csv").exists()


def test_run_step_runs_one_named_step_or_names_the_steps(tmp_path):
    """``run_step`` runs the step it names and no other (the server's deal, on the parties'
    commitments: one deal out to each party, nothing else); a step the method lacks is one
    error naming the steps."""
    df, spec = _table(50)
    cfg = _config(spec)
    run = local_run(
        {n: df[c].assign(id=np.arange(len(df))) for n, c in PARTIES.items()}, cfg, SECRET
    )
    server, transport = run.server, run.server.transport
    with pytest.raises(MissingMessageError, match="commit from A to server"):
        server.run_step("deal")  # no commitment yet
    for party in run.parties:
        party.run_step("commit")
        assert party.done == ["commit"]
    server.run_step("deal")
    assert server.done == ["deal"]
    assert all(transport.receive(Message("server", n, "deal")) for n in PARTIES)
    with pytest.raises(MissingMessageError):
        transport.receive(Message("server", "A", "select"))
    with pytest.raises(ConfigError, match=r"no step 'measure'.*\['deal', 'select', 'synthesize'\]"):
        server.run_step("measure")
