"""A party's private state for one run, in one folder; design notes in docs/design/service.md."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from vertimrf.driver.transport import (
    Stored,
    Streamed,
    file_sha256,
    nbytes,
    sha256_hex,
    write_outgoing,
)
from vertimrf.errors import MessageError, RunChangedError
from vertimrf.io import atomic_open, atomic_write_text, mark_state_folder, read_json
from vertimrf.protocol.schedule import Message

STATE_FORMAT = "vertimrf-party-driver-state/1"


def default_state_dir(role: str) -> Path:
    """The per-user folder of ``role``'s private state (``$XDG_STATE_HOME/vertimrf/<role>``,
    else ``~/.local/state/vertimrf/<role>``), so that no command depends on the folder it
    was started in."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return Path(base) / "vertimrf" / role


def run_folder(state_dir: str | os.PathLike, config_hash: str) -> Path:
    """The folder of a party's private state for the run ``config_hash`` in ``state_dir``."""
    return Path(state_dir) / config_hash[:16]


class _Hashing:
    """A binary ``write`` to ``fh`` that hashes and counts what passes."""

    def __init__(self, fh: IO[bytes]) -> None:
        self._fh, self.sha256, self.size = fh, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self._fh.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)


class PartyState:
    """The private state of ``party`` in the run ``config_hash`` with data ``data_digest``."""

    def __init__(
        self, state_dir: str | os.PathLike, party: str, config_hash: str, data_digest: str
    ) -> None:
        self.folder = run_folder(state_dir, config_hash)
        self._record = self.folder / "steps.json"
        self._head = {
            "format": STATE_FORMAT,
            "party": party,
            "config_hash": config_hash,
            "data": data_digest,
        }
        self.steps: dict[str, dict[str, str]] = {}
        self.pinned: dict[str, str] = {}  # the digest of each input that must not change
        self.shares_digest: str | None = None
        if self._record.exists():
            data = read_json(self._record, MessageError, "party state record")
            if not isinstance(data, dict) or {k: data.get(k) for k in self._head} != self._head:
                same_run = isinstance(data, dict) and all(
                    data.get(k) == self._head[k] for k in ("format", "party", "config_hash")
                )
                if same_run:  # this party's data changed within the run
                    raise RunChangedError(f"{self._record}: party {party!r}'s data changed")
                raise MessageError(
                    f"{self._record}: this state is another party's or another run's; give "
                    f"{party!r}'s own state folder for this run."
                )
            steps, pinned = data.get("steps"), data.get("pinned", {})
            if not isinstance(steps, dict) or not isinstance(pinned, dict):
                raise MessageError(f"{self._record}: malformed party state record.")
            self.steps = steps
            self.pinned = pinned
            self.shares_digest = data.get("shares")
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)  # private: the shares live here
        mark_state_folder(state_dir, f"party {party}")

    @property
    def shares(self) -> Path:
        """The secure product's private state file (shares and record-set digest)."""
        return self.folder / "secure.state.vmrf"

    def checked_shares(self) -> Path:
        """The shares file, checked against the digest recorded with it (MessageError when
        missing, swapped or altered)."""
        if self.shares_digest is None or not self.shares.exists():
            raise MessageError(
                f"{self.shares}: no shares of this party's release in its state; run "
                "`release` first, with the same state folder."
            )
        if hashlib.sha256(self.shares.read_bytes()).hexdigest() != self.shares_digest:
            raise MessageError(
                f"{self.shares}: not the shares this party's release kept (another party's "
                "or altered); restore them or start the run afresh."
            )
        return self.shares

    def _copy(self, message: Message) -> Path:
        return self.folder / "sent" / f"{message.receiver}.{message.kind}"

    def record(
        self, step: str, outputs: Mapping[Message, bytes | bytearray | Streamed | Stored]
    ) -> dict[Message, Stored]:
        """Keep a copy of ``step``'s outputs, each read from ``outputs`` once (a large one
        may be made when read, and is dropped once written; a Streamed one is written as it
        is made, hashed on the way), then record the step as done; the copies, to be sent."""
        digests, kept = {}, {}
        for message, data in outputs.items():
            path = self._copy(message)
            with atomic_open(path, "wb") as fh:
                if isinstance(data, Streamed):
                    sink = _Hashing(fh)
                    data.write_to(sink)
                    if sink.size != data.size:
                        raise MessageError(
                            f"the {message} wrote {sink.size} bytes, not its stated {data.size}."
                        )
                    digest, size = sink.sha256.hexdigest(), sink.size
                else:
                    write_outgoing(fh, data)
                    digest, size = sha256_hex(data), nbytes(data)
            kept[message] = Stored(path, digest, size)
            digests[f"{message.receiver}.{message.kind}"] = digest
            del data
        self.steps[step] = digests
        if self.shares.exists():
            self.shares_digest = hashlib.sha256(self.shares.read_bytes()).hexdigest()
        record = {
            **self._head, "steps": self.steps, "pinned": self.pinned, "shares": self.shares_digest
        }  # fmt: skip
        atomic_write_text(self._record, json.dumps(record) + "\n")
        return kept

    def pin(self, message: Message, data: bytes | bytearray | memoryview) -> None:
        """Keep the digest of ``message`` (written with the next step recorded); MessageError
        when it was received before in this run with other bytes (another deal)."""
        key, digest = str(message), hashlib.sha256(data).hexdigest()
        if self.pinned.get(key, digest) != digest:
            raise MessageError(
                f"the {message} differs from the one this party used earlier in this run "
                f"(recorded in {self._record}): give the same one (a new one needs a new config)."
            )
        self.pinned[key] = digest

    def sent(self, step: str, sender: str) -> dict[Message, Stored]:
        """The kept copies of the messages ``step`` sent, checked against the record."""
        out = {}
        for key, digest in self.steps[step].items():
            receiver, kind = key.split(".", 1)
            message = Message(sender, receiver, kind)
            path = self._copy(message)
            if not path.exists() or file_sha256(path) != digest:
                raise MessageError(
                    f"{path}: the kept copy of the {message} was altered or lost; "
                    "restore it or start the run afresh."
                )
            out[message] = Stored(path, digest, path.stat().st_size)
        return out
