"""``vertimrf party run`` and ``vertimrf server run``: all of a role's steps in one command.

The role's driver runs over a transport built from the command's options by
:func:`party_transport` / :func:`server_transport` (today the directory transport: an inbox
and an outbox folder); everything else is shared by every transport.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vertimrf.cli.common import (
    Phases,
    check_outputs,
    file_name,
    force_arg,
    own_key,
    read_csv,
    server_key,
    write_synthetic,
)
from vertimrf.driver.transport import DirectoryTransport, Transport
from vertimrf.errors import ConfigError
from vertimrf.io import read_hex_secret


def _directory_transport(args: argparse.Namespace) -> Transport:
    """The directory transport of ``--inbox`` and ``--outbox``."""
    if args.inbox is None or args.outbox is None:
        raise ConfigError(
            "give --inbox DIR (this role's inbox) and --outbox DIR (a folder per receiver)."
        )
    return DirectoryTransport(args.inbox, args.outbox, timeout=args.timeout)


def party_transport(args: argparse.Namespace) -> Transport:
    """The party's transport, from its options."""
    return _directory_transport(args)


def server_transport(args: argparse.Namespace) -> Transport:
    """The server's transport, from its options."""
    return _directory_transport(args)


def _progress(args: argparse.Namespace) -> bool | None:
    """Progress bars on a terminal, unless --quiet."""
    return False if args.quiet else None


def cmd_party_run(args: argparse.Namespace) -> int:
    from vertimrf.driver.party import PartyDriver
    from vertimrf.driver.state import default_state_dir
    from vertimrf.party.roles import Party
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.channels import load_public_keys

    cfg = ProtocolConfig.load(args.config)
    names = [p.name for p in cfg.parties]
    if args.party not in names:
        raise ConfigError(f"--name {args.party!r} is not a party of the config ({names}).")
    name = file_name(args.party)
    peers = load_public_keys(args.peers) if args.peers else None
    if peers is not None and name in peers:
        raise ConfigError(f"--peers lists {name!r}'s own public key; list the other parties'.")
    transport = party_transport(args)
    party = Party(
        name, read_csv(args.data), cfg, read_hex_secret(args.secret_file), keypair=own_key(args),
        peers=peers, id_column=args.id_column, seed=args.seed, progress=_progress(args),
    )  # fmt: skip
    state_dir = Path(args.state_dir) if args.state_dir else default_state_dir(name)
    driver = PartyDriver(party, transport, state_dir=state_dir)
    driver.run(progress=_progress(args))
    print(
        f"{name}: ran {', '.join(driver.done)}; sent {driver.sent_bytes:,} bytes; its private "
        f"state is in {state_dir}"
    )
    return 0


def _public_keys(args: argparse.Namespace, names: list[str]) -> dict:
    """Every party's public key: ``--keys`` files, or ``--keys-dir DIR/NAME.pub``."""
    from vertimrf.protocol.channels import load_public_keys

    if args.keys and args.keys_dir:
        raise ConfigError("give --keys FILE ... or --keys-dir DIR, not both.")
    paths = args.keys or [Path(args.keys_dir) / f"{file_name(n)}.pub" for n in names]
    keys = load_public_keys(paths)
    missing = sorted(set(names) - set(keys))
    unknown = sorted(set(keys) - set(names))
    if missing or unknown:
        raise ConfigError(
            f"give one public key of each party {names} (missing {missing}, not parties {unknown})."
        )
    return keys


