"""The server's run state, in an embedded SQLite database (``state_dir/server.sqlite``):
the run (its config hash), its parties, and each step done with the digest and size of
every message the server received and sent, the sent bytes themselves, and the secure
server's state after ``select``. A step is recorded in one transaction, so a server killed
mid-step leaves the state of the steps before it; a restarted server resends what a
recorded step sent instead of running it again.

A database of another run (another config hash) is refused.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path

from vertimrf.driver.transport import Payload
from vertimrf.errors import MessageError
from vertimrf.io import mark_state_folder
from vertimrf.protocol.schedule import Message

STATE_FORMAT = "vertimrf-server-driver-state/1"
FILE_NAME = "server.sqlite"

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
    return hashlib.sha256(data).hexdigest()


class ServerState:
    """The server's state for the run ``config_hash`` among ``parties``, in ``state_dir``."""

    def __init__(
        self, state_dir: str | os.PathLike, config_hash: str, parties: Sequence[str]
    ) -> None:
        folder = Path(state_dir)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)  # private: the server's noisy first release lives here
        mark_state_folder(folder, "server")
        self.path = folder / FILE_NAME
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

    def _transaction(self) -> _Commit:
        """A context that commits on success and rolls back on error (``BEGIN IMMEDIATE``)."""
        self._db.execute("BEGIN IMMEDIATE")
        return _Commit(self._db)

    @property
    def steps(self) -> list[str]:
        """The names of the steps done, in order."""
        return [n for (n,) in self._db.execute("SELECT name FROM steps ORDER BY position")]

    def record(
        self,
        step: str,
        received: Mapping[Message, Payload],
        sent: Mapping[Message, bytes | bytearray],
        secure_state: bytes | None = None,
    ) -> None:
        """Record ``step`` as done, with what it received and sent (and the secure server's
        state after it), in one transaction."""
        rows = [
            (step, "received", m.sender, m.receiver, m.kind, _digest(d), len(d), None)
            for m, d in received.items()
        ] + [
            (step, "sent", m.sender, m.receiver, m.kind, _digest(d), len(d), bytes(d))
            for m, d in sent.items()
        ]
        with self._transaction():
            self._db.execute(
                "INSERT INTO steps (name, secure_state) VALUES (?, ?)", (step, secure_state)
            )
            self._db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

    def sent(self, step: str) -> dict[Message, bytes]:
        """The messages ``step`` sent, read back and checked against their digests."""
        out = {}
        rows = self._db.execute(
            "SELECT sender, receiver, kind, digest, data FROM messages "
            "WHERE step = ? AND direction = 'sent' ORDER BY rowid",
            (step,),
        )
        for sender, receiver, kind, digest, data in rows:
            message = Message(sender, receiver, kind)
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


class _Commit:
    """Commits the open transaction on success, rolls it back on error."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> sqlite3.Connection:
        return self._db

    def __exit__(self, kind: object, *rest: object) -> None:
        self._db.execute("ROLLBACK" if kind is not None else "COMMIT")
