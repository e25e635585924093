"""The server's step commands (``server deal``, ``select``, ``synthesize``): each runs the
server's step of the same name (:mod:`vertimrf.protocol.schedule`), its input and output
messages being the command's files; the select state is the driver's, in ``--state-dir``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    Phases,
    check_outputs,
    fingerprints,
    run_file_step,
    run_state_dir,
    server_key,
    step_config,
    write_synthetic,
)
from vertimrf.errors import ConfigError
from vertimrf.protocol.schedule import SYNTHESIZE, Kind, Message
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.crypto.keys import KeyPair, PublicKey
    from vertimrf.driver.files import FileTransport, PathLike
    from vertimrf.driver.server import ServerDriver
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.schedule import Schedule
    from vertimrf.protocol.setup import RunSetup


def _driver(
    args: argparse.Namespace,
    setup: RunSetup,
    inputs: Mapping[Message, PathLike],
    outputs: Mapping[Message, PathLike],
    *,
    keypair: KeyPair | None,
    public_keys: Mapping[str, PublicKey] | None = None,
    state: bool = False,
) -> tuple[ServerDriver, FileTransport]:
    """The server's driver over the command's files (its state in --state-dir when
    ``state``), and the transport."""
    from vertimrf.driver.files import FileTransport
    from vertimrf.driver.server import ServerDriver

    transport = FileTransport(inputs, outputs, force=args.force)
    state_dir = run_state_dir(args, SERVER, setup.config) if state else None
    if public_keys is None and setup.schedule.takes(Kind.DEAL, SERVER):
        public_keys = {}  # select and synthesize read no party key (the deal does)
    driver = ServerDriver(
        setup, transport, public_keys=public_keys, keypair=keypair,
        seed=getattr(args, "seed", None), progress=False if getattr(args, "quiet", False) else None,
        state_dir=state_dir,
    )  # fmt: skip
    return driver, transport


def _dealing(
    args: argparse.Namespace, step: str
) -> tuple[RunSetup, dict[str, PublicKey], dict[Message, Path], dict[Message, Path]]:
    """``server admit``'s and ``server deal``'s setup, the parties' public keys, the step's
    files for each party in --out-dir (checked) and the parties' commits it reads."""
    from vertimrf.driver.files import route

    setup = step_config(args.config, SERVER, step)
    keys = _party_keys(args.keys, setup)
    folder = Path(args.out_dir)
    outputs = {m: folder / m.step_file_name for m in setup.schedule.sends(step, SERVER)}
    inputs = [args.config, args.keys, args.commits, args.server_key]
    check_outputs(args, outputs.values(), inputs, make_dirs=True)
    return setup, keys, outputs, route(args.commits, Kind.COMMIT, setup.config, what="commits")


def cmd_server_admit(args: argparse.Namespace) -> int:
    """``server admit``: partial record sets, the digest of every party's commitment, one
    file per party (NAME.admit)."""
    setup, keys, admits, commits = _dealing(args, Kind.ADMIT)
    driver, transport = _driver(
        args, setup, commits, admits, keypair=server_key(args), public_keys=keys
    )
    with Phases("server admit", ("admit", "write"), True) as ph:
        run_file_step(driver, transport, Kind.ADMIT, ph)
    folder = Path(args.out_dir)
    print(f"wrote {len(admits)} admit files to {folder} (give each party its NAME.admit)")
    return 0


def _party_keys(paths: list[str] | None, setup: RunSetup) -> dict[str, PublicKey]:
    """The parties' public keys: the config's pins, else the files ``paths``
    (:meth:`~vertimrf.protocol.setup.RunSetup.keys`); ConfigError with neither."""
    from vertimrf.crypto.keys import load_public_keys

    keys = setup.keys(SERVER, given=load_public_keys(paths) if paths else None)
    if keys is None:
        raise ConfigError("give --keys, every party's public key (or pin them in the config).")
    return keys


