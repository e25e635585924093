"""The protocol's objects as message bytes and back (the file formats the roles write:
party messages, secure releases, the request, and the count party's noisy count)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from vertimrf.errors import MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.secure import Request, SecurePlan
from vertimrf.protocol.securemsg import SecureRelease, load_request, save_request

T = TypeVar("T")
_COUNT_BYTES = 1024


def _through_file(write: Callable[[Path], None]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="vertimrf-msg-") as tmp:
        path = Path(tmp) / "message"
        write(path)
        return path.read_bytes()


def _from_file(data: bytes, read: Callable[[Path], T]) -> T:
    with tempfile.TemporaryDirectory(prefix="vertimrf-msg-") as tmp:
        path = Path(tmp) / "message"
        path.write_bytes(data)
        return read(path)


def message_bytes(message: PartyMessage) -> bytes:
    """A party's local message (its file's bytes)."""
    return _through_file(message.save)


def read_message(data: bytes, config: ProtocolConfig) -> PartyMessage:
    """A local message, checked against the config."""
    return _from_file(data, lambda path: PartyMessage.load(path, config))


def release_bytes(release: SecureRelease) -> bytes:
    """A secure release (its file's bytes)."""
    return _through_file(release.save)


def read_release(data: bytes, plan: SecurePlan) -> SecureRelease:
    """A secure release, its arrays bounded by the plan."""
    return _from_file(data, lambda path: SecureRelease.load(path, plan))


def request_bytes(request: Request, config_hash: str) -> bytes:
    """The server's re-measurement request of the run ``config_hash``."""
    return _through_file(lambda path: save_request(path, config_hash, request))


def read_request(data: bytes, plan: SecurePlan, config_hash: str) -> Request:
    """A request, checked against this run's plan."""
    return _from_file(data, lambda path: load_request(path, plan, config_hash))


def count_bytes(noisy_count: int, config_hash: str) -> bytes:
    """The count party's noisy count for the other parties (public: the server gets it too)."""
    return json.dumps({"config_hash": config_hash, "noisy_count": int(noisy_count)}).encode()


def read_count(data: bytes, config_hash: str) -> int:
    """The noisy count in a count message of this run."""
    try:
        if len(data) > _COUNT_BYTES:
            raise ValueError("too large")
        fields = json.loads(data)
        count = fields["noisy_count"]
        if set(fields) != {"config_hash", "noisy_count"} or type(count) is not int:
            raise ValueError("fields")
    except (ValueError, TypeError, KeyError, RecursionError):
        raise MessageError("the count message is malformed: resend the count party's.") from None
    if fields["config_hash"] != config_hash:
        raise MessageError("the count message belongs to another run (config hash).")
    return count
