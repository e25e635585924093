"""A feature blob: one party's masked features X - U for one peer, encrypted under the
pair's key, written and read by blocks of whole rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from vertimrf.crypto.aead import BufferWriter, decrypt_chunks, encrypt_chunks_to
from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.errors import ChannelError, MessageError
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.cross_noise import COIN_MARGINALS
from vertimrf.protocol.secure.plan import MEASURE, SecurePlan
from vertimrf.protocol.secure.wire import DIGEST_BYTES

#: Packs a piece of ring words (1-D, at most ``wire.PACK_WORDS``) into their low ``size``
#: bytes each, little-endian: ``pack(words, size)``.
Packer = Callable[[np.ndarray, int], np.ndarray]

SLOT_MAP_ROUND = 0  # the slot map's purpose in its associated data (feature blobs: 1 and 2)
COIN_ROUNDS = {1: 3, 2: 4}  # a coin blob's purpose, by the round of the release it serves
REPLY_ROUNDS = {1: 5, 2: 6}  # product "paillier": a reply's purpose, by its round
_PURPOSES = {
    SLOT_MAP_ROUND: b"/secure-slot-map/",
    1: b"/secure-features/",
    2: b"/secure-groups/",
    3: b"/secure-coins/",
    4: b"/secure-group-coins/",
    5: b"/secure-reply/",
    6: b"/secure-group-reply/",
}


def feature_aad(
    context: bytes, sender: str, receiver: str, digest: bytes, round_: int = 1
) -> bytes:
    """Associated data of ``sender``'s masked features of round ``round_`` for
    ``receiver`` in this run."""
    what = _PURPOSES[round_]
    return b"".join((context, what, sender.encode(), b"->", receiver.encode(), b"/", digest))


def seal_features(
    key: bytes,
    features: np.ndarray,
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
) -> bytearray:
    """``sender``'s masked features X - U (ring words, uint32 or uint64) of round
    ``round_`` as a blob only ``receiver`` can open: the digest, then the ciphertext of
    each value's low ``word_bytes`` bytes, little-endian (default: the whole word, i.e. a
    ring of 2^(8 word_bytes)), encrypted straight from the array in blocks (no copy of a
    multi-GB matrix). ``nonce``: see :func:`vertimrf.crypto.aead.encrypt_buffer`."""
    if features.dtype not in (np.uint32, np.uint64):
        raise MessageError(f"masked features are ring words, not {features.dtype}.")
    body = np.ascontiguousarray(features).reshape(1, -1)  # one row: an empty one casts too
    return seal_feature_blocks(
        key, [body], body.shape, context, sender, receiver, digest,
        word=body.dtype.type, nonce=nonce, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip


def seal_feature_blocks(
    key: bytes,
    blocks: Iterable[np.ndarray],
    shape: tuple[int, int],
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    word: type = np.uint64,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
) -> bytearray:
    """:func:`seal_features` of the ``shape`` matrix of ``word``s given as consecutive
    ``blocks`` of whole rows: each is packed and encrypted as it comes, so the matrix never
    exists at once. The same bytes as :func:`seal_features` of the rows stacked."""
    out = BufferWriter(feature_blob_bytes(shape, word, word_bytes))
    write_feature_blocks(
        out, key, blocks, shape, context, sender, receiver, digest,
        word=word, nonce=nonce, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip
    return out.result()


def write_feature_blocks(
    out: Any,
    key: bytes,
    blocks: Iterable[np.ndarray],
    shape: tuple[int, int],
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    word: type = np.uint64,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
    pack: Packer | None = None,
) -> None:
    """The bytes of :func:`seal_feature_blocks`, written to ``out`` (anything with a binary
    ``write``, e.g. a file) as they are made: the blob never exists whole either (its
    length is :func:`feature_blob_bytes`). ``pack`` packs each piece of words (default
    :func:`low_bytes`; a party passes its kernel's)."""
    size = _word_bytes(np.dtype(word).newbyteorder("<"), word_bytes)
    aad = feature_aad(context, sender, receiver, digest, round_)
    chunks = _packed_rows(blocks, shape[1], np.dtype(word), size, pack or low_bytes)
    encrypt_chunks_to(out, key, chunks, shape[0] * shape[1] * size, aad, digest, nonce=nonce)


def feature_blob_bytes(shape: tuple[int, int], word: type, word_bytes: int | None = None) -> int:
    """The length of a feature blob of a ``shape`` matrix of ``word``s (see
    :func:`seal_features`)."""
    size = _word_bytes(np.dtype(word), word_bytes)
    return DIGEST_BYTES + NONCE_BYTES + shape[0] * shape[1] * size + TAG_BYTES


def coin_shape(plan: SecurePlan, p: int, q: int, *, first: bool) -> tuple[int, int]:
    """(cells, coins a cell) of the pair of parties p and q's coins: in the first release
    (``first``; exact) or at most in a re-measurement (any request: the pair's widest cells
    at the coins of twice the nominal noise of the most marginals, plus 2, above any
    request's sigma: the coins' cost is at most 2.5x the Gaussian's, at sigma about 3)."""
    pair = (min(p, q), max(p, q))
    if first:
        return plan.first_coins.get(pair, (0, 0))
    most = min(plan.max_request or COIN_MARGINALS // 2, COIN_MARGINALS // 2)
    sigma = 2.0 * plan.nominal_sigma(MEASURE, most) + 2.0
    return plan.max_cells(*pair), plan.cross_noise.coins(sigma)


def coin_blob_bytes(plan: SecurePlan, sender: str, receiver: str, *, first: bool) -> int:
    """The length of ``sender``'s coin blob to ``receiver`` (a feature blob of cells x coins
    words, :func:`coin_shape`)."""
    p, q = plan.party_index(sender), plan.party_index(receiver)
    return feature_blob_bytes(coin_shape(plan, p, q, first=first), plan.word, plan.word_bytes)


def _packed_rows(
    blocks: Iterable[np.ndarray], width: int, word: np.dtype, size: int, pack: Packer
) -> Iterator[np.ndarray]:
    """The packed values of row ``blocks``, each checked to be ``width`` ``word``s wide."""
    for block in blocks:
        if block.dtype != word or block.ndim != 2 or block.shape[1] != width:
            raise MessageError(
                f"a block of masked features is {block.dtype} {block.shape}, not rows of "
                f"{width} {word} values."
            )
        flat = np.ascontiguousarray(block).reshape(-1)
        for start in range(0, flat.size, wire.PACK_WORDS):
            yield pack(flat[start : start + wire.PACK_WORDS], size)


def _word_bytes(word: np.dtype, word_bytes: int | None) -> int:
    if word_bytes is None:
        return word.itemsize
    if not 1 <= word_bytes <= word.itemsize:
        raise MessageError(f"a {word} value has 1 to {word.itemsize} bytes, not {word_bytes}.")
    return word_bytes


def low_bytes(words: np.ndarray, size: int) -> np.ndarray:
    """The low ``size`` bytes of each of ``words`` (1-D), little-endian (a :data:`Packer`;
    no copy when ``size`` is the whole word)."""
    little = words.astype(words.dtype.newbyteorder("<"), copy=False)
    cells = little.view(np.uint8).reshape(-1, words.dtype.itemsize)[:, :size]
    return np.ascontiguousarray(cells)


def block_rows(width: int) -> int:
    """Rows per block of a feature blob ``width`` values wide, streamed in or out: whole
    rows, about ROW_BLOCK_WORDS values (public: it depends on the width alone)."""
    return max(1, wire.ROW_BLOCK_WORDS // max(1, width))


def widen(piece: Any, count: int, each: int, out: np.ndarray) -> None:
    """``count`` values of ``each`` bytes, little-endian, from ``piece`` (bytes-like) into
    ``out`` (little-endian words, upper bytes zero). Each value but the last few is one
    word-wide load at its offset, its upper bytes masked off: one vectorised pass, not a copy
    of ``each`` bytes at a time; the last ones (whose load would pass the end) byte by byte."""
    size = out.dtype.itemsize
    if each == size:
        out[:count] = np.frombuffer(piece, out.dtype, count)
        return
    whole = max(0, count - -(-size // each) + 1)  # loads that end inside the piece
    if whole:
        loads = np.ndarray((whole,), out.dtype, buffer=piece, strides=(each,))
        np.bitwise_and(loads, out.dtype.type((1 << (8 * each)) - 1), out=out[:whole])
    cells = out[whole:count].view(np.uint8).reshape(-1, size)
    cells[:, :each] = np.frombuffer(piece, np.uint8, (count - whole) * each, whole * each).reshape(
        -1, each
    )
    cells[:, each:] = 0


def open_feature_blocks(
    key: bytes,
    blob: object,
    context: bytes,
    sender: str,
    receiver: str,
    shape: tuple[int, int],
    step: int,
    *,
    word: type = np.uint64,
    round_: int = 1,
    word_bytes: int | None = None,
    hasher: Any = None,
) -> tuple[bytes, Iterator[tuple[int, int, np.ndarray]]]:
    """The sender's record-set digest in ``blob`` and an iterator of its masked features
    (see :func:`open_features`) by blocks of ``step`` whole rows: (r0, r1, rows r0:r1 as
    ``word``s), each valid until the next is read. The size is checked at once; the GCM
    tag only when the iteration ends, which raises ChannelError when the blob is not
    ``sender``'s for ``receiver`` in this run: a caller must discard everything it made of
    the blocks unless the iteration finished. ``hasher`` (a hashlib object) is fed the
    blob's bytes as they are read: once the iteration ends, it holds the whole blob."""
    try:
        view = memoryview(blob).cast("B")  # type: ignore[arg-type]
    except TypeError:
        raise ChannelError(f"the feature blob from {sender!r} is not bytes.") from None
    if len(view) < DIGEST_BYTES:
        raise ChannelError(f"the feature blob from {sender!r} is truncated.")
    digest = bytes(view[:DIGEST_BYTES])
    body = view[DIGEST_BYTES:]
    size = len(body) - NONCE_BYTES - TAG_BYTES
    little = np.dtype(word).newbyteorder("<")
    each = _word_bytes(little, word_bytes)
    rows, width = shape
    want = each * rows * width
    if size != want:
        if size < 0:
            raise ChannelError(f"the feature blob from {sender!r} is truncated.")
        raise MessageError(
            f"the feature blob from {sender!r} holds {size} bytes, not the "
            f"{want} of a {rows} x {width} matrix."
        )
    aad = feature_aad(context, sender, receiver, digest, round_)
    if hasher is not None:
        hasher.update(digest)
    blocks = _blocks(key, body, aad, rows, width, max(1, step), little, each, word, hasher)
    return digest, blocks


def blob_nonce(blob: object) -> bytes:
    """The nonce of a feature blob (public, in its header): a PRF of everything its
    plaintext depends on (see the party's sealing)."""
    view = memoryview(blob).cast("B")  # type: ignore[arg-type]
    if len(view) < DIGEST_BYTES + NONCE_BYTES:
        raise ChannelError("the feature blob is truncated.")
    return bytes(view[DIGEST_BYTES : DIGEST_BYTES + NONCE_BYTES])


def _blocks(
    key: bytes,
    body: memoryview,
    aad: bytes,
    rows: int,
    width: int,
    step: int,
    little: np.dtype,
    each: int,
    word: type,
    hasher: Any = None,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """The row blocks of :func:`open_feature_blocks` (the tag checked after the last)."""
    pieces = decrypt_chunks(key, body, aad, max(1, step * width * each), hasher)
    out = np.zeros((min(step, rows), width), little)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        count = (r1 - r0) * width
        if count:
            widen(next(pieces), count, each, out.reshape(-1))
        yield r0, r1, out[: r1 - r0].astype(word, copy=False)
    for _ in pieces:  # runs to the end: the tag is checked here
        raise ChannelError("the feature blob holds more than its rows.")


def open_features(
    key: bytes,
    blob: object,
    context: bytes,
    sender: str,
    receiver: str,
    shape: tuple[int, int],
    *,
    word: type = np.uint64,
    round_: int = 1,
    word_bytes: int | None = None,
) -> tuple[np.ndarray, bytes]:
    """The masked features (``word``s; the blob holds each one's low ``word_bytes`` bytes,
    see :func:`seal_features`) of round ``round_`` in ``blob`` (bytes or any bytes-like,
    e.g. a memoryview of a mapped file: read in place) and the sender's record-set digest,
    as one array (:func:`open_feature_blocks` reads them by row blocks).

    Raises ChannelError when the blob is not ``sender``'s for ``receiver`` in this run
    (foreign, replayed from another run, or altered).
    """
    digest, blocks = open_feature_blocks(
        key, blob, context, sender, receiver, shape, block_rows(shape[1]),
        word=word, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip
    out: np.ndarray = np.empty(shape, word)
    for r0, r1, block in blocks:
        out[r0:r1] = block
    return out, digest