def cmd_server_deal(args: argparse.Namespace) -> int:
    from vertimrf.driver.files import route

    setup, keys, deals, commits = _dealing(args, Kind.DEAL)
    run = setup.schedule
    partial = run.step(Kind.DEAL).reads != (Kind.COMMIT,)  # it reads tokens, keeps region counts
    if partial:
        if not args.tokens:
            raise ConfigError("with partial record sets `server deal` needs --tokens.")
        commits.update(route(args.tokens, Kind.TOKENS, setup.config, what="tokens"))
    elif args.tokens:
        raise ConfigError("--tokens belongs to runs with partial record sets.")
    driver, transport = _driver(
        args, setup, commits, deals, keypair=server_key(args), public_keys=keys, state=partial
    )
    with Phases("server deal", ("deal", "write"), True) as ph:
        run_file_step(driver, transport, Kind.DEAL, ph)
    print("dealt to (each party checks its fingerprint):")
    print(fingerprints({name: keys[name] for name in run.names}))
    size = sum(os.path.getsize(p) for p in deals.values())
    what = "sealed deals and slot maps" if partial else "sealed deals"
    print(f"wrote {len(deals)} {what} to {Path(args.out_dir)} ({size:,} bytes)")
    return 0


def cmd_server_select(args: argparse.Namespace) -> int:
    from vertimrf.driver.files import route

    setup = step_config(args.config, SERVER, Kind.SELECT)
    cfg, run = setup.config, setup.schedule
    folder = Path(args.select_deals)
    sent = run.sends(Kind.SELECT, SERVER)
    deals = {m: folder / m.step_file_name for m in sent if m.kind == Kind.SELECT_DEAL}
    outputs = [args.out, *deals.values()]
    inputs = [args.config, args.releases, args.server_key, args.keys]
    check_outputs(args, outputs, inputs, make_dirs=True)
    releases = route(args.releases, Kind.RELEASE, cfg, what="releases")
    requests = {m: args.out for m in sent if m.kind == Kind.SELECT}
    keys = _party_keys(args.keys, setup) if args.keys or cfg.identities else None
    driver, transport = _driver(
        args, setup, releases, {**requests, **deals}, keypair=server_key(args),
        public_keys=keys, state=True,
    )  # fmt: skip
    try:
        with Phases("server select", ("select", "write"), args.quiet) as ph:
            run_file_step(driver, transport, Kind.SELECT, ph)
    finally:
        _close(driver)
    assert driver.state is not None
    print(
        f"server: wrote {args.out} (the marginals to re-measure: give it to every party) and "
        f"the round-2 deals in {folder} (each to its party); its "
        f"select state is in {driver.state.path.parent}; {ph.summary()}"
    )
    return 0


def _close(driver: ServerDriver) -> None:
    if driver.state is not None:
        driver.state.close()


def _synthesize_inputs(args: argparse.Namespace, cfg: ProtocolConfig, run: Schedule) -> dict:
    """The messages ``server synthesize`` reads, by the kinds its step reads: with one kind,
    every file given; with two (the paper pipeline's local messages and releases), the
    positional files and those after --releases."""
    from vertimrf.driver.files import route

    reads = run.step(SYNTHESIZE).reads
    if not run.takes(Kind.SELECT, SERVER) and args.state_dir is not None:
        raise ConfigError(
            f"--state is for the secure select pipeline (its `server select` keeps it); the "
            f"config's method is {run.method}."
        )
    if len(reads) == 1:
        if args.messages and args.releases and reads[0] == Kind.MEASURE:
            raise ConfigError("give the parties' re-measurements once (--releases FILE ...).")
        files = [*args.messages, *(args.releases or [])]
        return route(files, reads[0], cfg, what="messages")
    if not args.messages or not args.releases:
        raise ConfigError(
            "the paper pipeline needs every party's local message (from `party local`, as "
            "positional files) and its release (from `party release`, after --releases)."
        )
    local, release = reads
    return {**route(args.messages, local, cfg, what="local messages"),
            **route(args.releases, release, cfg, what="releases")}  # fmt: skip


