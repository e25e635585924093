"""HttpTransport: a party's transport over the service
(:mod:`vertimrf.service.app`); design notes in docs/design/service.md."""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.transport import (
    MAP_BYTES,
    Outgoing,
    Payload,
    Stored,
    map_file,
    nbytes,
    sha256_hex,
)
from vertimrf.driver.waits import WaitNotices
from vertimrf.errors import ConfigError, MissingMessageError, RunFailedError, ServiceError
from vertimrf.io import atomic_open
from vertimrf.logs import progress_bar
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.schedule import SEALED_KINDS, Message
from vertimrf.protocol.seeds import SERVER
from vertimrf.service.tls import client_context

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 10.0
POLL_WAIT = 20.0
CHUNK = 1 << 20  # bytes per read and write of a transfer (and per TLS write)
STALL_ENV = "VERTIMRF_TEST_STALL_UPLOAD"
TLS_TRIES = 3  # failed TLS handshakes in a row that end the party
MAX_ERROR = 2000  # characters of a failure a party reports
REFUSED_FOR = 20.0  # seconds of refused connections, to a server never reached, that end it


class _PinnedAdapter(HTTPAdapter):
    """Connections made with one SSL context (the pinned identities)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self._context = context
        super().__init__()

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        kwargs["ssl_context"] = self._context
        kwargs["blocksize"] = CHUNK  # urllib3 sends a body in blocks of this size
        super().init_poolmanager(*args, **kwargs)


class _Body:
    """A message's bytes as a file-like body of known length, read in chunks (with a
    progress bar, and the stall test hook): from memory, or from a Stored file."""

    def __init__(self, data: Outgoing, bar: Any, stall: bool) -> None:
        self._size, self._at, self._bar = nbytes(data), 0, bar
        if isinstance(data, Stored):
            self._file: Any = open(data.path, "rb")  # noqa: SIM115 (closed at the end)
            self._view = None
        else:
            self._file, self._view = None, memoryview(data).cast("B")
        self._stall = self._size // 2 if stall else -1

    def __len__(self) -> int:
        return self._size

    def read(self, n: int = -1) -> bytes | memoryview:
        if self._at == self._stall:
            time.sleep(3600)
        stop = self._size if n < 0 else min(self._at + min(n, CHUNK), self._size)
        if self._stall > self._at:
            stop = min(stop, self._stall)
        if self._view is not None:
            chunk: bytes | memoryview = self._view[self._at : stop]  # sent without a copy
        else:
            chunk = self._file.read(stop - self._at)
            if not chunk:
                self._file.close()
        self._at += len(chunk)
        self._bar.update(len(chunk))
        return chunk

    def close(self) -> None:
        if self._file is not None:
            self._file.close()


def check_url(url: str) -> str:
    """``url`` if it can name the service (``https://HOST:PORT``), else ConfigError."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "http":
        raise ConfigError(f"--server {url}: the service speaks HTTPS only: give https://HOST:PORT.")
    if parts.scheme != "https" or not parts.hostname:
        raise ConfigError(f"--server {url}: give the service's URL, https://HOST:PORT.")
    return url


def _cause(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """The ``kind`` error at the root of a requests error (urllib3 nests it), or None."""
    todo, seen = [exc], set()
    while todo:
        each = todo.pop()
        if isinstance(each, kind):
            return each
        seen.add(id(each))
        nested = (*each.args, each.__cause__, each.__context__, getattr(each, "reason", None))
        todo += [e for e in nested if isinstance(e, BaseException) and id(e) not in seen]
    return None


class HttpTransport:
    """A party's transport to the service at ``url`` for the run ``run``; ``timeout``
    bounds each message's wait and each retried request; large messages received go to
    files in ``spool`` (private to the party: its state folder), if given; ``notices``
    says what it waits for."""

    def __init__(
        self,
        url: str,
        run: str,
        context: ssl.SSLContext,
        *,
        timeout: float = 600.0,
        progress: bool | None = None,
        spool: str | os.PathLike | None = None,
        notices: WaitNotices | None = None,
    ) -> None:
        self.url = check_url(url).rstrip("/")
        self.run, self.timeout, self.progress = run, timeout, progress
        self.spool = None if spool is None else Path(spool)
        self.notices = notices
        self._context = context
        self.session = self._session()
        self._status_session: requests.Session | None = None
        self.reached = False  # the server has answered once
        self.trouble = ""  # why the last request failed ("": it did not)
        self._said_unreachable = False  # said at once, by whichever thread failed first
        self._saying = threading.Lock()
        self._uploader: tuple[ThreadPoolExecutor, requests.Session] | None = None
        self._uploads: list[Future[None]] = []

    def _session(self) -> requests.Session:
        session = requests.Session()
        session.mount("https://", _PinnedAdapter(self._context))
        return session

    def __repr__(self) -> str:
        return f"HttpTransport({self.url!r})"

    def _message_url(self, message: Message) -> str:
        return (
            f"{self.url}/v1/runs/{self.run}/messages/"
            f"{message.sender}/{message.receiver}/{message.kind}"
        )

    def request(
        self,
        method: str,
        url: str,
        what: str,
        session: requests.Session | None = None,
        **kwargs: Any,
    ) -> requests.Response:
        """One request (on ``session``, default the transport's), retried on connection
        errors and 5xx with backoff until the timeout (with notices while it retries);
        ServiceError for a refusal, a URL that cannot work, or when time runs out;
        RunFailedError when the run has failed."""
        start = time.monotonic()
        tls_failures = 0
        backoff = FIRST_BACKOFF
        body = kwargs.pop("make_body", None)
        with contextlib.ExitStack() as waiting:
            while True:
                try:
                    extra = {"data": body()} if body is not None else {}
                    response = (session or self.session).request(
                        method, url, timeout=(10, 120), **kwargs, **extra
                    )
                    self.reached = True
                    if response.status_code < 500:
                        break
                    self.trouble = f"the server answered {response.status_code}"
                except requests.RequestException as exc:
                    tls = isinstance(exc, requests.exceptions.SSLError)
                    tls_failures = tls_failures + 1 if tls else 0
                    self.trouble = self._fault(exc, what, tls_failures, time.monotonic() - start)
                if time.monotonic() + backoff > start + self.timeout:
                    raise ServiceError(
                        f"{what}: {self.trouble} for {self.timeout:g} s; check the --server URL "
                        "and that the server runs."
                    )
                if self.notices is not None and backoff == FIRST_BACKOFF:
                    # said at once (the server may not have started, or the URL is wrong),
                    # even within a wait that says what it waits for later (a receive's, or
                    # another thread's); then again as the wait goes on
                    self._say_unreachable(self.notices)
                    every = self.notices.every
                    waiting.enter_context(self.notices.waiting(self._unreachable, first=every))
                pause = backoff
                if not self.reached:  # a try falls when refused connections end the party
                    pause = min(pause, max(0.05, start + REFUSED_FOR - time.monotonic()))
                time.sleep(pause)
                backoff = min(2 * backoff, MAX_BACKOFF)
        self.trouble, self._said_unreachable = "", False
        return self._answer(response, what)

    def _say_unreachable(self, notices: WaitNotices) -> None:
        """Say that the server is not reachable, once until it answers again."""
        with self._saying:
            if not self._said_unreachable:
                self._said_unreachable = True
                notices.say(self._unreachable(0.0))

    def _unreachable(self, seconds: float) -> str:
        return (
            f"waiting for the server at {self.url} (not reachable yet: {self.trouble}, "
            f"{seconds:.0f} s)"
        )

    def _fault(self, exc: requests.RequestException, what: str, tls: int, seconds: float) -> str:
        """What went wrong with a request, in a few words; ServiceError when the URL
        cannot work (:data:`TLS_TRIES` TLS failures in a row, or connections refused for
        :data:`REFUSED_FOR` seconds by a server never reached)."""
        if tls:
            ssl_error = _cause(exc, ssl.SSLError)
            reason = getattr(ssl_error, "reason", None) or type(exc).__name__
            if tls >= TLS_TRIES:
                raise ServiceError(
                    f"{what}: no TLS with {self.url} ({reason}): check the URL's port and "
                    "scheme, and that the config pins this server's key."
                ) from None
            return f"TLS failed ({reason})"
        if _cause(exc, ConnectionRefusedError) is not None:
            if not self.reached and seconds >= REFUSED_FOR:
                raise ServiceError(
                    f"{what}: {self.url} refused every connection for {seconds:.0f} s: check "
                    "the URL's host and port, and that the server runs."
                ) from None
            return "connection refused"
        return f"cannot reach the server ({type(exc).__name__})"

    def _answer(self, response: requests.Response, what: str) -> requests.Response:
        """``response``, or the error of a refusal (RunFailedError: the run has failed)."""
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                error = response.text[:200]
            if response.status_code == 410:
                raise RunFailedError(f"the run has failed at the server: {error}")
            raise ServiceError(f"{what}: the server refused it ({response.status_code}): {error}")
        return response

    def report_failure(self, error: str) -> None:
        """Tell the server that this party failed, with ``error`` (once, best effort: a
        server that cannot be reached learns it from the party's silence)."""
        url = f"{self.url}/v1/runs/{self.run}/failure"
        with contextlib.suppress(requests.RequestException):
            self.session.post(url, json={"error": error[:MAX_ERROR]}, timeout=(5, 10))

    def send(self, message: Message, data: Outgoing) -> None:
        """Upload ``data`` as ``message`` (again: accepted if the bytes are the same): a
        Stored file in the background (its recorded SHA-256 not recomputed), anything else
        at once, after every earlier upload."""
        self._check_uploads()
        if isinstance(data, Stored):
            if self._uploader is None:
                pool = ThreadPoolExecutor(1, thread_name_prefix="vertimrf-upload")
                self._uploader = pool, self._session()
            pool, session = self._uploader
            self._uploads.append(pool.submit(self._upload, message, data, session))
            return
        self.flush()
        self._upload(message, data, self.session)

    def flush(self) -> None:
        """Wait for every background upload; ServiceError of the first that failed."""
        uploads, self._uploads = self._uploads, []
        for upload in uploads:
            upload.result()

    def _check_uploads(self) -> None:
        """Raise the error of a background upload that failed, at once."""
        for upload in self._uploads:
            if upload.done() and upload.exception() is not None:
                self.flush()

    def _upload(self, message: Message, data: Outgoing, session: requests.Session) -> None:
        size = nbytes(data)
        headers = {
            "X-Content-SHA256": sha256_hex(data),
            "Content-Length": str(size),
            "Content-Type": "application/octet-stream",
        }
        stall = os.environ.get(STALL_ENV) == message.kind
        bodies: list[_Body] = []

        def body() -> _Body:
            bodies.append(_Body(data, bar, stall))
            return bodies[-1]

        bar = progress_bar(desc=f"sending {message}", total=size, progress=self.progress)
        try:
            self.request(
                "PUT", self._message_url(message), f"sending the {message}", session,
                headers=headers, make_body=body,
            )  # fmt: skip
        finally:
            for each in bodies:
                each.close()
            bar.close()

    def _spooled(self, message: Message) -> Path | None:
        if self.spool is None:
            return None
        return self.spool / f"{message.sender}.{message.receiver}.{message.kind}"

    def receive(self, message: Message) -> Payload:
        """The message's bytes (a large one spooled and mapped, see the module), long-polling
        up to ``timeout`` seconds for them, with notices while it waits."""
        spooled = self._spooled(message)
        if spooled is not None and spooled.exists():  # whole and checked when written
            return map_file(spooled)
        with contextlib.ExitStack() as waiting:
            if self.notices is not None:
                waiting.enter_context(self.notices.waiting(lambda t: self._awaiting(message, t)))
            return self._long_poll(message)

    def _long_poll(self, message: Message) -> Payload:
        deadline = time.monotonic() + self.timeout
        url = self._message_url(message)
        while True:
            self._check_uploads()
            left = deadline - time.monotonic()
            if left <= 0:
                raise MissingMessageError(
                    f"the {message} did not arrive within {self.timeout:g} s; check that "
                    f"{message.sender} runs (`vertimrf status`)."
                )
            wait = min(left, POLL_WAIT)
            response = self.request(
                "GET", url, f"receiving the {message}", params={"wait": f"{wait:.3f}"}, stream=True
            )
            if response.status_code == 200:
                try:
                    return self._read(message, response)
                except requests.RequestException:  # cut off mid-body: ask again
                    time.sleep(FIRST_BACKOFF)
            response.close()

    def _awaiting(self, message: Message, seconds: float) -> str:
        """A notice of the wait for ``message``: the server unreachable, or what its
        sender last sent (from the status)."""
        if self.trouble:
            return self._unreachable(seconds)
        sender = message.sender
        try:
            if self._status_session is None:  # the notices' own (a session is one thread's)
                self._status_session = self._session()
            status = self._status_session.get(f"{self.url}/v1/status", timeout=(3, 5)).json()
            if sender not in status["parties"]:  # the server, or a dealer of its own
                news = f"the run is {status['state']}"
            else:
                news = f"{sender} last sent: {status['parties'][sender]['last'] or 'nothing'}"
        except (requests.RequestException, ValueError, KeyError, TypeError):
            news = "no status"
        who = "the server" if sender == SERVER else sender
        return f"waiting for the {message.kind} from {who} ({seconds:.0f} s; {news})"

    def _read(self, message: Message, response: requests.Response) -> Payload:
        """The response's body, checked against its length and (but a sealed blob, see
        :data:`~vertimrf.protocol.schedule.SEALED_KINDS`) its SHA-256: in memory, or for a
        large message with a spool folder, in a file there (renamed into place only whole
        and checked), mapped."""
        size = int(response.headers.get("Content-Length", "0"))
        spooled = self._spooled(message) if size >= MAP_BYTES else None
        if spooled is None:
            out = bytearray()
            self._download(message, response, size, out.extend)
            return bytes(out)
        with atomic_open(spooled, "wb", sync=False) as fh:  # a cache: fetched again if lost
            self._download(message, response, size, fh.write)
        return map_file(spooled)

    def _download(
        self,
        message: Message,
        response: requests.Response,
        size: int,
        write: Callable[[bytes], object],
    ) -> None:
        """Stream the body to ``write`` in chunks; ServiceError (nothing kept) when it is cut
        or altered."""
        digest = None if message.kind in SEALED_KINDS else hashlib.sha256()
        got = 0
        bar = progress_bar(desc=f"receiving {message}", total=size, progress=self.progress)
        try:
            for chunk in response.iter_content(CHUNK):
                if digest is not None:
                    digest.update(chunk)
                write(chunk)
                got += len(chunk)
                bar.update(len(chunk))
        finally:
            bar.close()
        altered = digest is not None and digest.hexdigest() != response.headers.get(
            "X-Content-SHA256"
        )
        if got != size or altered:
            raise ServiceError(f"the {message} arrived cut or altered: run the party again.")


def party_transport(
    url: str,
    config: ProtocolConfig,
    keypair: KeyPair,
    *,
    timeout: float = 3600.0,
    progress: bool | None = None,
    spool: str | os.PathLike | None = None,
    notices: WaitNotices | None = None,
) -> HttpTransport:
    """A party's transport to the service at ``url``, over mutual TLS with the identities
    the config pins (``keypair``'s own checked against its entry); large downloads are
    streamed to files in ``spool`` (a private folder) and mapped; ``notices`` says what
    it waits for."""
    config.check_keypair(keypair)
    return HttpTransport(
        url, config.config_hash(), client_context(config, keypair), timeout=timeout,
        progress=progress, spool=spool, notices=notices,
    )  # fmt: skip


def fetch_status(url: str, config: ProtocolConfig, keypair: KeyPair) -> dict[str, Any]:
    """The service's ``/v1/status`` (as any pinned role: a party or the server)."""
    transport = party_transport(url, config, keypair, timeout=30.0, progress=False)
    return transport.request("GET", f"{transport.url}/v1/status", "the status").json()


def format_status(status: dict[str, Any]) -> str:
    """The status as lines a person reads: the run's state (and what it waits on, or where
    its outputs are), then each party's messages."""
    line = f"run {status['run'][:16]}: {status['state']}"
    if status["error"]:
        line += f" ({status['error']})"
    if status.get("waiting"):
        waiting = status["waiting"]
        line += f", waiting on {', '.join(waiting['roles'])}: {waiting['step']}"
    if status.get("outputs"):
        outputs = status["outputs"]
        line += (
            f"; the synthetic table is in {' and '.join(outputs['synthetic'])}; the report is "
            f"in {' and '.join(outputs['report'])}"
        )
    lines = [line]
    for name, party in status["parties"].items():
        lines.append(
            f"  {name}: {party['messages']} messages, {party['sent_bytes']:,} bytes, "
            f"last {party['last'] or '-'}"
        )
    return "\n".join(lines)
