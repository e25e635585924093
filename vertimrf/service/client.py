"""HttpTransport: a party's transport over the service (:mod:`vertimrf.service.app`).

It connects out only, over mutual TLS (:func:`vertimrf.service.tls.client_context`):
``send`` uploads a message (streamed with its length and SHA-256; a
:class:`~vertimrf.driver.transport.Stored` file, a party's kept copy of a large message, is
uploaded in the background, so that the party goes on, e.g. to download its peers' blobs,
meanwhile; any other message after every upload before it; :meth:`HttpTransport.flush`
waits for them), ``receive`` long-polls for one; with a ``spool`` folder, a large message
(at least :data:`~vertimrf.driver.transport.MAP_BYTES`) is streamed to a file there,
checked, and handed out mapped (received again, it is mapped again without a download), so
a party holds no multi-GB download in memory. Connection errors and 5xx answers are
retried with exponential backoff (0.5 s doubling to 10 s) until the transport's
``timeout``; a refusal (4xx) stops the party with the server's one-line reason. Transfers
show progress bars on a terminal.

Test hook: with ``VERTIMRF_TEST_STALL_UPLOAD=<kind>`` in the environment, an upload of that
kind stops after half its body and hangs (a test kills the party there).
"""

from __future__ import annotations

import hashlib
import os
import ssl
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from vertimrf.driver.transport import (
    MAP_BYTES,
    Message,
    Outgoing,
    Payload,
    Stored,
    map_file,
    nbytes,
    sha256_hex,
)
from vertimrf.errors import MissingMessageError, ServiceError
from vertimrf.io import atomic_open
from vertimrf.logs import progress_bar
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.service.rules import SEALED_KINDS
from vertimrf.service.tls import client_context

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 10.0
POLL_WAIT = 20.0
CHUNK = 1 << 20  # bytes per read and write of a transfer (and per TLS write)
STALL_ENV = "VERTIMRF_TEST_STALL_UPLOAD"


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


class HttpTransport:
    """A party's transport to the service at ``url`` for the run ``run``; ``timeout``
    bounds each message's wait and each retried request; large messages received go to
    files in ``spool`` (private to the party: its state folder), if given."""

    def __init__(
        self,
        url: str,
        run: str,
        context: ssl.SSLContext,
        *,
        timeout: float = 600.0,
        progress: bool | None = None,
        spool: str | os.PathLike | None = None,
    ) -> None:
        self.url, self.run, self.timeout, self.progress = url.rstrip("/"), run, timeout, progress
        self.spool = None if spool is None else Path(spool)
        self._context = context
        self.session = self._session()
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
        errors and 5xx with backoff until the timeout; ServiceError for a refusal or when
        time runs out."""
        session = self.session if session is None else session
        deadline = time.monotonic() + self.timeout
        backoff = FIRST_BACKOFF
        while True:
            body = kwargs.pop("make_body", None)
            try:
                extra = {"data": body()} if body is not None else {}
                response = session.request(method, url, timeout=(10, 120), **kwargs, **extra)
                if response.status_code < 500:
                    break
                reason = f"the server answered {response.status_code}"
            except requests.RequestException as exc:
                reason = f"cannot reach the server ({type(exc).__name__})"
            finally:
                if body is not None:
                    kwargs["make_body"] = body
            if time.monotonic() + backoff > deadline:
                raise ServiceError(
                    f"{what}: {reason} for {self.timeout:g} s; check the --server URL and that "
                    "the server runs."
                )
            time.sleep(backoff)
            backoff = min(2 * backoff, MAX_BACKOFF)
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
            except (ValueError, KeyError, TypeError):
                error = response.text[:200]
            raise ServiceError(f"{what}: the server refused it ({response.status_code}): {error}")
        return response

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
        up to ``timeout`` seconds for them."""
        spooled = self._spooled(message)
        if spooled is not None and spooled.exists():  # whole and checked when written
            return map_file(spooled)
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

    def _read(self, message: Message, response: requests.Response) -> Payload:
        """The response's body, checked against its length and (but a sealed blob, see
        :data:`~vertimrf.service.rules.SEALED_KINDS`) its SHA-256: in memory, or for a
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
) -> HttpTransport:
    """A party's transport to the service at ``url``, over mutual TLS with the identities
    the config pins (``keypair``'s own checked against its entry); large downloads are
    streamed to files in ``spool`` (a private folder) and mapped."""
    config.check_keypair(keypair)
    return HttpTransport(
        url, config.config_hash(), client_context(config, keypair), timeout=timeout,
        progress=progress, spool=spool,
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
