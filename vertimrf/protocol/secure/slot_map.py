"""A slot map: the server's keyed slots of one party's tokens (partial record sets), a
feature blob of one column that the party's deal opens."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.deal import Deal
from vertimrf.protocol.secure.features import (
    SLOT_MAP_ROUND,
    feature_blob_bytes,
    open_feature_blocks,
    write_feature_blocks,
)
from vertimrf.protocol.seeds import SERVER


def slot_map_bytes(most: int) -> int:
    """The length of every slot map of a run whose parties have at most ``most`` tokens
    (the plan's public max_tokens): the same whatever a party holds."""
    return feature_blob_bytes((most, 1), np.uint64)


def write_slot_map(
    out: Any,
    key: bytes,
    slots: Iterable[np.ndarray],
    count: int,
    most: int,
    context: bytes,
    party: str,
    assignment: bytes,
    nonce: bytes,
) -> bytes:
    """Write ``party``'s slot map to ``out`` (anything with a binary ``write``) as its
    ``slots`` come, by blocks (``count`` slots, int64, in the order of its token list),
    padded with -1 to ``most``: a feature blob of one column (:func:`write_feature_blocks`)
    from the server, under ``key``, its associated data binding it to the run, the party and
    the ``assignment``. Returns the SHA-256 of the padded plaintext (the deal carries it)."""
    plain = hashlib.sha256()

    def blocks() -> Iterator[np.ndarray]:
        written = 0
        for block in slots:
            words = np.ascontiguousarray(block, "<i8")
            written += words.size
            if written > count:
                break
            plain.update(words.data)
            yield words.view(np.uint64).reshape(-1, 1)
        if written != count or count > most:
            raise MessageError(f"{written} slots for a slot map of {count} of at most {most}.")
        pad = np.full(min(wire.PACK_WORDS, most - count), -1, "<i8")
        for start in range(count, most, wire.PACK_WORDS):
            piece = pad[: min(wire.PACK_WORDS, most - start)]
            plain.update(piece.data)
            yield piece.view(np.uint64).reshape(-1, 1)

    write_feature_blocks(
        out, key, blocks(), (most, 1), context, SERVER, party, assignment,
        nonce=nonce, round_=SLOT_MAP_ROUND,
    )  # fmt: skip
    return plain.digest()


def open_slot_map(
    key: bytes,
    blob: object,
    context: bytes,
    party: str,
    deal: Deal,
    most: int,
    step: int = wire.SLOT_BLOCK,
) -> Iterator[np.ndarray]:
    """The slots of ``party``'s slot map ``blob`` (read in place, by blocks of ``step``;
    int64, in the order of its token list): the ``deal``'s count of them, each block valid
    until the next is read. After the last, the -1 padding to ``most``, the plaintext's
    SHA-256 (the deal's) and the tag are checked: MessageError or ChannelError then, and a
    caller discards what it made of the blocks."""
    digest, rows = open_feature_blocks(
        key, blob, context, SERVER, party, (most, 1), step, round_=SLOT_MAP_ROUND
    )
    if not hmac.compare_digest(digest, deal.assignment) or deal.slot_count > most:
        raise MessageError(
            f"the slot map of {party!r} is not the one its deal opens: give the server's "
            "NAME.deal-slots of the same deal."
        )
    plain = hashlib.sha256()
    padding = True
    for r0, r1, block in rows:
        words = block.reshape(-1).view(np.int64)
        plain.update(words.data)
        real = max(0, min(r1, deal.slot_count) - r0)
        padding &= bool(np.all(words[real:] == -1))
        if real:
            yield words[:real]
    if not padding or not hmac.compare_digest(plain.digest(), deal.slot_digest):
        raise MessageError(
            f"the slot map of {party!r} does not match its deal (digest or padding): give the "
            "server's NAME.deal-slots of the same deal."
        )
