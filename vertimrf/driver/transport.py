"""The seam between the roles: named messages, as bytes, from one role to
another; design notes in docs/design/service.md."""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from vertimrf.crypto.aead import BufferWriter
from vertimrf.driver.waits import WaitNotices
from vertimrf.errors import (
    ConfigError,
    MessageError,
    MissingMessageError,
    RunChangedError,
    RunFailedError,
)
from vertimrf.io import atomic_open
from vertimrf.protocol.schedule import Message
from vertimrf.protocol.seeds import SERVER

# Polling a folder: the first wait, and the longest (the wait doubles up to it).
FIRST_POLL = 0.01
MAX_POLL = 0.5
# A received message of at least this many bytes is a read-only view of its mapped file.
MAP_BYTES = 1 << 20
# A received message: bytes, or a read-only view of a mapped file (see map_file).
Payload = bytes | memoryview
CHUNK = 1 << 20  # bytes per read of a Stored file
FAILURE_SUFFIX = ".failure"  # a role's word that the run failed (DirectoryTransport)
MAX_FAILURE = 2000  # characters of a failure's reason


@dataclass(frozen=True)
class Stored:
    """A message's bytes kept in a file, with their SHA-256 (hex) and length: sent from
    the file in chunks, so a sender never holds a large message whole."""

    path: Path
    sha256: str
    size: int

    def read(self) -> bytes:
        """The file's bytes, whole."""
        return self.path.read_bytes()


