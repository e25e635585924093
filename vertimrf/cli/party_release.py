"""``vertimrf party release`` (methods fo and fm) and ``party local`` (the paper pipeline):
a party's local message."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.errors import (
    ConfigError,
)
from vertimrf.io import read_hex_secret

if TYPE_CHECKING:
    from vertimrf.party import LocalParty
    from vertimrf.protocol import PartyMessage, ProtocolConfig
from vertimrf.cli.common import (
    check_outputs,
    file_name,
    own_key,
    party_inputs,
    read_csv,
    staged,
)
from vertimrf.cli.party_secure import release_secure, step_record

SECURE_OPTIONS = ("peers", "deal", "blobs", "ledger")


def cmd_party_release(args: argparse.Namespace) -> int:
    from vertimrf.protocol import ProtocolConfig

    cfg = ProtocolConfig.load(args.config)
    if cfg.options.PADS_ROWS:  # the secure methods
        return release_secure(args, cfg)
    given = [f"--{k}" for k in SECURE_OPTIONS if getattr(args, k) is not None]
    if given:
        raise ConfigError(
            f"{given} are options of method secure; the config's method is {cfg.method!r}."
        )
    check_outputs(args, [args.out], party_inputs(args))
    party, message = local_message(args, cfg)
    with staged(args.out) as (tmp,):
        message.save(tmp)
    print(
        f"{args.party}: wrote {args.out} ({os.path.getsize(args.out):,} bytes); "
        + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0


def local_message(args: argparse.Namespace, cfg: ProtocolConfig) -> tuple[LocalParty, PartyMessage]:
    """This party's LocMRF, binning and (fo, fm) LocEnc: the party and its message."""
    from vertimrf.party import LocalParty
    from vertimrf.protocol import PartyMessage

    names = [p.name for p in cfg.parties]
    if args.party in names and args.party != cfg.count_party and not args.count_from:
        raise ConfigError(
            f"party {args.party!r} needs the noisy count of the count party "
            f"{cfg.count_party!r}: give --count-from with {cfg.count_party!r}'s message."
        )
    party = LocalParty(
        args.party,
        read_csv(args.data),
        cfg,
        read_hex_secret(args.secret_file),
        id_column=args.id_column,
        seed=args.seed,
        local_secret=None if args.seed is not None else own_key(args).local_secret(),
        progress=False if args.quiet else None,
    )
    noisy = None
    if args.count_from:
        noisy = PartyMessage.load(args.count_from, cfg).noisy_count
        if noisy is None:
            raise ConfigError(
                f"{args.count_from} holds no noisy count: pass the message of the count party "
                f"{cfg.count_party!r}."
            )
    return party, party.release(noisy_count=noisy)


def cmd_party_local(args: argparse.Namespace) -> int:
    """``party local``: the paper pipeline's local message (LocMRF and the bin maps)."""
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.options import SecurePaperOptions, describe

    cfg = ProtocolConfig.load(args.config)
    if not isinstance(cfg.options, SecurePaperOptions):
        raise ConfigError(
            f"`party local` is the first step of method secure's paper pipeline; this config "
            f"is {describe(type(cfg.options))}: run `party features` (secure) or `party "
            "release` (fo, fm)."
        )
    name = file_name(args.party)
    steps = step_record(args, cfg.config_hash(), Path(args.out).parent)
    steps.check("local")
    check_outputs(args, [args.out], party_inputs(args), records=[steps.path])
    party, message = local_message(args, cfg)
    with staged(args.out, commit=lambda _: steps.record("local", args.out)) as (tmp,):
        message.save(tmp)
    print(
        f"{name}: wrote its local message {args.out} ({os.path.getsize(args.out):,} bytes; "
        "give it to the server, and pass it as --local to `party features` and `party "
        "release`); " + ", ".join(f"{k} {v:.2f} s" for k, v in party.timings.items())
    )
    return 0
