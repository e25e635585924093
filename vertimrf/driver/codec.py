"""The protocol's objects as message bytes and back (the file formats the roles write:
party messages, secure releases, the request, and the count party's noisy count)."""

from __future__ import annotations

import io
import json

from vertimrf.errors import MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.schedule import COUNT_BYTES
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.request import MAX_REQUEST_BYTES, parse_request, request_text


def message_bytes(message: PartyMessage) -> bytes:
    """A party's local message (its file's bytes)."""
    buf = io.BytesIO()
    message.save(buf)
    return buf.getvalue()


def read_message(data: bytes | memoryview, config: ProtocolConfig) -> PartyMessage:
    """A local message, checked against the config."""
    return PartyMessage.load(io.BytesIO(data), config)


def release_bytes(release: SecureRelease) -> bytes:
    """A secure release (its file's bytes)."""
    buf = io.BytesIO()
    release.save(buf)
    return buf.getvalue()


def read_release(data: bytes | memoryview, plan: SecurePlan) -> SecureRelease:
    """A secure release, its arrays bounded by the plan."""
    return SecureRelease.load(io.BytesIO(data), plan)


def request_bytes(request: Request, config_hash: str) -> bytes:
    """The server's re-measurement request of the run ``config_hash``."""
    return request_text(config_hash, request).encode("utf-8")


def read_request(data: bytes | memoryview, plan: SecurePlan, config_hash: str) -> Request:
    """A request (bytes, or a large message's mapped view), checked against this run's plan."""
    if len(data) > MAX_REQUEST_BYTES:
        raise MessageError(f"the request: {len(data):,} bytes is too large for a request.")
    try:
        parsed = json.loads(bytes(data))
    except (ValueError, RecursionError):
        raise MessageError("the request: not valid JSON.") from None
    return parse_request(parsed, plan, config_hash, "the request")


def count_bytes(noisy_count: int, config_hash: str) -> bytes:
    """The count party's noisy count for the other parties (public: the server gets it too)."""
    return json.dumps({"config_hash": config_hash, "noisy_count": int(noisy_count)}).encode()


def read_count(data: bytes | memoryview, config_hash: str) -> int:
    """The noisy count in a count message of this run."""
    try:
        if len(data) > COUNT_BYTES:
            raise ValueError("too large")
        fields = json.loads(bytes(data))
        count = fields["noisy_count"]
        if set(fields) != {"config_hash", "noisy_count"} or type(count) is not int:
            raise ValueError("fields")
    except (ValueError, TypeError, KeyError, RecursionError):
        raise MessageError("the count message is malformed: resend the count party's.") from None
    if fields["config_hash"] != config_hash:
        raise MessageError("the count message belongs to another run (config hash).")
    return count
