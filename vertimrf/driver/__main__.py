"""``python -m vertimrf.driver party|server ...``: one role in its own process, over the
directory transport (inbox and outbox folders), running all of its steps.

A small entry point for tests and air-gapped sites until the command line wraps the
drivers; each role waits up to ``--timeout`` seconds for each message it needs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from vertimrf.driver.party import PartyDriver, read_table
from vertimrf.driver.server import ServerDriver
from vertimrf.driver.transport import DirectoryTransport
from vertimrf.errors import VertimrfError
from vertimrf.io import atomic_write_text, read_hex_secret
from vertimrf.party.roles import Party
from vertimrf.protocol.channels import KeyPair, load_public_keys
from vertimrf.protocol.config import ProtocolConfig


def _party(args: argparse.Namespace, transport: DirectoryTransport) -> None:
    cfg = ProtocolConfig.load(args.config)
    keypair = None if args.keys is None else KeyPair.load(args.keys)
    peers = load_public_keys(args.peers) if args.peers else None
    if cfg.identities is not None and keypair is not None:  # pinned: the peers' keys too
        cfg.check_keypair(keypair)
        peers = {n: k for n, k in cfg.public_keys().items() if n not in (args.name, "server")}
    party = Party(  # the table is not kept here: the party keeps only what it needs
        args.name, read_table(args.data), cfg, read_hex_secret(args.secret), keypair=keypair,
        peers=peers, id_column=args.id_column,
        seed=args.seed, progress=False,
    )  # fmt: skip
    PartyDriver(party, transport, state_dir=args.state).run()


def _server(args: argparse.Namespace, transport: DirectoryTransport) -> None:
    cfg = ProtocolConfig.load(args.config)
    keypair = None if args.server_key is None else KeyPair.load(args.server_key)
    driver = ServerDriver(
        cfg, transport, public_keys=load_public_keys(args.keys) if args.keys else None,
        keypair=keypair, seed=args.seed, progress=False, state_dir=args.state,
    )  # fmt: skip
    driver.run()
    model = driver.fitted()
    atomic_write_text(args.out, model.sample().to_csv(index=False))
    if args.report is not None:
        atomic_write_text(args.report, json.dumps(model.report.to_dict(), indent=2) + "\n")
    if driver.state is not None:
        driver.state.close()


def build_parser() -> argparse.ArgumentParser:
    """The entry point's arguments."""
    parser = argparse.ArgumentParser(prog="python -m vertimrf.driver")
    sub = parser.add_subparsers(dest="role", required=True)
    party = sub.add_parser("party", help="run a party's steps")
    server = sub.add_parser("server", help="run the server's steps and write the synthetic CSV")
    for p in (party, server):
        p.add_argument("--config", required=True)
        p.add_argument("--inbox", required=True, help="this role's inbox folder")
        p.add_argument("--outbox", required=True, help="the outbox (a folder per receiver)")
        p.add_argument("--timeout", type=float, default=600.0, help="seconds per message")
        p.add_argument("--seed", type=int, default=None, help="experiments only")
    party.add_argument("--name", required=True)
    party.add_argument("--data", required=True, help="the party's CSV")
    party.add_argument("--id-column", default="id")
    party.add_argument("--secret", required=True, help="the group secret (hex file)")
    party.add_argument("--keys", help="this party's key pair (method secure)")
    party.add_argument("--peers", nargs="*", default=[], help="the peers' public keys")
    party.add_argument("--state", help="this party's private state folder")
    server.add_argument("--keys", nargs="*", default=[], help="every party's public key")
    server.add_argument("--server-key", help="the server's key pair")
    server.add_argument("--out", required=True, help="the synthetic CSV")
    server.add_argument("--report", help="the report's JSON")
    server.add_argument("--state", help="the server's run state folder (a restart resumes)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one role; exit 2 with one line on a vertimrf error."""
    args = build_parser().parse_args(argv)
    transport = DirectoryTransport(args.inbox, args.outbox, timeout=args.timeout)
    try:
        (_party if args.role == "party" else _server)(args, transport)
    except VertimrfError as exc:
        print(f"vertimrf.driver: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
