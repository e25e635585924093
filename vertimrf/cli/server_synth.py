"""``vertimrf server synthesize``: the synthetic table from the parties' messages (every
method)."""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ConfigError,
)

if TYPE_CHECKING:
    from vertimrf.protocol import ProtocolConfig
from vertimrf.cli.common import (
    Phases,
    check_outputs,
    one_per_party,
    server_key,
    write_synthetic,
)
from vertimrf.cli.server_steps import synthesize_secure


def cmd_server_synthesize(args: argparse.Namespace) -> int:
    from vertimrf.protocol import PartyMessage, ProtocolConfig
    from vertimrf.protocol.options import SecureOptions, SecurePaperOptions
    from vertimrf.server import PaperServer

    cfg = ProtocolConfig.load(args.config)
    files = [*args.messages, *(args.releases or [])]
    if not files:
        raise ConfigError("give the parties' message files (or --releases FILE ...).")
    check_outputs(args, [args.out, args.report], [args.config, *files, args.state, args.server_key])
    if isinstance(cfg.options, SecurePaperOptions):
        return _server_synthesize_paper(args, cfg)
    if isinstance(cfg.options, SecureOptions):
        return synthesize_secure(args, cfg, files)
    if args.state is not None:
        raise ConfigError(f"--state is for method secure; the config's method is {cfg.method!r}.")
    with Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            messages = [PartyMessage.load(p, cfg) for p in files]
            one_per_party([m.party for m in messages], files, "messages")
        with ph("synthesize"):
            synth, report = PaperServer(cfg, progress=False if args.quiet else None).synthesize(
                messages, n=args.n, seed=args.seed, sample_seed=args.sample_seed
            )
        write_synthetic(args, ph, synth, report)
    return 0


def _server_synthesize_paper(args: argparse.Namespace, cfg: ProtocolConfig) -> int:
    """``server synthesize`` of the paper pipeline: the parties' local messages (positional)
    and their secure releases of the binned cross-party pairs (``--releases``)."""
    from vertimrf.protocol import PartyMessage
    from vertimrf.protocol.secure import SecurePlan
    from vertimrf.protocol.securemsg import SecureRelease
    from vertimrf.server import PaperServer

    if args.state is not None:
        raise ConfigError("the paper pipeline has no --state (it has no `server select`).")
    if not args.messages or not args.releases:
        raise ConfigError(
            "the paper pipeline needs every party's local message (from `party local`, as "
            "positional files) and its release (from `party release`, after --releases)."
        )
    plan = SecurePlan.from_config(cfg)
    with Phases("server synthesize", ("read", "synthesize", "write"), args.quiet) as ph:
        with ph("read"):
            messages = [PartyMessage.load(p, cfg) for p in args.messages]
            releases = [SecureRelease.load(p, plan) for p in args.releases]
            one_per_party([m.party for m in messages], args.messages, "local messages")
            one_per_party([r.party for r in releases], args.releases, "releases")
        with ph("synthesize"):
            server = PaperServer(
                cfg, progress=False if args.quiet else None, keypair=server_key(args)
            )
            synth, report = server.synthesize(
                messages,
                n=args.n,
                seed=args.seed,
                secure_releases=releases,
                sample_seed=args.sample_seed,
            )
        sizes = dict.fromkeys(plan.names, 0)
        for m, path in zip(messages, args.messages, strict=True):
            sizes[m.party] += os.path.getsize(path)
        for r, path in zip(releases, args.releases, strict=True):
            sizes[r.party] += os.path.getsize(path)
        report = dataclasses.replace(report, message_bytes=sizes)
        write_synthetic(args, ph, synth, report)
    return 0
