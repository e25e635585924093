"""A party's commit message (its data commitment) and the server's admit message."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from vertimrf.errors import MessageError
from vertimrf.protocol.secure.wire import DIGEST_BYTES

COMMIT_KIND = "vertimrf-secure-commit/1"
_COMMIT_FIELDS = {"format", "config_hash", "party", "commitment"}
MAX_COMMIT_BYTES = 1024


def commit_bytes(config_hash: str, party: str, commitment: bytes) -> bytes:
    """A party's commit message: its data commitment (an HMAC under a key only it holds,
    which reveals nothing of the data) for the run ``config_hash``, as JSON."""
    data = {
        "format": COMMIT_KIND,
        "config_hash": config_hash,
        "party": party,
        "commitment": commitment.hex(),
    }
    return (json.dumps(data, sort_keys=True) + "\n").encode()


def _json_fields(
    data: bytes | bytearray | memoryview, kind: str, want: set[str]
) -> dict[str, Any] | None:
    """The fields of a JSON message of format ``kind`` (exactly ``want``), or None when it
    is not one (oversized or malformed)."""
    raw = bytes(data)
    if len(raw) > MAX_COMMIT_BYTES:
        return None
    try:
        fields = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(fields, dict) or set(fields) != want or fields["format"] != kind:
        return None
    return fields


def read_commit(data: bytes | bytearray | memoryview, config_hash: str, party: str) -> bytes:
    """The commitment in ``party``'s commit message of the run ``config_hash``
    (MessageError when malformed, oversized, another run's or another party's)."""
    fields = _json_fields(data, COMMIT_KIND, _COMMIT_FIELDS)
    if fields is None:
        raise MessageError(f"party {party!r}'s commit message is malformed.")
    if fields["config_hash"] != config_hash or fields["party"] != party:
        raise MessageError(
            f"the commit message from {party!r} is another run's or another party's: give "
            "the one this party made for this run's config."
        )
    try:
        commitment = bytes.fromhex(str(fields["commitment"]))
    except ValueError:
        commitment = b""
    if len(commitment) != DIGEST_BYTES:
        raise MessageError(f"party {party!r}'s commitment is not 32 bytes.")
    return commitment


def commit_sender(data: bytes | bytearray | memoryview, config_hash: str) -> str:
    """The party that a commit message of the run ``config_hash`` names (the message
    checked as :func:`read_commit` does)."""
    fields = _json_fields(data, COMMIT_KIND, _COMMIT_FIELDS)
    if fields is None or not isinstance(fields["party"], str):
        raise MessageError("not a commit message (from `party commit`).")
    read_commit(data, config_hash, fields["party"])
    return fields["party"]


def commit_set_digest(commitments: dict[str, bytes], names: Iterable[str]) -> bytes:
    """The digest of every party's commitment, in the order of ``names``: what binds a
    deal to every party's data (it changes when any party's data does)."""
    h = hashlib.sha256(b"vertimrf/commit-set")
    for name in names:
        h.update(len(name.encode()).to_bytes(8, "little") + name.encode() + commitments[name])
    return h.digest()


ADMIT_KIND = "vertimrf-secure-admit/2"


@dataclass(frozen=True)
class Admit:
    """The server's admit message (partial record sets): the ``digest`` every party keys
    its tokens by (its commitments and every role's public key) and the server's public
    key (``server``, raw), which each party seals its tokens message to."""

    digest: bytes
    server: bytes


def admit_bytes(config_hash: str, admit: Admit) -> bytes:
    """The server's admit message for the run ``config_hash``, as JSON (public)."""
    data = {
        "format": ADMIT_KIND,
        "config_hash": config_hash,
        "admit": admit.digest.hex(),
        "server_key": admit.server.hex(),
    }
    return (json.dumps(data, sort_keys=True) + "\n").encode()


def read_admit(data: bytes | bytearray | memoryview, config_hash: str) -> Admit:
    """The admit message of the run ``config_hash`` (MessageError when malformed or
    another run's)."""
    fields = _json_fields(data, ADMIT_KIND, {"format", "config_hash", "admit", "server_key"})
    try:
        admit = bytes.fromhex(str(fields["admit"])) if fields else b""
        server = bytes.fromhex(str(fields["server_key"])) if fields else b""
    except ValueError:
        admit = server = b""
    if fields is None or len(admit) != DIGEST_BYTES or len(server) != 32:
        raise MessageError("the admit message is malformed: take the server's again.")
    if fields["config_hash"] != config_hash:
        raise MessageError(
            f"the admit message belongs to the run {str(fields['config_hash'])[:16]}, not "
            f"this run {config_hash[:16]}: take this run's admit from the server."
        )
    return Admit(admit, server)
