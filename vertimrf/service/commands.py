"""The network commands, each an ``add_arguments(parser)`` and a ``run(args) -> int``:

* ``server run --config C --listen HOST:PORT --state-dir DIR --keys server.key
  [--party-timeout S] [--out synth.csv] [--report r.json] [--exit-when-done]
  [--port-file F] [--seed N]``: the service (port 0: an ephemeral port, written to
  ``--port-file``);
* ``party run --server URL --config C --data A.csv --keys A.key --secret A.secret
  [--state-dir DIR] [--id-column id] [--timeout S] [--seed N]``: all of a party's steps
  over the service (its private state in ``--state-dir``, by default
  ``$XDG_STATE_HOME/vertimrf/<party>``, i.e. ``~/.local/state/vertimrf/<party>``);
* ``status --server URL --config C --keys A.key``: the run's state and each party's bytes
  (any pinned party's key file: the service serves only the run's parties).

The config must pin every role's identity (:mod:`vertimrf.service.tls` says how keys are
made and compared); ``--seed`` is for experiments only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

from aiohttp import web

from vertimrf.driver.party import PartyDriver, read_table
from vertimrf.errors import ConfigError, ServiceError
from vertimrf.io import atomic_write_text, read_hex_secret
from vertimrf.party.roles import Party
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.seeds import SERVER
from vertimrf.service.app import make_app
from vertimrf.service.client import HttpTransport
from vertimrf.service.runner import ServiceRun
from vertimrf.service.store import MessageStore
from vertimrf.service.tls import client_context, server_context

GRACE = 1.0  # seconds the service keeps serving after the run ends (--exit-when-done)


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host or int(port) > 65535:
        raise ConfigError(f"--listen {text!r}: give HOST:PORT, e.g. 0.0.0.0:8443 (port 0: any).")
    return host.strip("[]"), int(port)


# ------------------------------------------------------------------ server run
def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    """``server run``'s arguments."""
    parser.add_argument("--config", required=True, help="the run's config (identities pinned)")
    parser.add_argument("--listen", required=True, help="HOST:PORT (port 0: any free port)")
    parser.add_argument(
        "--state-dir", required=True, help="the service's state (a restart resumes)"
    )
    parser.add_argument("--keys", required=True, help="the server's key file")
    parser.add_argument("--party-timeout", type=float, default=3600.0,
                        help="seconds to wait for each party's message")  # fmt: skip
    parser.add_argument("--out", help="also write the synthetic CSV here (never overwritten)")
    parser.add_argument("--report", help="also write the report's JSON here (never overwritten)")
    parser.add_argument("--exit-when-done", action="store_true", help="stop when the run ends")
    parser.add_argument("--port-file", help="write the port listened on to this file")
    parser.add_argument("--seed", type=int, default=None, help="experiments only")


def run_server(args: argparse.Namespace) -> int:
    """Serve the run until it ends (with --exit-when-done) or a signal stops it."""
    cfg = ProtocolConfig.load(args.config)
    keypair = KeyPair.load(args.keys)
    context = server_context(cfg, keypair)
    host, port = _listen(args.listen)
    if not args.party_timeout > 0:
        raise ConfigError("--party-timeout must be a positive number of seconds.")
    for path in (args.out, args.report):
        if path is not None and Path(path).exists():
            raise ServiceError(f"{path} exists; refusing to overwrite it: give a new path.")
    store = MessageStore(args.state_dir, cfg.config_hash())
    run = ServiceRun(
        cfg, keypair, store, args.state_dir, party_timeout=args.party_timeout, seed=args.seed,
        out=args.out, report=args.report,
    )  # fmt: skip
    app = make_app(cfg, store, run.status)
    return asyncio.run(_serve(app, context, host, port, run, args))


