"""A party's step commands (``party local``, ``commit``, ``features``, ``release``,
``groups``, ``measure``): each runs the party's step of the same name
(:mod:`vertimrf.protocol.schedule`), its input and output messages being the command's
files, named by the schedule; the party's private state (step record, a copy of what it
sent, the shares) is the driver's, in ``--state-dir``."""

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


def _report(args: argparse.Namespace, ph: Phases, what: str, paths: list[Path]) -> None:
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{args.party}: wrote {what} ({size:,} bytes); {ph.summary()}")


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


def cmd_party_local(args: argparse.Namespace) -> int:
    """``party local``: the local message (LocMRF, binning; LocEnc for fo and fm)."""
    written, ph = _step(args, Kind.LOCAL)
    _report(args, ph, f"its local message {args.out} (give it to the server)", written)
    return 0


def cmd_party_commit(args: argparse.Namespace) -> int:
    """``party commit``: this party's data commitment, for the server's deal."""
    written, ph = _step(args, Kind.COMMIT)
    _report(args, ph, f"its commitment {args.out} (give it to the server)", written)
    return 0


def cmd_party_tokens(args: argparse.Namespace) -> int:
    """``party tokens``: partial record sets, this party's token list for the server."""
    written, ph = _step(args, Kind.TOKENS)
    _report(args, ph, f"its tokens {args.out} (give them to the server)", written)
    return 0


def cmd_party_features(args: argparse.Namespace) -> int:
    """``party features``: a masked-feature blob for each peer."""
    written, ph = _step(args, Kind.FEATURES, make_dirs=True)
    what = f"{len(written)} blob(s) to {args.out_dir} (the server relays them)"
    _report(args, ph, what, written)
    return 0


def cmd_party_release(args: argparse.Namespace) -> int:
    """``party release``: the first release (select pipeline) or the release of the binned
    cross-party pairs (paper pipeline), from the peers' feature blobs."""
    written, ph = _step(args, Kind.RELEASE)
    _report(args, ph, args.out, written)
    return 0


def cmd_party_groups(args: argparse.Namespace) -> int:
    """``party groups``: round 2, the attribute groups the request needs, for each peer."""
    written, ph = _step(args, Kind.GROUPS, make_dirs=True)
    what = f"{len(written)} round-2 blob(s) to {args.out_dir} (the server relays them)"
    _report(args, ph, what, written)
    return 0


def cmd_party_measure(args: argparse.Namespace) -> int:
    """``party measure``: the re-measurement of the marginals the server requests."""
    written, ph = _step(args, Kind.MEASURE)
    _report(args, ph, f"its re-measurement {args.out}", written)
    return 0


# Each party step command, by the step it runs (the step's name is the command's).
STEP_COMMANDS = {
    Kind.LOCAL: cmd_party_local,
    Kind.COMMIT: cmd_party_commit,
    Kind.TOKENS: cmd_party_tokens,
    Kind.FEATURES: cmd_party_features,
    Kind.RELEASE: cmd_party_release,
    Kind.GROUPS: cmd_party_groups,
    Kind.MEASURE: cmd_party_measure,
}
