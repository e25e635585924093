"""Coins through the cross product (``CrossProduct.coin_*``): the two parties' shares of each
cell's centred coin sum, sum(a XOR b) - N/2, are exact in both backends, and the noise they
carry is what every viewer faces whatever it fixes, however the cells are blocked."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from tests.protocol.reference_product import ReferenceProduct
from vertimrf.product.dealer import DealerProduct


def _shares(backend, a, b, seeds, word, step=None):
    """Both parties' shares from their bits ``a`` (lower) and ``b`` (higher), by blocks of
    ``step`` cells (None: one block); ``seeds``: the lower's and the higher's coin mask seeds
    and the pair's W seed."""
    seed_p, seed_q, seed_w = seeds
    dealt = backend.coin_deal((seed_p, seed_q), seed_w, a.shape, word)
    lower, higher, step = [], [], step or max(1, a.shape[0])
    for c0 in range(0, a.shape[0], step):
        c1 = min(a.shape[0], c0 + step)
        to_q = backend.coin_sent(a[c0:c1], seed_p, c0, word)
        to_p = backend.coin_sent(b[c0:c1], seed_q, c0, word)
        lower.append(backend.coin_lower(a[c0:c1], (seed_p, seed_w), to_p, c0, word))
        higher.append(backend.coin_higher(b[c0:c1], dealt[c0:c1], to_q))
    return np.concatenate(lower), np.concatenate(higher)


def _noise(backend, a, b, seeds, word=np.uint64, step=None):
    """The released coin noise of each cell: the shares' sum as a signed integer."""
    lower, higher = _shares(backend, a, b, seeds, word, step)
    total = lower.astype(np.uint64) + higher.astype(np.uint64)
    if word is np.uint32:  # a ring of at most 32 bits: sign-extend from bit 31
        return (total & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32).astype(np.int64)
    return total.view(np.int64)


def _seeds() -> tuple[bytes, bytes, bytes]:
    return secrets.token_bytes(32), secrets.token_bytes(32), secrets.token_bytes(32)


@pytest.mark.parametrize("backend", [DealerProduct(), ReferenceProduct()])
@pytest.mark.parametrize("word", [np.uint32, np.uint64])
@pytest.mark.parametrize(("cells", "coins", "step"), [(1, 2, None), (7, 64, 3), (50, 130, 17)])
def test_the_shares_sum_to_each_cells_centred_xor_count(backend, word, cells, coins, step):
    rng = np.random.default_rng(cells * coins)
    a = rng.integers(0, 2, (cells, coins), dtype=np.uint8)
    b = rng.integers(0, 2, (cells, coins), dtype=np.uint8)
    want = (a ^ b).sum(axis=1).astype(np.int64) - coins // 2
    seeds = _seeds()
    assert np.array_equal(_noise(backend, a, b, seeds, word), want)
    assert np.array_equal(_noise(backend, a, b, seeds, word, step), want)  # blocked the same


def test_what_a_party_sends_is_its_bits_under_a_mask_it_alone_and_the_dealer_know():
    """The dealer backend's coins on the wire differ from the bits and between seeds, and
    the bits come back by removing the mask (so the mask is all that hides them)."""
    backend, rng = DealerProduct(), np.random.default_rng(3)
    bits = rng.integers(0, 2, (40, 64), dtype=np.uint8)
    one, two = (backend.coin_sent(bits, s, 0, np.uint64) for s in (b"x" * 32, b"y" * 32))
    assert not np.array_equal(one, two) and int(one.max()) > 1
    again = backend.coin_sent(np.zeros_like(bits), b"x" * 32, 0, np.uint64)
    assert np.array_equal(one - again, bits.astype(np.uint64))  # sent = bits - mask(seed)


class _NoCrossTerm(DealerProduct):
    """The product with the cross term dropped: each party adds its own coins' centred sum,
    so the shares carry sum a + sum b - N (centred, of variance N/2), half of which each
    party knows."""

    def coin_lower(self, bits, seeds, received, c0, word):
        return bits.sum(axis=1, dtype=np.uint64) - np.uint64(bits.shape[1] // 2)

    def coin_higher(self, bits, dealt, received):
        return bits.sum(axis=1, dtype=np.uint64) - np.uint64(bits.shape[1] // 2)


CELLS, COINS, ROUNDS = 2000, 64, 2
TARGET = COINS / 4  # the variance of Bin(N, 1/2)
# Over M samples of a centred Bin(N, 1/2), the mean of the squares has standard error
# sqrt((E X^4 - (E X^2)^2) / M) with E X^2 = N/4, E X^4 = 3N^2/16 - N/8.
STANDARD_ERROR = np.sqrt((COINS**2 / 8 - COINS / 8) / (CELLS * ROUNDS))


def _faced(backend, fixed: str) -> float:
    """The mean square of the released noise over ROUNDS runs in which the view ``fixed``
    (the lower party's coins and seed, the higher party's, or the dealer's seeds) stays the
    same and all else is drawn afresh (a fixed generator: seed 7)."""
    rng = np.random.default_rng(7)
    a_fixed = rng.integers(0, 2, (CELLS, COINS), dtype=np.uint8)
    b_fixed = rng.integers(0, 2, (CELLS, COINS), dtype=np.uint8)
    seeds_fixed = _seeds()
    squares = []
    for _ in range(ROUNDS):
        a = a_fixed if fixed == "lower" else rng.integers(0, 2, (CELLS, COINS), dtype=np.uint8)
        b = b_fixed if fixed == "higher" else rng.integers(0, 2, (CELLS, COINS), dtype=np.uint8)
        fresh = _seeds()
        seeds = (
            seeds_fixed[0] if fixed in ("lower", "dealer") else fresh[0],
            seeds_fixed[1] if fixed in ("higher", "dealer") else fresh[1],
            seeds_fixed[2] if fixed in ("lower", "dealer") else fresh[2],
        )
        squares.append(_noise(backend, a, b, seeds).astype(np.float64) ** 2)
    return float(np.mean(squares))


@pytest.mark.parametrize("fixed", ["lower", "higher", "dealer"])
def test_each_viewer_faces_the_coins_whole_variance(fixed):
    """With one viewer's randomness fixed, the released noise has mean square N/4 within 3
    standard errors (from theory, above); with the cross term dropped it does not: the
    noise is then sum a + sum b - N, whose mean square is about N/2 (given a party's coins,
    their part is a known offset of mean square N/4; the dealer faces both halves)."""
    assert abs(_faced(DealerProduct(), fixed) - TARGET) <= 3 * STANDARD_ERROR
    assert abs(_faced(_NoCrossTerm(), fixed) - TARGET) > 3 * STANDARD_ERROR


def test_coin_bits_are_the_same_however_the_cells_are_blocked():
    """coin_bits(key, c0, c1, N) is rows c0:c1 of one stream; the bits are fair (a fixed
    key: 20,000 bits, their mean within 4 standard errors of 1/2)."""
    from vertimrf.protocol.masks import coin_bits

    whole = coin_bits(b"k" * 32, 0, 200, 100)
    parts = [coin_bits(b"k" * 32, c0, min(200, c0 + 7), 100) for c0 in range(0, 200, 7)]
    assert whole.shape == (200, 100) and np.array_equal(whole, np.vstack(parts))
    assert set(np.unique(whole)) == {0, 1}
    assert abs(whole.mean() - 0.5) <= 4 * 0.5 / np.sqrt(whole.size)
    assert not np.array_equal(whole, coin_bits(b"j" * 32, 0, 200, 100))
