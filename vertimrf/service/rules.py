"""Which messages a party may upload, and how large each may be, from the config alone.

A party uploads only the messages its steps send (``count``, ``blob`` and ``group-blob`` to
its peers; ``commit``, ``local``, ``select``, ``cross`` and ``measure`` to the server, by
method); the
server's own messages (``deal``, ``request``, ``group-deal``) are written by the server's
run, never uploaded. The size limits come from the config's plan
(:func:`~vertimrf.protocol.plan.run_plan`): a round-1 feature blob is exactly its plan size, a
round-2 one at most its cap's; a release or local message at most everything its sender sends in
the run, plus 1 MiB of container headers; a count or commit message 1 KiB. The first bytes of a body
must be its format's (a zip container, or a JSON object for a count): a garbage body is
refused after its first chunk.
"""

from __future__ import annotations

from dataclasses import dataclass

from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.securemsg import MAX_COMMIT_BYTES
from vertimrf.protocol.seeds import SERVER

COUNT_BYTES = 1024
HEADER_SLACK = 1 << 20
ZIP_MAGIC = b"PK\x03\x04"
CONTAINER_KINDS = frozenset({"local", "select", "cross", "measure"})
# Sealed by their sender for their receiver (AES-GCM; the receiver checks the seal when it
# opens them): the service relays them unread, and their bytes are not hashed again on the
# way (TLS guards each hop, the length a cut body); their X-Content-SHA256 is the sender's.
SEALED_KINDS = frozenset({"blob", "group-blob"})
SERVER_KINDS = frozenset({"deal", "request", "group-deal"})


@dataclass(frozen=True)
class Upload:
    """What a party may upload as one message: its size limit (``exact``: its only size)
    and its first bytes."""

    limit: int
    magic: bytes = b""
    exact: bool = False


def uploads(config: ProtocolConfig) -> dict[tuple[str, str, str], Upload]:
    """Every message a party may upload, as (sender, receiver, kind), with its limit."""
    plan = run_plan(config)
    kind = rules(config)
    names = [p.name for p in config.parties]
    out: dict[tuple[str, str, str], Upload] = {}
    for sender in names:
        peers = [q for q in names if q != sender]
        sends = plan.role(sender).sends or int(plan.max_memory)
        release = Upload(sends + HEADER_SLACK, ZIP_MAGIC)
        to_server: tuple[str, ...]
        if kind.selects:
            to_server = ("select", "measure")
        else:
            to_server = ("local", "cross") if kind.secure_product else ("local",)
            if sender == config.count_party:
                for q in peers:
                    out[sender, q, "count"] = Upload(COUNT_BYTES, b"{")
        for k in to_server:
            out[sender, SERVER, k] = release
        if kind.secure_product:
            out[sender, SERVER, "commit"] = Upload(MAX_COMMIT_BYTES, b"{")
            for q in peers:
                out[sender, q, "blob"] = Upload(plan.blob_bytes[sender], exact=True)
                if kind.selects:
                    out[sender, q, "group-blob"] = Upload(plan.group_blob_bytes[sender])
    return out
