"""The service's message store: every message of the run as a file, and a SQLite
log of them; design notes in docs/design/service.md."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from vertimrf.driver.transport import (
    DirectoryTransport,
    Outgoing,
    Payload,
    file_sha256,
    nbytes,
    sha256_hex,
)
from vertimrf.errors import MissingMessageError, RunChangedError
from vertimrf.io import mark_state_folder
from vertimrf.protocol.schedule import Message

LOG_FILE = "messages.sqlite"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    run TEXT NOT NULL,
    sender TEXT NOT NULL,
    receiver TEXT NOT NULL,
    kind TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (run, sender, receiver, kind)
)
"""
CHUNK = 1 << 20
PRIVATE = 0o600  # the mode of every file of the store


class MessageStore:
    """The messages of the run ``run`` (its config hash) in ``state_dir``."""

    def __init__(self, state_dir: str | os.PathLike, run: str) -> None:
        self.folder = Path(state_dir)
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        mark_state_folder(self.folder, "server")
        self.root = self.folder / "messages"
        self.partial = self.root / ".partial"
        self.partial.mkdir(parents=True, exist_ok=True)
        for leftover in self.partial.iterdir():  # uploads cut off by a restart
            leftover.unlink()
        self.run = run
        self._lock = threading.Lock()
        os.close(os.open(self.folder / LOG_FILE, os.O_WRONLY | os.O_CREAT, PRIVATE))
        for path in [self.folder / LOG_FILE, *self.root.rglob("*")]:  # a store made before
            if path.is_file():
                path.chmod(PRIVATE)
        with self._db() as db:  # its journal takes the log's mode
            db.execute(_SCHEMA)

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.folder / LOG_FILE, timeout=30)

    def path(self, message: Message) -> Path:
        """Where ``message`` is held."""
        return self.root / message.receiver / message.file_name

    def digest(self, message: Message) -> str | None:
        """The SHA-256 of ``message`` if it is held, else None."""
        path = self.path(message)
        if not path.exists():
            return None
        with self._db() as db:
            row = db.execute(
                "SELECT sha256 FROM messages WHERE run = ? AND sender = ? AND receiver = ? "
                "AND kind = ?",
                (self.run, message.sender, message.receiver, message.kind),
            ).fetchone()
        if row is not None:
            return str(row[0])
        digest = file_sha256(path)  # held but not logged: a restart between the two
        self.log(message, digest, path.stat().st_size)
        return digest

    def log(self, message: Message, digest: str, size: int) -> None:
        """Log ``message`` as held (once)."""
        with self._db() as db:
            db.execute(
                "INSERT OR IGNORE INTO messages VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.run, message.sender, message.receiver, message.kind, digest, size,
                 time.time()),
            )  # fmt: skip

    def new_upload(self) -> tuple[Path, BinaryIO]:
        """A fresh partial file for an upload, open for writing."""
        path = self.partial / uuid.uuid4().hex
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
        return path, open(fd, "wb", buffering=0)  # noqa: SIM115 (closed by the caller)

    def commit(self, message: Message, partial: Path, digest: str) -> bool:
        """Hold the whole upload ``partial`` as ``message``: True if new, False if the same
        bytes were held already; MessageError if other bytes are."""
        with self._lock:
            held = self.digest(message)
            if held is not None:
                partial.unlink()
                if held != digest:
                    raise RunChangedError(f"the {message} is already held with other bytes")
                return False
            target = self.path(message)
            target.parent.mkdir(parents=True, exist_ok=True)
            size = partial.stat().st_size
            os.replace(partial, target)
            self.log(message, digest, size)
            return True

    def rows(self) -> list[dict[str, Any]]:
        """Every message logged, oldest first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT sender, receiver, kind, sha256, bytes, time FROM messages WHERE run = ? "
                "ORDER BY time",
                (self.run,),
            ).fetchall()
        keys = ("sender", "receiver", "kind", "sha256", "bytes", "time")
        return [dict(zip(keys, row, strict=True)) for row in rows]


class StoreTransport(DirectoryTransport):
    """The server's transport over the store: its inbox is the store's ``server`` folder,
    its outbox the store (messages it sends are logged); a message that does not arrive
    within ``timeout`` names the party that did not send it, or the parties (of
    ``parties``) that sent nothing at all, who block the others; ``watch`` is called as it
    waits (it raises to end the wait when the run has failed)."""

    def __init__(
        self,
        store: MessageStore,
        timeout: float,
        parties: list[str],
        watch: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(store.root / "server", store.root, timeout=timeout, watch=watch)
        self.store, self.parties = store, parties

    def send(self, message: Message, data: Outgoing) -> None:
        """Write the message into the store and log it."""
        super().send(message, data)
        self.store.log(message, sha256_hex(data), nbytes(data))

    def receive(self, message: Message) -> Payload:
        """The message's bytes (a large one mapped), waiting up to ``timeout``."""
        try:
            return super().receive(message)
        except MissingMessageError:
            senders = {row["sender"] for row in self.store.rows()}
            silent = [p for p in self.parties if p not in senders]
            if silent:  # the party that blocks the others
                raise MissingMessageError(
                    f"party {', '.join(silent)} sent no message within {self.timeout:g} s "
                    "(never joined)."
                ) from None
            raise MissingMessageError(
                f"party {message.sender} sent no {message.kind} within {self.timeout:g} s."
            ) from None
