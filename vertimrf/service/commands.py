"""The service's entry points, for the command line (``vertimrf server run --listen``,
``vertimrf party run --server``, ``vertimrf status``):

* :func:`serve`: the service of one run, until it ends (``exit_when_done``) or a signal
  stops it (port 0: an ephemeral port, written to ``port_file``);
* the parties' side, :func:`~vertimrf.service.client.party_transport` and
  :func:`~vertimrf.service.client.fetch_status`, is in :mod:`vertimrf.service.client`, so a
  party never loads the server's framework.

The config must pin every role's identity (:mod:`vertimrf.service.tls` says how keys are
made and compared).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
from pathlib import Path
from typing import Any

from aiohttp import web

from vertimrf.errors import ConfigError, ServiceError
from vertimrf.io import atomic_write_text
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.service.app import make_app
from vertimrf.service.runner import ServiceRun
from vertimrf.service.store import MessageStore
from vertimrf.service.tls import server_context
from vertimrf.synth.table_file import check_table_file

log = logging.getLogger(__name__)

GRACE = 1.0  # seconds the service keeps serving after the run ends (exit_when_done)


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as a host and a port."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host or int(port) > 65535:
        raise ConfigError(f"--listen {text!r}: give HOST:PORT, e.g. 0.0.0.0:8443 (port 0: any).")
    return host.strip("[]"), int(port)


def serve(
    config: ProtocolConfig,
    keypair: KeyPair,
    state_dir: str | os.PathLike,
    listen: str,
    *,
    party_timeout: float = 3600.0,
    seed: int | None = None,
    out: str | os.PathLike | None = None,
    report: str | os.PathLike | None = None,
    exit_when_done: bool = False,
    port_file: str | os.PathLike | None = None,
) -> int:
    """Serve the run of ``config`` on ``listen`` (HOST:PORT); 0 when it ends done (or a
    signal stops the service), 2 when it failed (the reason logged to ``vertimrf.service``)."""
    context = server_context(config, keypair)
    host, port = parse_listen(listen)
    if not party_timeout > 0:
        raise ConfigError("--timeout must be a positive number of seconds.")
    for path in (out, report):
        if path is not None and Path(path).exists():
            raise ServiceError(f"{path} exists; refusing to overwrite it: give a new path.")
    if out is not None:
        check_table_file(out, config.spec)
    store = MessageStore(state_dir, config.config_hash())
    run = ServiceRun(
        config, keypair, store, state_dir, party_timeout=party_timeout, seed=seed, out=out,
        report=report,
    )  # fmt: skip
    app = make_app(config, store, run.status)
    return asyncio.run(_serve(app, context, host, port, run, exit_when_done, port_file))


async def _serve(
    app: web.Application,
    context: ssl.SSLContext,
    host: str,
    port: int,
    run: ServiceRun,
    exit_when_done: bool,
    port_file: str | os.PathLike | None,
) -> int:
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
        if port_file:
            atomic_write_text(port_file, f"{bound}\n")
        log.info("run %s on https://%s:%d", run.config.config_hash()[:16], host, bound)
        run.start()
        if exit_when_done:
            finished = loop.run_in_executor(None, run.finished.wait)
            waiting = asyncio.ensure_future(stop.wait())
            either: list[asyncio.Future[Any]] = [finished, waiting]
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            await asyncio.sleep(GRACE)
        else:
            await stop.wait()
    finally:
        await runner.cleanup()
    return 2 if run.state == "failed" else 0
