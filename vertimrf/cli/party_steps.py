"""A party's step commands (``party local``, ``commit``, ``features``, ``release``,
``groups``, ``measure``): each
runs one step of the party's driver, its input and output messages being the command's
files; the party's private state (step record, a copy of what it sent, the shares) is the
driver's, in ``--state-dir``."""

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
    secure_config,
)
from vertimrf.driver.transport import Message
from vertimrf.errors import ConfigError
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.driver.files import PathLike
    from vertimrf.protocol import ProtocolConfig


def _run(
    args: argparse.Namespace,
    cfg: ProtocolConfig,
    step: str,
    inputs: Mapping[Message, PathLike | bytes],
    outputs: Mapping[Message, PathLike | None],
    *,
    stateless: bool = False,
) -> Phases:
    """Run this party's ``step`` over the files; with ``stateless`` (fo and fm without
    --state-dir) the party keeps no state. Returns the timed phases."""
    from vertimrf.driver.files import FileTransport, secure_limits
    from vertimrf.driver.party import PartyDriver
    from vertimrf.driver.state import default_state_dir
    from vertimrf.protocol.methods import secure_plan

    name = file_name(args.party)
    secure = bool(cfg.options.PADS_ROWS)
    limits = secure_limits(secure_plan(cfg)) if secure else None
    transport = FileTransport(inputs, outputs, force=args.force, limits=limits)
    if args.state_dir is not None:
        state_dir: Path | None = Path(args.state_dir)
    else:
        state_dir = None if stateless else default_state_dir(name)
    with (
        Phases(f"{name} {step}", ("read", step, "write"), args.quiet) as ph,
        dask_client(args) as client,
    ):
        with ph("read"):
            keypair = own_key(args) if args.keys is not None or args.seed is None else None
            quiet = False if args.quiet else None
            party = party_role(args, cfg, keypair, progress=quiet, client=client)
            driver = PartyDriver(party, transport, state_dir=state_dir)
        run_file_step(driver, transport, step, ph)
    return ph


def _report(args: argparse.Namespace, ph: Phases, what: str, paths: list[Path]) -> None:
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{args.party}: wrote {what} ({size:,} bytes); {ph.summary()}")


def _local_step(args: argparse.Namespace, cfg: ProtocolConfig, *, stateless: bool) -> Phases:
    """The local release (LocMRF, binning; LocEnc for fo and fm) to ``--out``."""
    from vertimrf.driver.files import count_input

    name = file_name(args.party)
    check_outputs(args, [args.out], party_inputs(args))
    inputs = count_input(name, args.count_from, cfg)
    outputs: dict[Message, PathLike | None] = {Message(name, SERVER, "local"): args.out}
    if name == cfg.count_party:  # the count travels in the local message itself
        peers = [p.name for p in cfg.parties if p.name != name]
        outputs.update({Message(name, q, "count"): None for q in peers})
    return _run(args, cfg, "release", inputs, outputs, stateless=stateless)


def cmd_party_release(args: argparse.Namespace) -> int:
    """``party release``: fo and fm, the local message; secure, the first release."""
    from vertimrf.protocol.factory import load_config

    cfg = load_config(args.config)
    if cfg.options.PADS_ROWS:  # the secure methods
        return _release_secure(args, cfg)
    given = [f"--{k}" for k in ("peers", "deal", "blobs") if getattr(args, k) is not None]
    if given:
        raise ConfigError(
            f"{given} are options of method secure; the config's method is {cfg.method!r}."
        )
    ph = _local_step(args, cfg, stateless=True)
    _report(args, ph, args.out, [Path(args.out)])
    return 0


def cmd_party_local(args: argparse.Namespace) -> int:
    """``party local``: the paper pipeline's local message (LocMRF and the bin maps)."""
    from vertimrf.protocol.factory import load_config
    from vertimrf.protocol.options import SecurePaperOptions, describe

    cfg = load_config(args.config)
    if not isinstance(cfg.options, SecurePaperOptions):
        raise ConfigError(
            f"`party local` is the first step of method secure's paper pipeline; this config "
            f"is {describe(type(cfg.options))}: run `party features` (secure) or `party "
            "release` (fo, fm)."
        )
    ph = _local_step(args, cfg, stateless=False)
    _report(args, ph, f"its local message {args.out} (give it to the server)", [Path(args.out)])
    return 0


