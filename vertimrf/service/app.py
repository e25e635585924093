"""The service's HTTP routes (aiohttp), behind mutual TLS
(:mod:`vertimrf.service.tls`); design notes in docs/design/service.md."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from vertimrf.container import read_container
from vertimrf.driver.transport import map_file
from vertimrf.errors import RUN_CHANGED, ConfigError, MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import KIND as LOCAL_CONTAINER
from vertimrf.protocol.schedule import COUNT_BYTES, SEALED_KINDS, Kind, Message, schedule
from vertimrf.protocol.secure.commit import MAX_COMMIT_BYTES, commit_sender
from vertimrf.protocol.secure.release import RELEASE_KIND
from vertimrf.protocol.secure.tokens import TOKENS_MAGIC, tokens_sender
from vertimrf.service.store import CHUNK, MessageStore
from vertimrf.service.tls import party_fingerprints, party_of, role_fingerprints

log = logging.getLogger(__name__)

MAX_WAIT = 30.0
READ_TIMEOUT = 60.0
POLL = 0.05
MAX_REPORT = 4000  # bytes of a party's failure report
MAX_NAME = 100  # characters of a role or kind: <sender>.<kind> fits a 255-byte file name
# The container each message kind holds (its manifest's kind).
CONTAINER_FORMATS: dict[str, str] = {
    Kind.LOCAL: LOCAL_CONTAINER,
    Kind.RELEASE: RELEASE_KIND,
    Kind.MEASURE: RELEASE_KIND,
}
_MANIFEST_BYTES = 1 << 20
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _refuse(status: int, text: str) -> web.Response:
    """The refusal, logged as one line (a failed run's answer at debug level: it repeats)."""
    log.log(logging.DEBUG if status == 410 else logging.INFO, "refused (%d): %s", status, text)
    return web.json_response({"error": text}, status=status)


@dataclass(frozen=True)
class Origin:
    """The run a message's bytes name (its config hash, which covers the run nonce) and
    the party (None: the kind names none; only the count party sends a count)."""

    run: str
    party: str | None


def _run(value: object) -> str:
    """``value`` if it is a config hash (64 lowercase hex digits), else MessageError."""
    if not isinstance(value, str) or not _SHA256.fullmatch(value):
        raise MessageError("it names no config hash")
    return value


def _json(path: Path, limit: int) -> dict[str, Any]:
    """The JSON object of at most ``limit`` bytes at ``path`` (MessageError otherwise)."""
    with open(path, "rb") as fh:
        raw = fh.read(limit + 1)
    try:
        data = json.loads(raw) if len(raw) <= limit else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise MessageError(f"it is not a JSON object of at most {limit:,} bytes")
    return data


def _count_origin(path: Path) -> Origin:
    return Origin(_run(_json(path, COUNT_BYTES).get("config_hash")), None)


def _commit_origin(path: Path) -> Origin:
    run = _run(_json(path, MAX_COMMIT_BYTES).get("config_hash"))
    return Origin(run, commit_sender(path.read_bytes(), run))


def _tokens_origin(path: Path) -> Origin:
    with open(path, "rb") as fh:
        named = fh.read(len(TOKENS_MAGIC) + 64)[len(TOKENS_MAGIC) :]
    run = _run(named.decode("ascii", "replace"))
    return Origin(run, tokens_sender(map_file(path), run))


def _container_origin(container: str, path: Path) -> Origin:
    # its manifest verified, no array read (so no array size is bounded here: the
    # receiver's reader bounds them); read as a file object: errors name "the message"
    with open(path, "rb") as fh:
        meta, _ = read_container(
            fh, container, array_bytes=lambda _: sys.maxsize, manifest_bytes=_MANIFEST_BYTES,
            arrays=False,
        )  # fmt: skip
    party = meta.get("party")
    return Origin(_run(meta.get("config_hash")), party if isinstance(party, str) else "")


# How each kind a party uploads names its run: a count or a commit in its JSON, a token list
# after its magic, a container in its manifest. A sealed blob (SEALED_KINDS) has none here:
# its associated data binds it to the run, and only its receiver holds the key to check it.
ORIGINS: dict[str, Callable[[Path], Origin]] = {
    Kind.LOCAL_COUNT: _count_origin,
    Kind.COMMIT: _commit_origin,
    Kind.TOKENS: _tokens_origin,
    **{kind: partial(_container_origin, fmt) for kind, fmt in CONTAINER_FORMATS.items()},
}


def origin(kind: str, path: Path) -> Origin | None:
    """The run and party a ``kind`` message's bytes at ``path`` name; None for a kind whose
    bytes name none the service can read (a sealed blob); MessageError when they are not a
    ``kind`` message."""
    reader = ORIGINS.get(kind)
    return None if reader is None else reader(path)


def _absorb(digest: Any, fh: Any, chunk: bytes) -> None:
    """One chunk of an upload into its running digest (if any) and its partial file."""
    if digest is not None:
        digest.update(chunk)
    fh.write(chunk)


def make_app(
    config: ProtocolConfig,
    store: MessageStore,
    status: Callable[[str], dict],
    failure: Callable[[str], str | None],
    fail: Callable[[str, str], None],
    *,
    read_timeout: float = READ_TIMEOUT,
) -> web.Application:
    """The service's routes over ``store``; ``status(role)`` gives the run's state for
    ``/v1/status`` as ``role`` may see it; an upload whose next chunk takes over
    ``read_timeout`` seconds ends; ``failure(party)`` is why the run failed (None: it has
    not), told to ``party``; ``fail(error, party)`` fails it with a party's report."""
    long = [p.name for p in config.parties if len(p.name) > MAX_NAME]
    if long:
        raise ConfigError(
            f"party name {long[0][:MAX_NAME]}... is over {MAX_NAME} characters: "
            "give the parties shorter names."
        )
    run = config.config_hash()
    allowed = schedule(config).uploads()
    fingerprints = party_fingerprints(config)
    readers = role_fingerprints(config)  # who may read the status
    app = web.Application()
    stopping = asyncio.Event()  # set on shutdown: long-polls answer 204 at once

    async def on_shutdown(_: web.Application) -> None:
        stopping.set()

    app.on_shutdown.append(on_shutdown)

    def peer(request: web.Request, roles: dict[str, str] = fingerprints) -> str | None:
        """The role of ``roles`` (default: the parties) the request's certificate pins."""
        transport = request.transport
        tls = None if transport is None else transport.get_extra_info("ssl_object")
        return party_of(roles, None if tls is None else tls.getpeercert(binary_form=True))

    def message_of(request: web.Request, upload: bool) -> Message | web.Response:
        """The message the route names, if the authenticated party is its sender (an
        upload) or its receiver (a download); else the refusal."""
        info = request.match_info
        if any(len(info[k]) > MAX_NAME for k in ("sender", "receiver", "kind")):
            return _refuse(400, f"a role or kind in the path is over {MAX_NAME} characters.")
        if info["run"] != run:
            return _refuse(404, f"no run {info['run'][:16]}: this service runs {run[:16]}.")
        try:
            message = Message(info["sender"], info["receiver"], info["kind"])
        except ConfigError as exc:
            return _refuse(400, str(exc))
        party = peer(request)
        if upload and (party is None or message.sender != party):
            return _refuse(403, f"{party} may not upload as {message.sender}.")
        if not upload and (party is None or message.receiver != party):
            return _refuse(403, f"{party} may not read {message.receiver}'s messages.")
        return message

    def failed(party: str) -> web.Response | None:
        """The answer to ``party`` once the run has failed (None: it has not)."""
        reason = failure(party)
        return None if reason is None else _refuse(410, reason)

    async def put(request: web.Request) -> web.StreamResponse:
        message = message_of(request, upload=True)
        if isinstance(message, web.Response):
            return message
        if (gone := failed(message.sender)) is not None:
            return gone
        upload = allowed.get((message.sender, message.receiver, message.kind))
        if upload is None:
            return _refuse(
                400, f"{message.sender} never sends a {message.kind} to {message.receiver}."
            )
        length = request.content_length
        if length is None:
            return _refuse(411, "Content-Length is required.")
        if length > upload.limit:
            return _refuse(
                413, f"{length:,} bytes is over the {upload.limit:,} a {message.kind} may hold."
            )
        if upload.exact and length != upload.limit:
            return _refuse(
                400, f"a {message.kind} from {message.sender} is exactly {upload.limit:,} "
                f"bytes (the plan's), not {length:,}: resend it whole.",
            )  # fmt: skip
        declared = request.headers.get("X-Content-SHA256", "")
        if not _SHA256.fullmatch(declared):
            return _refuse(400, "X-Content-SHA256 (64 lowercase hex digits) is required.")
        held = store.digest(message)
        if held is not None:  # decided without reading the body
            if held == declared:
                return web.json_response({"stored": False, "sha256": held}, status=200)
            return _refuse(409, f"the {message} is already held with other bytes: {RUN_CHANGED}.")
        return await _receive(request, message, upload.magic, length, declared)

    def _check_origin(message: Message, path: Path) -> web.Response | None:
        """The refusal of a body of another kind, run or sender (None: none); a sealed
        blob is its receiver's to check."""
        try:
            named = origin(message.kind, path)
        except MessageError as exc:
            return _refuse(400, f"the body is not a {message.kind} message ({exc})")
        if named is None:
            return None
        if named.run != run:
            return _refuse(
                409, f"the body is a {message.kind} of run {named.run[:16]}, not of this run "
                f"{run[:16]} (another config, or another attempt at this run): send the "
                "one made with this run's config.",
            )  # fmt: skip
        if named.party is not None and named.party != message.sender:
            return _refuse(
                400, f"the body is {named.party!r:.{MAX_NAME}}'s {message.kind}, not "
                f"{message.sender}'s: upload your own.",
            )  # fmt: skip
        return None

    async def _receive(
        request: web.Request, message: Message, magic: bytes, length: int, declared: str
    ) -> web.StreamResponse:
        path, fh = store.new_upload()
        digest = None if message.kind in SEALED_KINDS else hashlib.sha256()
        size, head = 0, b""
        loop = asyncio.get_running_loop()
        try:
            with fh:
                while True:
                    try:
                        chunk = await asyncio.wait_for(request.content.read(CHUNK), read_timeout)
                    except asyncio.TimeoutError:
                        return _refuse(408, f"no body bytes within {read_timeout:g} s.")
                    except ConnectionError:  # the client is gone: nothing to answer
                        log.info(
                            "dropped the %s: its connection closed after %s of %s bytes",
                            message, f"{size:,}", f"{length:,}",
                        )  # fmt: skip
                        return web.Response(status=400)
                    if not chunk:
                        break
                    if len(head) < len(magic):
                        head += chunk[: len(magic) - len(head)]
                        if not magic.startswith(head):
                            return _refuse(400, f"the body is not a {message.kind} message.")
                    size += len(chunk)
                    if size > length:
                        return _refuse(400, "the body is longer than its Content-Length.")
                    # hashing and writing release the GIL: in a thread, beside the TLS work
                    await loop.run_in_executor(None, _absorb, digest, fh, chunk)
            if size != length or head != magic:
                return _refuse(400, f"the body ended after {size:,} of {length:,} bytes.")
            if digest is not None and digest.hexdigest() != declared:
                return _refuse(400, "the body does not match its X-Content-SHA256.")
            if (refusal := _check_origin(message, path)) is not None:
                return refusal
            try:
                stored = store.commit(message, path, declared)
            except MessageError as exc:
                return _refuse(409, str(exc))
            return web.json_response(
                {"stored": stored, "sha256": declared}, status=201 if stored else 200
            )
        finally:
            path.unlink(missing_ok=True)

    async def get(request: web.Request) -> web.StreamResponse:
        message = message_of(request, upload=False)
        if isinstance(message, web.Response):
            return message
        text = request.query.get("wait", "0")
        try:
            wait = float(text)
        except ValueError:
            wait = math.nan
        if not (math.isfinite(wait) and wait >= 0):
            return _refuse(400, f"wait={text[:20]!r}: give a number of seconds, 0 or more.")
        deadline = asyncio.get_running_loop().time() + min(wait, MAX_WAIT)
        while (digest := store.digest(message)) is None:
            if (gone := failed(message.receiver)) is not None:
                return gone
            if stopping.is_set() or asyncio.get_running_loop().time() >= deadline:
                return web.Response(status=204)
            await asyncio.sleep(POLL)
        path = store.path(message)
        response = web.StreamResponse(
            headers={"X-Content-SHA256": digest, "Content-Type": "application/octet-stream"}
        )
        response.content_length = path.stat().st_size
        await response.prepare(request)
        with open(path, "rb") as fh:
            while chunk := fh.read(CHUNK):
                await response.write(chunk)
        await response.write_eof()
        return response

    async def get_status(request: web.Request) -> web.StreamResponse:
        role = peer(request, readers)
        if role is None:
            return _refuse(403, "only the run's roles may read its status.")
        return web.json_response(status(role))

    async def post_failure(request: web.Request) -> web.StreamResponse:
        party = peer(request)
        if party is None:
            return _refuse(403, "only the run's parties may report a failure.")
        if request.match_info["run"] != run:
            return _refuse(404, f"no run {request.match_info['run'][:16]}: this service runs "
                           f"{run[:16]}.")  # fmt: skip
        if (request.content_length or 0) > MAX_REPORT:
            return _refuse(413, f"a failure report is at most {MAX_REPORT:,} bytes.")
        try:
            error = (await request.json())["error"]
        except (ValueError, KeyError, TypeError):
            error = None
        if not isinstance(error, str):
            return _refuse(400, 'give JSON {"error": TEXT}.')
        fail(" ".join(error.split())[:MAX_REPORT], party)
        return web.Response(status=204)

    route = "/v1/runs/{run}/messages/{sender}/{receiver}/{kind}"
    app.router.add_post("/v1/runs/{run}/failure", post_failure)
    app.router.add_put(route, put)
    app.router.add_get(route, get)
    app.router.add_get("/v1/status", get_status)
    return app
