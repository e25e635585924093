"""The dealer-assisted cross product: the config's ``product`` "dealer", the
default backend; design notes in docs/design/protocol.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np

from vertimrf.kernels.packing import onehot_minus
from vertimrf.kernels.secure import matmul_tn_u64, onehot_scatter_u64, row_dots_u64
from vertimrf.protocol.masks import RowMask, ShareMask, row_mask, share_mask, share_words
from vertimrf.protocol.secure.plan import Layout, SecurePlan
from vertimrf.protocol.secure.product import Columns, Pair, Received, ReceivedBoth
from vertimrf.protocol.secure.widths import MASK_BLOCK_WORDS

DEAL_BLOCK_WORDS = MASK_BLOCK_WORDS  # mask words of all parties expanded at once (deal)


def _masks(
    plan: SecurePlan, seeds: Sequence[bytes], labels: Sequence[RowMask], widths: Sequence[int]
) -> Iterator[list[np.ndarray]]:
    """Row blocks of the masks expanded from ``seeds`` under ``labels`` (each block: every
    mask's next rows, of its ``widths`` columns), about DEAL_BLOCK_WORDS words at a time."""
    step = max(1, DEAL_BLOCK_WORDS // max(1, sum(widths)))
    for r0 in range(0, plan.rows, step):
        r1 = min(plan.rows, r0 + step)
        yield [
            row_mask(s, label, r0, r1, w, plan.word)
            for s, label, w in zip(seeds, labels, widths, strict=True)
        ]


def mask_features(cols: np.ndarray, mask: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """X - U for the one-hot X given by ``cols`` (in the ring of ``mask``'s words, uint32
    or uint64, which wrap); ``inplace`` overwrites ``mask`` (no second rows x k matrix).
    One pass of :func:`~vertimrf.kernels.packing.onehot_minus`."""
    out = mask if inplace and mask.flags.c_contiguous else np.array(mask, order="C")
    onehot_minus(out, np.ascontiguousarray(cols, np.int64))
    return out


class DealerProduct:
    """The dealer-assisted product (module doc)."""

    def deal(
        self, plan: SecurePlan, seeds_u: Sequence[bytes], seeds_w: Mapping[Pair, bytes]
    ) -> dict[Pair, np.ndarray]:
        """Z_pq = U_p^T U_q - W_pq for every pair (the dealer's one dense product each).

        The masks are expanded block by block of rows (each block of every party's AES-CTR
        stream once, about DEAL_BLOCK_WORDS words in all) and the products summed over the
        blocks, which is exact in the ring: memory stays at one block, not rows x sum(k_p)."""
        out = {
            (p, q): -share_mask(seeds_w[p, q], ShareMask.W, (plan.widths[p], plan.widths[q]))
            for p, q in plan.pairs()
        }
        for masks in _masks(plan, seeds_u, [RowMask.U] * len(seeds_u), plan.widths):
            for p, q in plan.pairs():
                out[p, q] += matmul_tn_u64(masks[p], masks[q])
        return out

    def group_deal(
        self,
        plan: SecurePlan,
        layout: Layout,
        seeds_u: Sequence[bytes],
        seeds_u2: Mapping[Pair, bytes],
        seeds_w2: Mapping[Pair, bytes],
    ) -> dict[Pair, tuple[np.ndarray, np.ndarray]]:
        """For each pair p < q that grows in ``layout``: Z_A = U2_pq^T [U_q | U2_qp] - W_A and
        Z_B = U_p^T U2_qp - W_B, the masks expanded block by block of rows as in
        :meth:`deal`."""
        pairs = [(p, q) for p, q in plan.pairs() if layout.grows(p, q)]
        out = {}
        for p, q in pairs:
            a, b = layout.width(p, q), layout.width(q, p)
            wa = share_mask(seeds_w2[p, q], ShareMask.WA, (a, plan.widths[q] + b))
            wb = share_mask(seeds_w2[p, q], ShareMask.WB, (plan.widths[p], b))
            out[p, q] = (-wa, -wb)
        if not pairs:
            return out
        ends = [key for p, q in pairs for key in ((p, q), (q, p))]
        seeds = list(seeds_u) + [seeds_u2[key] for key in ends]
        m = len(plan.names)
        widths = list(plan.widths) + [layout.width(*key) for key in ends]
        labels = [RowMask.U] * m + [RowMask.U2] * len(ends)
        for masks in _masks(plan, seeds, labels, widths):
            for i, (p, q) in enumerate(pairs):
                g_p, g_q = masks[m + 2 * i], masks[m + 2 * i + 1]
                out[p, q][0][...] += matmul_tn_u64(g_p, np.hstack((masks[q], g_q)))
                out[p, q][1][...] += matmul_tn_u64(masks[p], g_q)
        return out

    def sent(
        self,
        cols: np.ndarray,
        seed: bytes,
        label: RowMask,
        r0: int,
        r1: int,
        width: int,
        word: type,
    ) -> np.ndarray:
        """X - U: the one-hot rows less the mask ``label`` of ``seed`` (uniform to the peer,
        who does not know it)."""
        return mask_features(cols, row_mask(seed, label, r0, r1, width, word), inplace=True)

    def lower_share(
        self, seed_w: bytes, seed_u: bytes, shape: Pair, received: Received, word: type
    ) -> np.ndarray:
        """U_p^T (Y - U_q) + W, block by block of the peer's rows."""
        share = share_mask(seed_w, ShareMask.W, shape).copy()
        for r0, r1, theirs in received:
            share += matmul_tn_u64(row_mask(seed_u, RowMask.U, r0, r1, shape[0], word), theirs)
        return share

    def higher_share(
        self, dealt: np.ndarray, received: Received, columns: Columns, width: int
    ) -> np.ndarray:
        """(X_p - U_p)^T Y + Z: one-hot sums of the peer's rows, block by block."""
        share = dealt.copy()
        for r0, r1, theirs in received:
            share += onehot_scatter_u64(theirs, columns(r0, r1), width)
        return share

    def lower_blocks(
        self,
        seeds: tuple[bytes, bytes, bytes],
        shapes: tuple[Pair, Pair],
        received: ReceivedBoth,
        word: type,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A = U2^T [Y' | Y2'] + W_A (the party's groups' rows) and B = U^T Y2' + W_B (its
        singles against the peer's groups), block by block of the peer's rows."""
        seed_w, seed_u, seed_u2 = seeds
        (wa, cols), (k, wb) = shapes
        block_a = share_mask(seed_w, ShareMask.WA, (wa, cols))
        block_b = share_mask(seed_w, ShareMask.WB, (k, wb))
        for r0, r1, one, two in received:
            block_a += matmul_tn_u64(
                row_mask(seed_u2, RowMask.U2, r0, r1, wa, word), np.hstack((one, two))
            )
            block_b += matmul_tn_u64(row_mask(seed_u, RowMask.U, r0, r1, k, word), two)
        return block_a, block_b

    def higher_blocks(
        self,
        dealt: tuple[np.ndarray, np.ndarray],
        received: ReceivedBoth,
        columns: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
        widths: Pair,
    ) -> tuple[np.ndarray, np.ndarray]:
        """A = X2'^T [Y | Y2] + Z_A and B = X'^T Y2 + Z_B, one-hot sums of the lower
        party's masked rows of both rounds, block by block."""
        k, width = widths
        block_a, block_b = dealt[0].copy(), dealt[1].copy()
        for r0, r1, one, two in received:
            singles, mine = columns(r0, r1)
            shifted = np.where(mine >= 0, mine + k, -1)
            block_a += onehot_scatter_u64(two, np.hstack((singles, shifted)), k + width)
            block_b += onehot_scatter_u64(one, mine, width)
        return block_a, block_b

    def coin_deal(
        self, seeds_c: tuple[bytes, bytes], seed_w: bytes, shape: Pair, word: type
    ) -> np.ndarray:
        """Z = diag(C_p C_q^T) - W_C: each cell's inner product of the two parties' coin
        masks (``shape``: cells, coins a cell), less the lower party's share mask; by blocks
        of cells (about DEAL_BLOCK_WORDS mask words each)."""
        cells, coins = shape
        out = -share_words(seed_w, ShareMask.WC, 0, cells)
        step = max(1, DEAL_BLOCK_WORDS // max(1, coins))
        for c0 in range(0, cells, step):
            c1 = min(cells, c0 + step)
            lower, higher = (row_mask(s, RowMask.C, c0, c1, coins, word) for s in seeds_c)
            out[c0:c1] += _row_dots(lower, higher)
        return out

    def coin_sent(self, bits: np.ndarray, seed: bytes, c0: int, word: type) -> np.ndarray:
        """A party's coins of cells c0: (0 or 1) as sent to its peer: bits - C in the ring
        of ``word`` (which wraps), uniform to the peer, who does not know the mask."""
        cells, coins = bits.shape
        return bits.astype(word) - row_mask(seed, RowMask.C, c0, c0 + cells, coins, word)

    def coin_lower(
        self, bits: np.ndarray, seeds: tuple[bytes, bytes], received: np.ndarray, c0: int,
        word: type,
    ) -> np.ndarray:  # fmt: skip
        """The lower party's share of each cell's centred coin sum, sum(a XOR b) - N/2 =
        sum a + sum b - 2<a, b> - N/2: sum a - N/2 - 2 (<C_p, b - C_q> + W_C). ``seeds``: its
        coin mask's seed and the pair's W seed; ``received``: the peer's b - C_q."""
        (seed_c, seed_w), (cells, coins) = seeds, bits.shape
        mask = row_mask(seed_c, RowMask.C, c0, c0 + cells, coins, word)
        cross = _row_dots(mask, received) + share_words(seed_w, ShareMask.WC, c0, c0 + cells)
        own = bits.sum(axis=1, dtype=np.uint64) - np.uint64(coins // 2)
        return own - np.uint64(2) * cross

    def coin_higher(self, bits: np.ndarray, dealt: np.ndarray, received: np.ndarray) -> np.ndarray:
        """The higher party's share of each cell's centred coin sum: sum b - 2 (<a - C_p, b>
        + Z), from the peer's ``received`` a - C_p and its ``dealt`` Z of those cells."""
        cross = _row_dots(received, bits) + dealt
        return bits.sum(axis=1, dtype=np.uint64) - np.uint64(2) * cross


def _row_dots(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each row's inner product of two matrices as uint64 words, mod 2^64 (the kernel)."""
    return row_dots_u64(np.ascontiguousarray(x), np.ascontiguousarray(y))