def cmd_party_commit(args: argparse.Namespace) -> int:
    """``party commit``: this party's data commitment, for the server's deal."""
    cfg, _ = secure_config(args.config)
    name = file_name(args.party)
    check_outputs(args, [args.out], party_inputs(args))
    ph = _run(args, cfg, "commit", {}, {Message(name, SERVER, "commit"): args.out})
    _report(args, ph, f"its commitment {args.out} (give it to the server)", [Path(args.out)])
    return 0


def cmd_party_features(args: argparse.Namespace) -> int:
    cfg, plan = secure_config(args.config)
    name = file_name(args.party)
    blobs = {Message(name, q, "blob"): Path(args.out_dir) / f"{name}-to-{q}.blob"
             for q in plan.names if q != name}  # fmt: skip
    check_outputs(args, blobs.values(), party_inputs(args), make_dirs=True)
    ph = _run(args, cfg, "features", {Message(SERVER, name, "deal"): args.deal}, blobs)
    what = f"{len(blobs)} feature blob(s) to {args.out_dir} (the server relays them)"
    _report(args, ph, what, list(blobs.values()))
    return 0


def _release_secure(args: argparse.Namespace, cfg: ProtocolConfig) -> int:
    """``party release`` of method secure: the first release (select pipeline) or the
    release of the binned cross-party pairs (paper pipeline), from the peers' blobs."""
    from vertimrf.protocol.methods import secure_plan

    plan = secure_plan(cfg)
    missing = [f"--{n}" for n in ("keys", "peers", "deal", "blobs") if getattr(args, n) is None]
    if missing:
        raise ConfigError(f"method secure needs {missing} for this command.")
    if args.count_from:
        raise ConfigError(
            "method secure takes no --count-from: the count party's noisy count goes to the "
            "server in its own release."
        )
    name = file_name(args.party)
    blobs = {Message(q, name, "blob"): Path(args.blobs) / f"{q}-to-{name}.blob"
             for q in plan.names if q != name}  # fmt: skip
    check_outputs(args, [args.out], [*party_inputs(args), list(blobs.values())])
    step, kind = ("release", "select") if plan.select else ("cross release", "cross")
    inputs = {**blobs, Message(SERVER, name, "deal"): args.deal}
    ph = _run(args, cfg, step, inputs, {Message(name, SERVER, kind): args.out})
    _report(args, ph, args.out, [Path(args.out)])
    return 0


def _round2_inputs(args: argparse.Namespace, name: str) -> dict[Message, Path]:
    return {
        Message(SERVER, name, "request"): Path(args.request),
        Message(SERVER, name, "group-deal"): Path(args.group_deal),
        Message(SERVER, name, "deal"): Path(args.deal),
    }


def cmd_party_groups(args: argparse.Namespace) -> int:
    cfg, plan = secure_config(args.config, select_only=True)
    name = file_name(args.party)
    blobs = {Message(name, q, "group-blob"): Path(args.out_dir) / f"{name}-to-{q}.group-blob"
             for q in plan.names if q != name}  # fmt: skip
    inputs = _round2_inputs(args, name)
    check_outputs(args, blobs.values(), [*party_inputs(args), args.group_deal], make_dirs=True)
    ph = _run(args, cfg, "groups", inputs, blobs)
    what = f"{len(blobs)} round-2 blob(s) to {args.out_dir} (the server relays them)"
    _report(args, ph, what, list(blobs.values()))
    return 0


def cmd_party_measure(args: argparse.Namespace) -> int:
    cfg, plan = secure_config(args.config, select_only=True)
    missing = [
        f"--{n.replace('_', '-')}" for n in ("blobs", "group_deal") if getattr(args, n) is None
    ]
    if missing:
        raise ConfigError(f"party measure needs {missing}.")
    name = file_name(args.party)
    folder = Path(args.blobs)
    blobs = {
        Message(q, name, kind): folder / f"{q}-to-{name}.{kind}"
        for q in plan.names
        if q != name
        for kind in ("blob", "group-blob")
    }
    check_outputs(args, [args.out], [*party_inputs(args), args.group_deal, list(blobs.values())])
    inputs = {**_round2_inputs(args, name), **blobs}
    ph = _run(args, cfg, "measure", inputs, {Message(name, SERVER, "measure"): args.out})
    _report(args, ph, f"its re-measurement {args.out}", [Path(args.out)])
    return 0
