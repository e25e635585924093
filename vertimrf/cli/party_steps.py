"""A party's step commands (``party local``, ``commit``, ``features``, ``release``,
``groups``, ``measure``; product "paillier": ``reply``, ``group-reply``): each runs the
party's step of the same name (:mod:`vertimrf.protocol.schedule`), its input and output
messages being the command's files, named by the schedule; the party's private state (step
record, a copy of what it sent, the shares) is the driver's, in ``--state-dir``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    Phases,
    check_outputs,
    dask_client,
    file_name,
    own_key,
    party_inputs,
    party_role,
    run_file_step,
    step_config,
)
from vertimrf.errors import ConfigError
from vertimrf.protocol.schedule import Kind, Message
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.driver.files import PathLike
    from vertimrf.protocol.schedule import Schedule
    from vertimrf.protocol.setup import RunSetup


def _run(
    args: argparse.Namespace,
    setup: RunSetup,
    step: str,
    inputs: Mapping[Message, PathLike | bytes],
    outputs: Mapping[Message, PathLike | None],
) -> Phases:
    """Run this party's ``step`` over the files; a party whose only step this is (fo and fm)
    keeps no state without --state-dir. Returns the timed phases."""
    from vertimrf.driver.files import FileTransport
    from vertimrf.driver.party import PartyDriver
    from vertimrf.driver.state import default_state_dir

    name = file_name(args.party)
    run = setup.schedule
    transport = FileTransport(inputs, outputs, force=args.force, limits=run.bytes_limit)
    if args.state_dir is not None:
        state_dir: Path | None = Path(args.state_dir)
    else:
        stateless = len(run.steps(name)) == 1
        state_dir = None if stateless else default_state_dir(name)
    with (
        Phases(f"{name} {step}", ("read", step, "write"), args.quiet) as ph,
        dask_client(args) as client,
    ):
        with ph("read"):
            keypair = own_key(args) if args.keys is not None or args.seed is None else None
            quiet = False if args.quiet else None
            party = party_role(args, setup, keypair, progress=quiet, client=client)
            driver = PartyDriver(party, transport, state_dir=state_dir)
        run_file_step(driver, transport, step, ph)
    return ph


# The option that names the file of each message a party receives from the server.
_FROM_SERVER = {
    Kind.ADMIT: "admit", Kind.DEAL: "deal", Kind.DEAL_SLOTS: "deal_slots",
    Kind.SELECT: "request", Kind.SELECT_DEAL: "select_deal",
}  # fmt: skip


def _files(
    args: argparse.Namespace, run: Schedule, step: str
) -> tuple[dict[Message, Path], dict[Message, Path | None]]:
    """The step's input and output files, by message, from the schedule: the server's
    messages from their options, the peers' from ``--blobs`` (SENDER-to-NAME.KIND); the
    message to the server to ``--out``, those to the peers in ``--out-dir``
    (NAME-to-PEER.KIND); the count travels in the local message itself."""
    name = file_name(args.party)
    inputs: dict[Message, Path] = {}
    for m in (*run.inputs(step, name), *run.lazy(step, name)):
        if m.kind == Kind.LOCAL_COUNT:
            continue  # from --count-from (count_input)
        option = _FROM_SERVER[Kind(m.kind)] if m.sender == SERVER else "blobs"
        given = getattr(args, option, None)
        deal = getattr(args, "deal", None)
        if m.kind == Kind.DEAL_SLOTS and given is None and deal is not None:
            given = f"{deal}-slots"  # the server writes NAME.deal-slots beside NAME.deal
        if given is None:
            raise ConfigError(f"`party {step}` needs --{option.replace('_', '-')}.")
        inputs[m] = Path(given) if m.sender == SERVER else Path(given) / m.step_file_name
    outputs: dict[Message, Path | None] = {}
    for m in run.sends(step, name):
        if m.receiver == SERVER:
            outputs[m] = Path(args.out)
        else:
            outputs[m] = (
                None if m.kind == Kind.LOCAL_COUNT else Path(args.out_dir) / m.step_file_name
            )
    return inputs, outputs


def _step(
    args: argparse.Namespace, step: str, *, make_dirs: bool = False
) -> tuple[list[Path], Phases]:
    """Run this party's ``step`` over the files its schedule names; the files written and
    the timed phases."""
    name = file_name(args.party)
    setup = step_config(args.config, name, step)
    run = setup.schedule
    inputs, outputs = _files(args, run, step)
    written = [p for p in outputs.values() if p is not None]
    check_outputs(args, written, [*party_inputs(args), list(inputs.values())], make_dirs=make_dirs)
    sources: dict[Message, PathLike | bytes] = dict(inputs)
    if Kind.LOCAL_COUNT in run.step(step).reads:  # from the count party's local message
        from vertimrf.driver.files import count_input

        sources.update(count_input(name, args.count_from, setup.config))
    return written, _run(args, setup, step, sources, outputs)


# What each step command wrote, said with its options ({out}, {out_dir}) and the number of
# files ({n}).
_WROTE = {
    Kind.LOCAL: "its local message {out} (give it to the server)",
    Kind.COMMIT: "its commitment {out} (give it to the server)",
    Kind.TOKENS: "its tokens {out} (give them to the server)",
    Kind.FEATURES: "{n} blob(s) to {out_dir} (the server relays them)",
    Kind.RELEASE: "{out}",
    Kind.GROUPS: "{n} round-2 blob(s) to {out_dir} (the server relays them)",
    Kind.MEASURE: "its re-measurement {out}",
    Kind.REPLY: "{n} repl(ies) to {out_dir} (the server relays them)",
    Kind.GROUP_REPLY: "{n} round-2 repl(ies) to {out_dir} (the server relays them)",
}


def cmd_party_step(args: argparse.Namespace) -> int:
    """``party STEP``: run this party's step of the command's name (its blobs for the peers
    go to --out-dir, made if missing), then say what it wrote."""
    step = Kind(args.action)
    written, ph = _step(args, step, make_dirs=getattr(args, "out_dir", None) is not None)
    size = sum(os.path.getsize(p) for p in written)
    what = _WROTE[step].format(n=len(written), **vars(args))
    print(f"{args.party}: wrote {what} ({size:,} bytes); {ph.summary()}")
    return 0


# Each party step command, by the step it runs (the step's name is the command's).
STEP_COMMANDS = dict.fromkeys(_WROTE, cmd_party_step)
