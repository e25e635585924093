"""The server's step commands (``server deal``, ``select``, ``synthesize``): each runs one
step of the server's driver, its input and output messages being the command's files; the
select state is the driver's, in ``--state-dir``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    Phases,
    check_outputs,
    file_name,
    fingerprints,
    run_file_step,
    secure_config,
    server_key,
    write_synthetic,
)
from vertimrf.driver.transport import Message
from vertimrf.errors import ConfigError
from vertimrf.protocol.seeds import SERVER

if TYPE_CHECKING:
    from vertimrf.crypto.keys import KeyPair, PublicKey
    from vertimrf.driver.files import FileTransport, PathLike
    from vertimrf.driver.server import ServerDriver
    from vertimrf.protocol import ProtocolConfig


def _driver(
    args: argparse.Namespace,
    cfg: ProtocolConfig,
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
    from vertimrf.driver.state import default_state_dir
    from vertimrf.protocol.methods import rules

    transport = FileTransport(inputs, outputs, force=args.force)
    state_dir = None
    if state:
        state_dir = args.state_dir or default_state_dir("server") / cfg.config_hash()[:16]
    if public_keys is None and rules(cfg).secure_product:
        public_keys = {}  # select and fit read no party key (the deal does)
    driver = ServerDriver(
        cfg, transport, public_keys=public_keys, keypair=keypair,
        seed=getattr(args, "seed", None), progress=False if getattr(args, "quiet", False) else None,
        state_dir=state_dir,
    )  # fmt: skip
    return driver, transport


def cmd_server_deal(args: argparse.Namespace) -> int:
    from vertimrf.crypto.keys import load_public_keys
    from vertimrf.driver.files import route

    cfg, plan = secure_config(args.config)
    keys = load_public_keys(args.keys)
    unknown = sorted(set(keys) - set(plan.names))
    if unknown:
        raise ConfigError(f"--keys holds keys of {unknown}, not parties of {list(plan.names)}.")
    folder = Path(args.out_dir)
    deals = {Message(SERVER, n, "deal"): folder / f"{file_name(n)}.deal" for n in plan.names}
    inputs = [args.config, args.keys, args.commits, args.server_key]
    check_outputs(args, deals.values(), inputs, make_dirs=True)
    commits = route(args.commits, "commit", cfg, what="commits")
    driver, transport = _driver(
        args, cfg, commits, deals, keypair=server_key(args), public_keys=keys
    )
    with Phases("server deal", ("deal", "write"), True) as ph:
        run_file_step(driver, transport, "deal", ph)
    print("dealt to (each party checks its fingerprint):")
    print(fingerprints({name: keys[name] for name in plan.names}))
    size = sum(os.path.getsize(p) for p in deals.values())
    print(f"wrote {len(deals)} sealed deals to {folder} ({size:,} bytes)")
    return 0


def cmd_server_select(args: argparse.Namespace) -> int:
    from vertimrf.driver.files import route

    cfg, plan = secure_config(args.config, select_only=True)
    folder = Path(args.group_deals)
    deals = {
        Message(SERVER, n, "group-deal"): folder / f"{file_name(n)}.group-deal" for n in plan.names
    }
    outputs = [args.out, *deals.values()]
    inputs = [args.config, args.releases, args.server_key, args.keys]
    check_outputs(args, outputs, inputs, make_dirs=True)
    releases = route(args.releases, "select", cfg, what="releases")
    requests = {Message(SERVER, n, "request"): args.out for n in plan.names}
    keys = None
    if args.keys:
        from vertimrf.crypto.keys import load_public_keys

        keys = load_public_keys(args.keys)
    elif cfg.identities is not None:
        keys = cfg.public_keys()
    driver, transport = _driver(
        args, cfg, releases, {**requests, **deals}, keypair=server_key(args),
        public_keys=keys, state=True,
    )  # fmt: skip
    try:
        with Phases("server select", ("select", "write"), args.quiet) as ph:
            run_file_step(driver, transport, "select", ph)
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


def cmd_server_synthesize(args: argparse.Namespace) -> int:
    """``server synthesize``: the server's fit on the parties' messages, then the sample."""
    from vertimrf.driver.files import route
    from vertimrf.protocol.factory import load_config
    from vertimrf.protocol.methods import rules
    from vertimrf.protocol.options import SecurePaperOptions
    from vertimrf.synth.table_file import check_table_file

    cfg = load_config(args.config)
    kind = rules(cfg)
    check_outputs(args, [args.out, args.report],
                  [args.config, *args.messages, args.releases, args.server_key])  # fmt: skip
    check_table_file(args.out, cfg.spec)
    if kind.selects:  # the re-measurements, from the state of `server select`
        if args.messages and args.releases:
            raise ConfigError("give the parties' re-measurements once (--releases FILE ...).")
        files = list(args.messages or args.releases or [])
        inputs = route(files, "measure", cfg, what="releases")
    elif isinstance(cfg.options, SecurePaperOptions):
        if args.state_dir is not None:
            raise ConfigError("the paper pipeline has no --state (it has no `server select`).")
        if not args.messages or not args.releases:
            raise ConfigError(
                "the paper pipeline needs every party's local message (from `party local`, as "
                "positional files) and its release (from `party release`, after --releases)."
            )
        inputs = {**route(args.messages, "local", cfg, what="local messages"),
                  **route(args.releases, "cross", cfg, what="releases")}  # fmt: skip
    else:
        if args.state_dir is not None:
            raise ConfigError(
                f"--state is for method secure; the config's method is {cfg.method!r}."
            )
        files = [*args.messages, *(args.releases or [])]
        inputs = route(files, "local", cfg, what="messages")
    if not inputs:
        raise ConfigError("give the parties' message files (or --releases FILE ...).")
    keypair = server_key(args) if kind.secure_product or args.server_key else None
    driver, transport = _driver(args, cfg, inputs, {}, keypair=keypair, state=kind.selects)
    try:
        with Phases("server synthesize", ("synthesize", "write", "sample"), args.quiet) as ph:
            run_file_step(driver, transport, "fit", ph)
            sizes = dict.fromkeys((p.name for p in cfg.parties), 0)
            for message, path in inputs.items():
                sizes[message.sender] += os.path.getsize(path)
            model = driver.fitted(seconds=dict(ph.seconds), message_bytes=sizes)
            write_synthetic(args, ph, model, args.n, args.sample_seed)
    finally:
        _close(driver)
    return 0
