"""The service's entry points for the command line: :func:`serve`, the service
of one run; design notes in docs/design/service.md."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import signal
import ssl
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.lock import state_lock
from vertimrf.errors import ConfigError, ServiceError
from vertimrf.io import atomic_write_text
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.setup import RunSetup, run_setup
from vertimrf.service.app import READ_TIMEOUT, make_app
from vertimrf.service.runner import ServiceRun
from vertimrf.service.store import MessageStore
from vertimrf.service.tls import server_context
from vertimrf.synth.table_file import check_table_file

log = logging.getLogger(__name__)

GRACE = 1.0  # seconds the service keeps serving after the run ends (exit_when_done)
FAILED_GRACE = 30.0  # at most this long after a failure, until every party has been told
SHUTDOWN_GRACE = 1.0  # seconds a request in progress may take once a signal stops the service
_TICK = 0.2  # seconds between looks at the run's end and at idle connections


class _NetworkFaults(logging.Filter):
    """aiohttp's log of a request it cannot parse (a line over its limits, a bad head), or
    of a connection that broke (a client killed mid-transfer): the network's or the
    client's fault, so one line and no traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record of a parse error or a broken connection; pass every record."""
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg, record.args = (
                "refused a malformed request: %s",
                (" ".join(str(exc.message).split())[:200],),
            )
        elif isinstance(exc, (ConnectionError, ssl.SSLError, asyncio.TimeoutError)):
            record.msg, record.args = "dropped a connection: %s", (exc or type(exc).__name__,)
        else:
            return True
        record.exc_info = record.exc_text = None
        return True


_http_log = logging.getLogger(f"{__name__}.http")  # aiohttp's request errors
_http_log.addFilter(_NetworkFaults())


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` as a host and a port."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host or int(port) > 65535:
        raise ConfigError(f"--listen {text!r}: give HOST:PORT, e.g. 0.0.0.0:8443 (port 0: any).")
    return host.strip("[]"), int(port)


def serve(
    config: ProtocolConfig | RunSetup,
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
    read_timeout: float = READ_TIMEOUT,
    announce: Callable[[str], object] = log.info,
) -> int:
    """Serve the run of ``config`` on ``listen`` (HOST:PORT); 0 when it ends done, 2 when it
    failed (the reason logged to ``vertimrf.service``), 128 + the signal's number when
    SIGTERM or SIGINT stops it. A connection with no request in progress for
    ``read_timeout`` seconds, or an upload whose next chunk takes that long, is dropped.
    ``announce`` says where the synthetic table and the report were written."""
    setup = run_setup(config)  # checked once, for the run and its driver
    config = setup.config
    context = server_context(config, keypair)
    host, port = parse_listen(listen)
    if not party_timeout > 0:
        raise ConfigError("--timeout must be a positive number of seconds.")
    if not (read_timeout > 0 and math.isfinite(read_timeout)):
        raise ConfigError("--read-timeout must be a positive number of seconds.")
    for path in (out, report):
        if path is not None and Path(path).exists():
            raise ServiceError(f"{path} exists; refusing to overwrite it: give a new path.")
    if out is not None:
        check_table_file(out, config.spec)
    with state_lock(state_dir, log.warning):
        store = MessageStore(state_dir, config.config_hash())
        run = ServiceRun(
            setup, keypair, store, state_dir, party_timeout=party_timeout, seed=seed, out=out,
            report=report, announce=announce,
        )  # fmt: skip
        app = make_app(config, store, run.status, run.failure, run.fail, read_timeout=read_timeout)
        idle = _IdleConnections(read_timeout)
        app.middlewares.append(idle.middleware)
        code = asyncio.run(_serve(app, context, host, port, run, exit_when_done, port_file, idle))
    if code > 128 and run.working():
        _exit_now(code)
    return code


def _exit_now(code: int) -> None:
    """End the process at once with ``code``, its logs and output flushed. Used when a
    signal stops the service while the worker thread runs the server's steps: the
    interpreter's shutdown ends that daemon thread wherever it is, and under load this was
    seen to abort the process ("FATAL: exception not rethrown", SIGABRT) instead of exiting
    with 128 + the signal. Every step's state is already in the state folder
    (SQLite and files written whole), which the next ``server run`` resumes."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class _IdleConnections:
    """Drops a connection with no request in progress for ``timeout`` seconds (a client
    stalled in its request's head, or idle between requests): its middleware counts the
    requests in progress on each connection, :meth:`sweep` closes the idle ones."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.busy: dict[asyncio.BaseTransport, int] = {}  # requests in progress
        self.since: dict[asyncio.BaseTransport, float] = {}  # idle since (loop time)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Count ``request`` in progress on its connection while ``handler`` answers it."""
        transport = request.transport
        if transport is None:  # the client is gone already
            return await handler(request)
        self.busy[transport] = self.busy.get(transport, 0) + 1
        try:
            return await handler(request)
        finally:
            left = self.busy.pop(transport) - 1
            if left:
                self.busy[transport] = left
            self.since[transport] = asyncio.get_running_loop().time()

    async def sweep(self, server: web.Server) -> None:
        """Close, every tick, the connections of ``server`` idle for over the time-out."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(min(_TICK, self.timeout / 4))
            now = loop.time()
            live = {c.transport for c in server.connections if c.transport is not None}
            for transport in live - set(self.busy):
                if now - self.since.setdefault(transport, now) > self.timeout:
                    transport.abort()
            for gone in set(self.since) - live:
                del self.since[gone]


async def _serve(
    app: web.Application,
    context: ssl.SSLContext,
    host: str,
    port: int,
    run: ServiceRun,
    exit_when_done: bool,
    port_file: str | os.PathLike | None,
    idle: _IdleConnections,
) -> int:
    runner = web.AppRunner(
        app, handle_signals=False, access_log=None, logger=_http_log,
        shutdown_timeout=SHUTDOWN_GRACE,
    )  # fmt: skip
    await runner.setup()
    assert runner.server is not None
    stop = asyncio.Event()
    caught: list[int] = []
    loop = asyncio.get_running_loop()

    def on_signal(sig: int) -> None:
        caught.append(sig)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, sig)
    server, sweep = None, asyncio.ensure_future(idle.sweep(runner.server))
    try:
        # aiohttp's sites take no TLS handshake time-out: the socket is served directly
        server = await loop.create_server(
            runner.server, host, port, ssl=context, ssl_handshake_timeout=idle.timeout
        )
        bound = server.sockets[0].getsockname()[1]
        if port_file:
            atomic_write_text(port_file, f"{bound}\n")
        log.info("run %s on https://%s:%d", run.config.config_hash()[:16], host, bound)
        run.start()
        while not (stop.is_set() or (exit_when_done and run.finished.is_set())):
            await _wait(stop, _TICK)
        if not stop.is_set():
            await _wait(stop, GRACE)
        parties = {p.name for p in run.config.parties}
        told_by = loop.time() + FAILED_GRACE
        while run.state == "failed" and not stop.is_set() and loop.time() < told_by:
            if run.told >= parties:
                break
            await _wait(stop, _TICK)
    finally:
        sweep.cancel()
        if server is not None:
            server.close()
        await runner.cleanup()
    if caught:
        name = signal.Signals(caught[0]).name
        log.info("stopped by %s; the state folder keeps the run: serve it again to resume.", name)
        return 128 + caught[0]
    return 2 if run.state == "failed" else 0


async def _wait(event: asyncio.Event, seconds: float) -> None:
    """Until ``event`` is set, or ``seconds`` have passed."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(event.wait(), seconds)