def cmd_server_synthesize(args: argparse.Namespace) -> int:
    """``server synthesize``: the server's fit on the parties' messages, then the sample."""
    from vertimrf.synth.table_file import check_table_file

    setup = step_config(args.config, SERVER, SYNTHESIZE)
    cfg, run = setup.config, setup.schedule
    check_outputs(args, [args.out, args.report],
                  [args.config, *args.messages, args.releases, args.server_key])  # fmt: skip
    check_table_file(args.out, cfg.spec)
    inputs = _synthesize_inputs(args, cfg, run)
    if not inputs:
        raise ConfigError("give the parties' message files (or --releases FILE ...).")
    return _fit_and_write(args, setup, run, inputs, "server synthesize")


def cmd_server_refit(args: argparse.Namespace) -> int:
    """``server refit``: the select pipeline's fit again from a stored run (its select
    state and the re-measurements in its inbox) on a smaller model, then the sample: the
    server's noise derives from its key and the releases, so nothing is drawn or charged
    again."""
    from vertimrf.synth.table_file import check_table_file

    setup = step_config(args.config, SERVER, SYNTHESIZE)
    cfg, run = setup.config, setup.schedule
    if not run.takes(Kind.SELECT, SERVER):
        raise ConfigError(
            f"`server refit` refits method secure's select pipeline; the config's method is "
            f"{run.method}: run `server synthesize` again instead."
        )
    if args.model_cells is not None and args.model_cells < 1:
        raise ConfigError(f"--model-cells must be a positive integer; got {args.model_cells}.")
    state_dir = run_state_dir(args, SERVER, cfg)
    args.state_dir = str(state_dir)
    inbox = Path(args.inbox) if args.inbox else state_dir / "messages" / SERVER
    inputs = {m: inbox / m.file_name for m in run.inputs(SYNTHESIZE, SERVER)}
    missing = [str(path) for path in inputs.values() if not path.is_file()]
    if missing:
        raise ConfigError(
            f"{missing[0]}: no such re-measurement; give --inbox, the folder where the run's "
            "server received the parties' messages (`server run --inbox`; over HTTPS its "
            "--state-dir's messages/server)."
        )
    check_outputs(args, [args.out, args.report], [args.config, args.server_key])
    check_table_file(args.out, cfg.spec)
    return _fit_and_write(args, setup, run, inputs, "server refit", refit=args.model_cells or 0)


def _fit_and_write(
    args: argparse.Namespace,
    setup: RunSetup,
    run: Schedule,
    inputs: Mapping[Message, PathLike],
    command: str,
    refit: int | None = None,
) -> int:
    """The server's synthesize step on the ``inputs`` (a refit's model at most ``refit``
    cells, 0: half the selection's), then the synthetic table and report written."""
    dealt = run.takes(Kind.DEAL, SERVER)
    keypair = server_key(args) if dealt or args.server_key else None
    selects = run.takes(Kind.SELECT, SERVER)
    cfg = setup.config
    driver, transport = _driver(args, setup, inputs, {}, keypair=keypair, state=selects)
    driver.refit = refit
    try:
        with Phases(command, ("synthesize", "write", "sample"), args.quiet) as ph:
            run_file_step(driver, transport, SYNTHESIZE, ph)
            sizes = dict.fromkeys((p.name for p in cfg.parties), 0)
            for message, path in inputs.items():
                sizes[message.sender] += os.path.getsize(path)
            model = driver.fitted(seconds=dict(ph.seconds), message_bytes=sizes)
            write_synthetic(args, ph, model, args.n, args.sample_seed)
    finally:
        _close(driver)
    return 0


# Each server step command, by the step it runs (the step's name is the command's).
STEP_COMMANDS = {
    Kind.ADMIT: cmd_server_admit,
    Kind.DEAL: cmd_server_deal,
    Kind.SELECT: cmd_server_select,
    SYNTHESIZE: cmd_server_synthesize,
}
