"""The secure step commands of the server: ``server deal``, ``select``, and ``synthesize``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ConfigError,
)

if TYPE_CHECKING:
    from vertimrf.protocol import ProtocolConfig
from vertimrf.cli.common import (
    Phases,
    check_outputs,
    file_name,
    fingerprints,
    one_per_party,
    secure_config,
    server_key,
    staged,
    write_all,
    write_synthetic,
)


def cmd_server_deal(args: argparse.Namespace) -> int:
    from vertimrf.driver import InProcessTransport, Message, ServerDriver
    from vertimrf.protocol.channels import load_public_keys
    from vertimrf.protocol.seeds import SERVER

    cfg, plan = secure_config(args.config)
    keys = load_public_keys(args.keys)
    unknown = sorted(set(keys) - set(plan.names))
    if unknown:
        raise ConfigError(f"--keys holds keys of {unknown}, not parties of {list(plan.names)}.")
    folder = Path(args.out_dir)
    paths = {name: folder / f"{file_name(name)}.deal" for name in plan.names}
    check_outputs(args, paths.values(), [args.config, args.keys, args.server_key], make_dirs=True)
    transport = InProcessTransport()
    driver = ServerDriver(cfg, transport, public_keys=keys, keypair=server_key(args))
    driver.run_step("deal")
    deals = {name: transport.receive(Message(SERVER, name, "deal")) for name in plan.names}
    write_all({paths[name]: deal for name, deal in deals.items()})
    print("dealt to (each party checks its fingerprint):")
    print(fingerprints({name: keys[name] for name in plan.names}))
    print(f"wrote {len(deals)} sealed deals to {folder} ({sum(map(len, deals.values())):,} bytes)")
    return 0


def cmd_server_select(args: argparse.Namespace) -> int:
    from vertimrf.protocol.securemsg import SecureRelease, save_request
    from vertimrf.server.secure import SecureServer

    cfg, plan = secure_config(args.config, select_only=True)
    check_outputs(args, [args.out, args.state], [args.config, args.releases, args.server_key])
    server = SecureServer(cfg, seed=args.seed, keypair=server_key(args))
    with Phases("server select", ("read", "select", "write"), args.quiet) as ph:
        with ph("read"):
            releases = [SecureRelease.load(p, plan) for p in args.releases]
            one_per_party([r.party for r in releases], args.releases, "releases")
        with ph("select"):
            request = server.select(releases)
        with ph("write"), staged(args.out, args.state) as (request_tmp, state_tmp):
            save_request(request_tmp, cfg.config_hash(), request)
            server.save_state(state_tmp)
    cross = sum(plan.kind(m) == "cross" for m in request.marginals)
    print(
        f"server: {len(request.marginals)} marginals to re-measure ({cross} across parties, "
        f"{len(request.bins)} on bins); wrote "
        f"{args.out} (give it to every party) and {args.state} (keep it); {ph.summary()}"
    )
    return 0


def synthesize_secure(args: argparse.Namespace, cfg: ProtocolConfig, files: list[str]) -> int:
    """``server synthesize`` of method secure: from the state of ``server select``."""
    from vertimrf.protocol.securemsg import SecureRelease
    from vertimrf.server.secure import SecureServer

    if args.state is None:
        raise ConfigError("method secure needs --state (the file `vertimrf server select` wrote).")
    with Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            server = SecureServer.load_state(
                cfg, args.state, seed=args.seed, keypair=server_key(args)
            )
            releases = [SecureRelease.load(p, server.plan) for p in files]
            one_per_party([r.party for r in releases], files, "releases")
        with ph("synthesize"):
            synth = server.synthesize(releases, rows=args.n, sample_seed=args.sample_seed)
        sizes = {r.party: os.path.getsize(p) for r, p in zip(releases, files, strict=True)}
        report = server.report(seconds=dict(ph.seconds), message_bytes=sizes)
        write_synthetic(args, ph, synth, report)
    return 0
