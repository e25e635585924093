"""The server's run state, in an embedded SQLite database
(``state_dir/server.sqlite``); design notes in docs/design/service.md."""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from vertimrf.crypto.aead import ReadOnce
from vertimrf.driver.transport import CHUNK, Payload, Stored, file_sha256, write_outgoing
from vertimrf.errors import MessageError
from vertimrf.io import atomic_open, mark_state_folder
from vertimrf.protocol.schedule import Message
from vertimrf.protocol.seeds import SERVER

STATE_FORMAT = "vertimrf-server-driver-state/1"
FILE_NAME = f"{SERVER}.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    format TEXT NOT NULL,
    config_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS parties (
    position INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS steps (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL UNIQUE,
    secure_state BLOB
);
CREATE TABLE IF NOT EXISTS messages (
    step TEXT NOT NULL REFERENCES steps(name),
    direction TEXT NOT NULL CHECK (direction IN ('received', 'sent')),
    sender TEXT NOT NULL,
    receiver TEXT NOT NULL,
    kind TEXT NOT NULL,
    digest TEXT NOT NULL,
    size INTEGER NOT NULL,
    data BLOB,
    PRIMARY KEY (step, direction, sender, receiver, kind)
);
"""


def _digest(data: bytes | bytearray | memoryview) -> str:
    """SHA-256 (hex) of ``data``, read by chunks (a mapped message's pages dropped once
    read, so that a large one is never resident whole)."""
    view = memoryview(data).cast("B")
    h, read = hashlib.sha256(), ReadOnce(view)
    for start in range(0, len(view), CHUNK):
        h.update(view[start : start + CHUNK])
        read.done(start + CHUNK)
    return h.hexdigest()


class ServerState:
    """The server's (or ``role``'s) state for the run ``config_hash`` among ``parties``, in
    ``state_dir``."""

    def __init__(
        self,
        state_dir: str | os.PathLike,
        config_hash: str,
        parties: Sequence[str],
        role: str = SERVER,
    ) -> None:
        folder = Path(state_dir)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)  # private: the server's noisy first release lives here
        mark_state_folder(folder, role)
        self.path = folder / f"{role}.sqlite"
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA foreign_keys = ON")
            with self._transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                run = self._db.execute("SELECT format, config_hash FROM run").fetchall()
                if not run:
                    self._db.execute("INSERT INTO run VALUES (?, ?)", (STATE_FORMAT, config_hash))
                    self._db.executemany(
                        "INSERT INTO parties VALUES (?, ?)", list(enumerate(parties))
                    )
                    run = [(STATE_FORMAT, config_hash)]
        except sqlite3.DatabaseError as exc:
            raise MessageError(f"{self.path}: cannot read the server state ({exc}).") from None
        names = [n for (n,) in self._db.execute("SELECT name FROM parties ORDER BY position")]
        if run != [(STATE_FORMAT, config_hash)] or names != list(parties):
            self.close()
            raise MessageError(
                f"{self.path}: this server state is another run's; give this run's own "
                "server state folder, or an empty one to start the run afresh."
            )

    def close(self) -> None:
        """Close the database."""
        self._db.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A context that commits on success and rolls back on error (``BEGIN IMMEDIATE``)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    @property
    def steps(self) -> list[str]:
        """The names of the steps done, in order."""
        return [n for (n,) in self._db.execute("SELECT name FROM steps ORDER BY position")]

    def record(
        self,
        step: str,
        received: Mapping[Message, Payload],
        sent: Mapping[Message, bytes | bytearray | Stored],
        secure_state: bytes | None = None,
    ) -> None:
        """Record ``step`` as done, with what it received and sent (and the secure server's
        state after it), in one transaction; a Stored message sent (a slot map) is copied
        to a file beside the database, not into it."""
        rows: list[tuple[str, str, str, str, str, str, int, bytes | None]] = [
            (step, "received", m.sender, m.receiver, m.kind, _digest(d), len(d), None)
            for m, d in received.items()
        ]
        for m, d in sent.items():
            if isinstance(d, Stored):
                with atomic_open(self._copy(step, m), "wb") as fh:
                    write_outgoing(fh, d)
                rows.append((step, "sent", m.sender, m.receiver, m.kind, d.sha256, d.size, None))
            else:
                rows.append(
                    (step, "sent", m.sender, m.receiver, m.kind, _digest(d), len(d), bytes(d))
                )
        with self._transaction():
            self._db.execute(
                "INSERT INTO steps (name, secure_state) VALUES (?, ?)", (step, secure_state)
            )
            self._db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def _copy(self, step: str, message: Message) -> Path:
        """Where the copy of a large ``message`` sent in ``step`` is kept."""
        return self.path.parent / "sent" / f"{step}.{message.receiver}.{message.kind}"

    def sent(self, step: str) -> dict[Message, bytes | Stored]:
        """The messages ``step`` sent, read back (a large one: its kept file) and checked
        against their digests."""
        out: dict[Message, bytes | Stored] = {}
        rows = self._db.execute(
            "SELECT sender, receiver, kind, digest, size, data FROM messages "
            "WHERE step = ? AND direction = 'sent' ORDER BY rowid",
            (step,),
        )
        for sender, receiver, kind, digest, size, data in rows:
            message = Message(sender, receiver, kind)
            if data is None:
                path = self._copy(step, message)
                if not path.is_file() or file_sha256(path) != digest:
                    raise MessageError(
                        f"{path}: the kept copy of the {message} was altered or lost; restore "
                        "the state or start the run afresh."
                    )
                out[message] = Stored(path, digest, size)
                continue
            if _digest(data) != digest:
                raise MessageError(
                    f"{self.path}: the kept copy of the {message} was altered; restore the "
                    "state or start the run afresh."
                )
            out[message] = data
        return out

    def secure_state(self, step: str) -> bytes | None:
        """The secure server's state kept with ``step``, if any."""
        row = self._db.execute("SELECT secure_state FROM steps WHERE name = ?", (step,)).fetchone()
        return None if row is None else row[0]