async def _serve(app: web.Application, context, host, port, run: ServiceRun, args) -> int:  # noqa: ANN001
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        site = web.TCPSite(runner, host, port, ssl_context=context)
        await site.start()
        bound = runner.addresses[0][1]
        if args.port_file:
            atomic_write_text(args.port_file, f"{bound}\n")
        print(f"vertimrf server: run {run.config.config_hash()[:16]} on https://{host}:{bound}",
              file=sys.stderr)  # fmt: skip
        run.start()
        if args.exit_when_done:
            finished = loop.run_in_executor(None, run.finished.wait)
            waiting = asyncio.ensure_future(stop.wait())
            await asyncio.wait([finished, waiting], return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            await asyncio.sleep(GRACE)
        else:
            await stop.wait()
    finally:
        await runner.cleanup()
    if run.state == "failed":
        print(f"vertimrf server: error: {run.error}", file=sys.stderr)
        return 2
    return 0


# ------------------------------------------------------------------ party run
def add_party_arguments(parser: argparse.ArgumentParser) -> None:
    """``party run``'s arguments."""
    parser.add_argument("--server", required=True, help="the service's URL, https://HOST:PORT")
    parser.add_argument("--config", required=True, help="the run's config (identities pinned)")
    parser.add_argument("--data", required=True, help="this party's CSV")
    parser.add_argument("--keys", required=True, help="this party's key file")
    parser.add_argument("--secret", required=True, help="the group secret (hex file)")
    parser.add_argument("--state-dir", help="this party's private state folder")
    parser.add_argument("--id-column", default="id")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per message")
    parser.add_argument("--seed", type=int, default=None, help="experiments only")


def default_state_dir(party: str) -> Path:
    """The per-user state folder of ``party``: ``$XDG_STATE_HOME/vertimrf/<party>``."""
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "vertimrf" / party


def run_party(args: argparse.Namespace) -> int:
    """Run all of the party's steps over the service."""
    cfg = ProtocolConfig.load(args.config)
    keypair = KeyPair.load(args.keys)
    context = client_context(cfg, keypair)
    if keypair.name == SERVER:
        raise ConfigError("party run needs a party's key file, not the server's.")
    peers = {n: k for n, k in cfg.public_keys().items() if n not in (keypair.name, SERVER)}
    party = Party(  # the table is not kept here: the party keeps only what it needs
        keypair.name, read_table(args.data), cfg, read_hex_secret(args.secret),
        keypair=keypair, peers=peers, id_column=args.id_column, seed=args.seed,
    )  # fmt: skip
    state = Path(args.state_dir or default_state_dir(keypair.name))
    transport = HttpTransport(
        args.server, cfg.config_hash(), context, timeout=args.timeout,
        spool=state / cfg.config_hash()[:16] / "received",
    )  # fmt: skip
    driver = PartyDriver(party, transport, state_dir=state)
    driver.run()
    print(f"vertimrf party {keypair.name}: done ({driver.sent_bytes:,} bytes sent).",
          file=sys.stderr)  # fmt: skip
    return 0


# ------------------------------------------------------------------ status
def add_status_arguments(parser: argparse.ArgumentParser) -> None:
    """``status``'s arguments."""
    parser.add_argument("--server", required=True, help="the service's URL, https://HOST:PORT")
    parser.add_argument("--config", required=True, help="the run's config (identities pinned)")
    parser.add_argument("--keys", required=True, help="a party's key file (to authenticate)")


def run_status(args: argparse.Namespace) -> int:
    """Print the run's state and each party's messages and bytes."""
    cfg = ProtocolConfig.load(args.config)
    keypair = KeyPair.load(args.keys)
    transport = HttpTransport(
        args.server, cfg.config_hash(), client_context(cfg, keypair), timeout=30.0
    )
    status = transport.request("GET", f"{transport.url}/v1/status", "the status").json()
    line = f"run {status['run'][:16]}: {status['state']}"
    print(line + (f" ({status['error']})" if status["error"] else ""))
    for name, party in status["parties"].items():
        print(f"  {name}: {party['messages']} messages, {party['sent_bytes']:,} bytes, "
              f"last {party['last'] or '-'}")  # fmt: skip
    return 0


COMMANDS = {
    ("server", "run"): (add_server_arguments, run_server),
    ("party", "run"): (add_party_arguments, run_party),
    ("status",): (add_status_arguments, run_status),
}
