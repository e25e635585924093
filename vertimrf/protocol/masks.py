"""The PRG streams of method="secure", named once for both sides of the trust
boundary; design notes in docs/design/protocol.md."""

from __future__ import annotations

from enum import Enum

import numpy as np

from vertimrf.crypto.prg import expand


class RowMask(Enum):
    """The labels of the masks of a party's rows."""

    U = b"U"  # round 1: the party's singles, sent to every peer as X - U
    U2 = b"U2"  # round 2: the party's groups toward one peer, sent as G - U2
    C = b"C"  # a release's coins toward one peer, a row a cell, sent as bits - C


class ShareMask(Enum):
    """The labels of the masks of a pair's shares, all expanded from the pair's W seed."""

    W = b"W"  # round 1: the singles' product
    WA = b"WA"  # round 2: the lower party's groups against the peer's singles and groups
    WB = b"WB"  # round 2: the lower party's singles against the peer's groups
    WC = b"WC"  # a release's coin product: each cell's inner product of the two coin masks


def row_mask(seed: bytes, label: RowMask, r0: int, r1: int, width: int, word: type) -> np.ndarray:
    """Rows r0:r1 of the mask ``label`` of ``width`` words a row (``word``: the plan's
    np.uint32 or np.uint64) from ``seed``: a block of its stream, the same words whoever
    expands it and however the rows are blocked."""
    words = expand(seed, label.value, (r1 - r0) * width, start=r0 * width, word=word)
    return words.reshape(r1 - r0, width)


def share_mask(seed: bytes, label: ShareMask, shape: tuple[int, int]) -> np.ndarray:
    """The share mask ``label`` of ``shape`` 64-bit words from the pair's ``seed``."""
    return expand(seed, label.value, shape[0] * shape[1]).reshape(shape)


def share_words(seed: bytes, label: ShareMask, w0: int, w1: int) -> np.ndarray:
    """Words w0:w1 of the share mask ``label`` from the pair's ``seed`` (the same words as
    :func:`share_mask`'s, however they are blocked)."""
    return expand(seed, label.value, w1 - w0, start=w0)


def coin_bits(key: bytes, c0: int, c1: int, coins: int) -> np.ndarray:
    """Rows c0:c1 (cells) of ``coins`` fair bits each (uint8) from ``key``'s stream, read bit
    by bit (least significant first): the same bits however the cells are blocked."""
    b0, b1 = c0 * coins, c1 * coins
    w0, w1 = b0 // 64, -(-b1 // 64)
    words = expand(key, b"coin-bits", w1 - w0, start=w0).astype("<u8", copy=False)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")
    return bits[b0 - 64 * w0 : b1 - 64 * w0].reshape(c1 - c0, coins)


def pad(
    key: bytes, release: str, a: str, b: str, binding: str, shape: tuple[int, int]
) -> np.ndarray:
    """The pad of ``shape`` 64-bit words that hides the (a, b) shares of ``release`` from the
    server, from the pair's key, bound to ``binding``: a digest of everything both shares
    depend on, so that a changed share never gets the same pad."""
    label = f"pad/{release}/{a}/{b}/{binding}".encode()
    return expand(key, label, shape[0] * shape[1]).reshape(shape)