def _linked(source: Path, path: Path) -> bool:
    """Whether ``path`` is now a hard link to ``source`` (made under a temporary name, then
    renamed over ``path``): False where the two folders are on other file systems or the
    file system has no links, and the caller copies. A kept file is written once and never
    changed in place, so the two names cannot drift apart."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.link")
    try:
        os.link(source, tmp)
    except OSError:
        return False
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return True


@dataclass(frozen=True)
class Streamed:
    """A step's output of ``size`` bytes that ``write_to(out)`` writes to a binary file as
    it is made (a feature blob sealed block by block): a party with a state writes it to its
    kept copy while hashing it, so that it never exists whole; :meth:`read` makes it in
    memory, for a role that keeps no copy. Never handed to a transport."""

    size: int
    write_to: Callable[[Any], None]

    def read(self) -> bytearray:
        """The bytes, whole."""
        sink = BufferWriter(self.size)
        self.write_to(sink)
        return sink.result()


# What a role sends: bytes, or a Stored file.
Outgoing = bytes | bytearray | memoryview | Stored


def nbytes(data: Outgoing) -> int:
    """The length of what is sent."""
    return data.size if isinstance(data, Stored) else memoryview(data).nbytes


def sha256_hex(data: Outgoing) -> str:
    """The SHA-256 (hex) of what is sent (a Stored file's, as recorded)."""
    return data.sha256 if isinstance(data, Stored) else hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
    return h.hexdigest()


def write_outgoing(fh: IO[bytes], data: Outgoing) -> None:
    """Write what is sent to the binary file ``fh`` (a Stored file copied in chunks)."""
    if isinstance(data, Stored):
        with open(data.path, "rb") as source:
            shutil.copyfileobj(source, fh, CHUNK)
    else:
        fh.write(data)


class Transport(Protocol):
    """Delivers named messages between the roles of one run."""

    def send(self, message: Message, data: Outgoing) -> None:
        """Deliver ``data`` as ``message`` (again: a no-op if the bytes are the same)."""
        ...

    def receive(self, message: Message) -> Payload:
        """The bytes of ``message`` (a large one may be a read-only view of a mapped file,
        unmapped when the view is dropped; receiving it again maps it again, reading
        nothing new); :class:`MissingMessageError` if it does not arrive in time."""
        ...

    def flush(self) -> None:
        """Wait until every message sent is delivered (a transport that delivers in
        ``send`` has nothing to wait for)."""
        ...


def map_file(path: Path) -> Payload:
    """A file's bytes: read whole below :data:`MAP_BYTES`, else a read-only view of the
    file mapped (its pages read when touched, released when the view is dropped)."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < MAP_BYTES:
            return fh.read()
        return memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))


def _refuse_other(message: Message) -> MessageError:
    return RunChangedError(
        f"the {message} was already sent with other bytes (a step re-run sends what it sent first)"
    )


class InProcessTransport:
    """Every role of a run in one process: messages are held in memory. A message that
    has not been sent raises :class:`MissingMessageError` at once (the in-process runner then runs
    another role's step first)."""

    def __init__(self) -> None:
        self._messages: dict[Message, bytes] = {}

    def send(self, message: Message, data: Outgoing) -> None:
        """Hold ``data`` for ``message``'s receiver."""
        old = self._messages.get(message)
        if old is not None:
            if sha256_hex(old) != sha256_hex(data):
                raise _refuse_other(message)
            return
        self._messages[message] = data.read() if isinstance(data, Stored) else bytes(data)

    def flush(self) -> None:
        """Nothing to wait for: ``send`` delivered."""

    def receive(self, message: Message) -> bytes:
        """The bytes sent as ``message``."""
        try:
            return self._messages[message]
        except KeyError:
            raise MissingMessageError(f"the {message} has not been sent yet.") from None


class DirectoryTransport:
    """One role's inbox and outbox folders.

    ``send`` writes ``outbox/<receiver>/<sender>.<kind>`` atomically (whole or not at all);
    ``receive`` reads ``inbox/<sender>.<kind>``, polling until it appears or ``timeout``
    seconds pass (then :class:`MissingMessageError`), calling ``watch`` (if given; it may
    raise to end the wait) on each poll and saying what it waits for through ``notices``.
    When every role's outbox is one shared folder and its inbox that folder's subfolder of
    its name, the roles need no courier. ``max_bytes`` bounds a message read.

    A failed run: :meth:`report_failure` writes ``outbox/<r>/<role>.failure`` (the reason,
    one line) for each role ``r`` in ``tell``; a wait that finds a ``<sender>.failure`` in
    the inbox stops with :class:`RunFailedError` and its reason, and a later
    :meth:`report_failure` relays that failure, under its sender's name, to the others.
    """

    def __init__(
        self,
        inbox: str | os.PathLike,
        outbox: str | os.PathLike,
        *,
        timeout: float = 0.0,
        max_bytes: int = 1 << 40,
        watch: Callable[[], None] | None = None,
        notices: WaitNotices | None = None,
        role: str | None = None,
        tell: Sequence[str] = (),
    ) -> None:
        if not timeout >= 0:
            raise ConfigError(f"timeout must be a non-negative number of seconds; got {timeout}.")
        self.inbox, self.outbox = Path(inbox), Path(outbox)
        self.timeout, self.max_bytes = float(timeout), int(max_bytes)
        self.watch, self.notices = watch, notices
        self.role, self.tell = role, tuple(tell)
        self.told: tuple[str, str] | None = None  # (sender, reason) of a failure found

    def report_failure(self, error: str) -> None:
        """Tell every role in ``tell`` that this role's run failed, and why; or, when the
        failure was another role's (found in a wait), relay its reason under its name."""
        sender, line = self.told or (self.role, " ".join(error.split())[:MAX_FAILURE])
        for receiver in self.tell:
            if receiver != sender:
                with atomic_open(self.outbox / receiver / f"{sender}{FAILURE_SUFFIX}", "wb") as fh:
                    fh.write(line.encode("utf-8") + b"\n")

    def _check_failures(self) -> None:
        """RunFailedError when a role told this one that the run failed."""
        for path in sorted(self.inbox.glob(f"*{FAILURE_SUFFIX}")):
            sender = path.name.removesuffix(FAILURE_SUFFIX)
            reason = path.read_bytes()[:MAX_FAILURE].decode("utf-8", "replace").strip()
            self.told = sender, reason
            where = "at the server" if sender == SERVER else f"at party {sender}"
            raise RunFailedError(f"the run has failed {where}: {reason}")

    def __repr__(self) -> str:
        return f"DirectoryTransport(inbox={str(self.inbox)!r}, outbox={str(self.outbox)!r})"

    def send(self, message: Message, data: Outgoing) -> None:
        """Write ``data`` to the receiver's folder in the outbox (unless those very bytes
        are already there; a Stored file is hard-linked on one file system, else copied)."""
        path = self.outbox / message.receiver / message.file_name
        if path.exists():
            same = path.stat().st_size == nbytes(data)
            if not same or file_sha256(path) != sha256_hex(data):
                raise _refuse_other(message)
            return
        if isinstance(data, Stored) and _linked(data.path, path):
            return
        with atomic_open(path, "wb") as fh:
            write_outgoing(fh, data)

    def flush(self) -> None:
        """Nothing to wait for: ``send`` wrote the file."""

    def receive(self, message: Message) -> Payload:
        """The message's bytes from the inbox (a large message mapped, see
        :func:`map_file`), waiting up to ``timeout`` seconds."""
        path = self.inbox / message.file_name
        if not path.exists():
            said = lambda t: f"waiting for the {message} in {path} ({t:.0f} s)"  # noqa: E731
            notices = self.notices.waiting(said) if self.notices else contextlib.nullcontext()
            with notices:
                self._wait_for(message, path)
        size = path.stat().st_size
        if size > self.max_bytes:
            raise MessageError(
                f"{path}: {size:,} bytes is more than the {self.max_bytes:,} a message may hold."
            )
        return map_file(path)

    def _wait_for(self, message: Message, path: Path) -> None:
        """Poll until ``path`` exists; MissingMessageError after the time-out."""
        deadline = time.monotonic() + self.timeout
        wait = FIRST_POLL
        while not path.exists():
            self._check_failures()
            if self.watch is not None:
                self.watch()
            left = deadline - time.monotonic()
            if left <= 0:
                raise MissingMessageError(
                    f"{path}: the {message} did not arrive within {self.timeout:g} s; check "
                    f"that {message.sender} runs and that its outbox reaches this inbox."
                )
            time.sleep(min(wait, left))
            wait = min(2 * wait, MAX_POLL)
