"""A plain reference cross product, for tests only: a trusted dealer deals each pair a
uniform R (to the lower party) and -R (to the higher), each party sends its one-hot rows
in the clear (under the pairwise key only), and the higher party adds the exact product
(and, for coins, the exact sum of the XORed bits).
The shares sum to X_p^T Y exactly, written with numpy and nothing of the dealer backend's
algebra, so that a run through it checks the seam
(:class:`vertimrf.protocol.secure.product.CrossProduct`), not the masks."""

from __future__ import annotations

import numpy as np

from vertimrf.protocol.masks import ShareMask, share_mask, share_words

NAME = "tests.protocol.reference_product:ReferenceProduct"


def one_hot(cols: np.ndarray, width: int, word: type = np.uint64) -> np.ndarray:
    """The one-hot rows of ``cols`` (-1: no column; a repeated column counts twice)."""
    out = np.zeros((cols.shape[0], width), word)
    for j in range(cols.shape[1]):
        real = cols[:, j] >= 0
        np.add.at(out, (np.flatnonzero(real), cols[real, j]), word(1))
    return out


def _product(rows: np.ndarray, cols: np.ndarray, width: int) -> np.ndarray:
    """rows^T @ one_hot(cols) mod 2^64."""
    return rows.astype(np.uint64).T @ one_hot(cols, width)


class ReferenceProduct:
    """The plain product (module doc)."""

    def deal(self, plan, seeds_u, seeds_w):
        return {
            (p, q): -share_mask(seeds_w[p, q], ShareMask.W, (plan.widths[p], plan.widths[q]))
            for p, q in plan.pairs()
        }

    def group_deal(self, plan, layout, seeds_u, seeds_u2, seeds_w2):
        out = {}
        for p, q in plan.pairs():
            if layout.grows(p, q):
                a, b = layout.width(p, q), layout.width(q, p)
                ra = share_mask(seeds_w2[p, q], ShareMask.WA, (a, plan.widths[q] + b))
                rb = share_mask(seeds_w2[p, q], ShareMask.WB, (plan.widths[p], b))
                out[p, q] = (-ra, -rb)
        return out

    def sent(self, cols, seed, label, r0, r1, width, word):
        return one_hot(cols, width, word)

    def lower_share(self, seed_w, seed_u, shape, received, word):
        for _ in received:  # read to the end: the blob is checked there
            pass
        return share_mask(seed_w, ShareMask.W, shape).copy()

    def higher_share(self, dealt, received, columns, width):
        share = dealt.copy()
        for r0, r1, theirs in received:
            share += _product(theirs, columns(r0, r1), width)
        return share

    def lower_blocks(self, seeds, shapes, received, word):
        for _ in received:
            pass
        (wa, cols), (k, wb) = shapes
        return (
            share_mask(seeds[0], ShareMask.WA, (wa, cols)).copy(),
            share_mask(seeds[0], ShareMask.WB, (k, wb)).copy(),
        )

    def higher_blocks(self, dealt, received, columns, widths):
        k, width = widths
        block_a, block_b = dealt[0].copy(), dealt[1].copy()
        for r0, r1, one, two in received:
            singles, mine = columns(r0, r1)
            both = np.hstack((one_hot(singles, k), one_hot(mine, width)))
            block_a += two.astype(np.uint64).T @ both
            block_b += _product(one, mine, width)
        return block_a, block_b

    def coin_deal(self, seeds_c, seed_w, shape, word):
        return -share_words(seed_w, ShareMask.WC, 0, shape[0])

    def coin_sent(self, bits, seed, c0, word):
        return bits.astype(word)

    def coin_lower(self, bits, seeds, received, c0, word):
        coins = np.uint64(bits.shape[1] // 2)
        return share_words(seeds[1], ShareMask.WC, c0, c0 + bits.shape[0]) - coins

    def coin_higher(self, bits, dealt, received):
        return dealt + (received.astype(np.uint64) ^ bits.astype(np.uint64)).sum(axis=1)