def cmd_server_run(args: argparse.Namespace) -> int:
    from vertimrf.driver.server import ServerDriver
    from vertimrf.driver.state import default_state_dir
    from vertimrf.protocol import ProtocolConfig
    from vertimrf.protocol.methods import rules

    cfg = ProtocolConfig.load(args.config)
    names = [p.name for p in cfg.parties]
    check_outputs(
        args, [args.out, args.report], [args.config, args.server_key, args.keys, args.keys_dir]
    )
    secure = rules(cfg).secure_product
    keys = _public_keys(args, names) if secure or args.keys or args.keys_dir else None
    keypair = server_key(args) if secure or args.server_key else None
    state_dir = args.state_dir or default_state_dir("server") / cfg.config_hash()[:16]
    transport = server_transport(args)
    driver = ServerDriver(
        cfg, transport, public_keys=keys, keypair=keypair, seed=args.seed,
        progress=_progress(args), state_dir=state_dir,
    )  # fmt: skip
    try:
        driver.run(progress=_progress(args))
    finally:
        if driver.state is not None:
            driver.state.close()
    with Phases("server run", ("sample", "write"), args.quiet) as ph:
        with ph("sample"):
            model = driver.fitted()
            synth = model.sample()
        write_synthetic(args, ph, synth, model.report)
    return 0


def _transport_args(p: argparse.ArgumentParser) -> None:
    """The directory transport's options (another transport adds its own)."""
    p.add_argument("--inbox", default=None, help="this role's inbox folder")
    p.add_argument("--outbox", default=None, help="the outbox (a folder per receiver)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for each message")


def _state_arg(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument(
        "--state-dir",
        default=None,
        help=f"this role's private run state (default: {default}; a re-run resumes from it "
        "and resends what it sent)",
    )


def add_party_run(psub: argparse._SubParsersAction) -> None:
    """The `party run` command."""
    run = psub.add_parser(
        "run",
        help="run all of a party's steps",
        description="Run every step of this party in the run the config names, waiting for "
        "each message it needs (--timeout seconds) in its inbox and writing what it sends to "
        "the outbox (OUTBOX/RECEIVER/). Its private state (the step record, a copy of what "
        "it sent, the shares) lives in --state-dir: a re-run resumes, resends the very bytes "
        "and spends nothing new; another data file in the same run is refused.",
    )
    run.add_argument("--config", required=True, help="the shared protocol config")
    run.add_argument("--party", "--name", dest="party", required=True, help="this party's name")
    run.add_argument("--data", required=True, help="CSV with the ID column and own columns")
    run.add_argument("--id-column", default="id", help="record-ID column (default 'id')")
    run.add_argument(
        "--secret-file", "--secret", dest="secret_file", required=True, help="the group secret"
    )
    run.add_argument(
        "--keys", default=None, help="this party's NAME.key (its noise derives from it)"
    )
    run.add_argument("--peers", nargs="+", default=None, help="secure: the peers' public keys")
    _transport_args(run)
    _state_arg(run, "$XDG_STATE_HOME/vertimrf/NAME, else ~/.local/state/vertimrf/NAME")
    run.add_argument("--seed", type=int, default=None, help="seed (experiments only)")
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.set_defaults(func=cmd_party_run)


def add_server_run(ssub: argparse._SubParsersAction) -> None:
    """The `server run` command."""
    run = ssub.add_parser(
        "run",
        help="run all of the server's steps and write the synthetic CSV",
        description="Run every step of the server (deal, select, fit, as the method has), "
        "waiting for each party's messages in its inbox and writing what it sends to the "
        "outbox (OUTBOX/PARTY/); then write the synthetic CSV and the report. Its run state "
        "(what each step received and sent) lives in --state-dir: a restarted server resumes.",
    )
    run.add_argument("--config", required=True, help="the shared protocol config")
    run.add_argument("--keys", nargs="+", default=None, help="secure: every party's public key")
    run.add_argument("--keys-dir", default=None, help="secure: a folder with NAME.pub per party")
    run.add_argument(
        "--server-key",
        default=None,
        help="the server's NAME.key (secure: its deal and noise derive from it)",
    )
    run.add_argument("--out", required=True, help="synthetic CSV to write")
    run.add_argument("--report", default=None, help="also write the report as JSON")
    _transport_args(run)
    _state_arg(run, "$XDG_STATE_HOME/vertimrf/server/HASH, else ~/.local/state/...")
    run.add_argument(
        "--seed", type=int, default=None, help="run seed: seeds the DP noise (experiments only)"
    )
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(run)
    run.set_defaults(func=cmd_server_run)
