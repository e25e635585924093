"""The dealer-free product of one pair (packed Paillier): keyed streams, blocking, shares
against brute-force counts, coins, and the bytes the plan states."""

from __future__ import annotations

import random

import gmpy2
import numpy as np
import pytest

from tests.helpers import onehot_columns
from vertimrf.crypto import paillier as pl
from vertimrf.crypto.paillier_slots import SlotLayout
from vertimrf.crypto.schedule import STREAMS
from vertimrf.errors import ConfigError, MessageError
from vertimrf.product import paillier as pp
from vertimrf.protocol.secure import paillier as pw

BITS = 512
ADULT_A, ADULT_B = [16, 7, 16, 16, 16, 7, 14, 6], [5, 2, 8, 15, 16, 41, 2]  # the plan's sizes
SECRET = bytes(range(32))


@pytest.fixture(scope="module")
def key() -> pl.PrivateKey:
    return pl.generate(BITS, random.Random(11).getrandbits)


@pytest.fixture(scope="module")
def table(key) -> pl.Powers:
    return pl.randomiser_table(key.public)


def _pair(rows: int, we: int, wg: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(-1, we, (rows, 1)), rng.integers(-1, wg, (rows, 1))


def _counts(e, g, we, wg):
    out = np.zeros((wg, we), dtype=np.uint64)
    for a, b in zip(g[:, 0], e[:, 0], strict=True):
        if a >= 0 and b >= 0:
            out[a, b] += 1
    return out


def test_the_streams_are_the_key_schedules_and_bound_to_their_inputs():
    assert {pp.KEY, pp.RANDOMISERS, pp.MASKS} <= set(STREAMS)
    a = pp.stream_key(SECRET, pp.RANDOMISERS, "run", "release-1", "P0->P1")
    assert a == pp.stream_key(SECRET, pp.RANDOMISERS, "run", "release-1", "P0->P1")
    assert a != pp.stream_key(SECRET, pp.RANDOMISERS, "run", "release-2", "P0->P1")
    assert a != pp.stream_key(SECRET, pp.MASKS, "run", "release-1", "P0->P1")
    assert a != pp.stream_key(bytes(32), pp.RANDOMISERS, "run", "release-1", "P0->P1")
    with pytest.raises(ConfigError, match="not a Paillier stream"):
        pp.stream_key(SECRET, "party-noise")


def test_a_run_key_is_the_key_schedules_and_fresh_for_other_inputs():
    key = pp.run_key(SECRET, "run", "A->B", bits=BITS)
    assert key == pp.run_key(SECRET, "run", "A->B", bits=BITS)
    assert key.public.bits == BITS and key.p % 4 == 3 and key.q % 4 == 3
    others = {pp.run_key(SECRET, "run", "B->A", bits=BITS).public.n,
              pp.run_key(SECRET, "run2", "A->B", bits=BITS).public.n,
              pp.run_key(bytes(32), "run", "A->B", bits=BITS).public.n}  # fmt: skip
    assert key.public.n not in others and len(others) == 3
    m = 123456789
    c = key.public.encrypt(m, pl.randomiser_table(key.public).power(99))
    assert key.decrypt(c) == m


@pytest.mark.parametrize(
    ("sizes", "who"),
    [(([3], [5]), 0), (([20, 20], [3]), 1), ((ADULT_A, ADULT_B), 0), ((ADULT_B, ADULT_A), 1),
     (([2, 2], [2, 2]), 0)],
)  # fmt: skip
def test_the_encrypter_costs_fewest_ciphertexts_then_fewest_products(sizes, who):
    """33 slots a ciphertext at max_rows 2^20: Adult's 98 and 89 columns both take 3, so the
    party whose peer's attributes make fewer runs of joint values encrypts (B's 7 make 2
    runs of at most 4,096 values, A's 8 make 3)."""
    layout = SlotLayout.for_rows(1 << 20, 2048)
    widths = (sum(sizes[0]), sum(sizes[1]))
    assert pw.encrypter(layout, widths, sizes) == who


@pytest.mark.parametrize(
    ("rows", "we", "wg", "kappa"), [(1, 1, 1, 40), (70, 9, 6, 20), (50, 30, 3, 30)]
)
def test_shares_sum_to_the_counts_and_the_bytes_are_the_plans(key, table, rows, we, wg, kappa):
    pub, layout = key.public, SlotLayout.for_rows(128, BITS, kappa)
    e, g = _pair(rows, we, wg, rows)
    k_e = pp.stream_key(SECRET, pp.RANDOMISERS, "run", "E")
    k_g = pp.stream_key(SECRET, pp.MASKS, "run", "G")
    cut = rows // 3
    blocks = [
        (0, cut, pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e[:cut], we, 0)),
        (cut, rows, pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e[cut:], we, cut)),
    ]
    whole = pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e, we, 0)
    assert blocks[0][2] + blocks[1][2] == whole  # the same bytes however the rows are blocked
    reply, g_share = pp.masked_reply(pub, table, layout, blocks, g, we, [wg], k_g)
    e_share = pp.encrypter_shares(key, layout, reply, (we, wg))
    np.testing.assert_array_equal(e_share + g_share, _counts(e, g, we, wg))
    assert pw.message_bytes(layout, rows, (we, wg)) == (len(whole), len(reply))


def test_the_owners_tables_give_the_same_rows_as_the_public_ones(key, table):
    layout = SlotLayout.for_rows(64, BITS)
    e, _ = _pair(20, 5, 4, 8)
    k_e = pp.stream_key(SECRET, pp.RANDOMISERS, "run", "owner")
    owner = pp.encrypted_rows(
        key.public, pp.computed(pl.randomiser_table(key), k_e), layout, e, 5, 0
    )
    assert owner == pp.encrypted_rows(key.public, pp.computed(table, k_e), layout, e, 5, 0)


def test_same_inputs_give_the_same_bytes_and_a_changed_key_fresh_ones(key, table):
    pub, layout = key.public, SlotLayout.for_rows(64, BITS)
    e, g = _pair(30, 5, 4, 3)
    k_e, k_g = (pp.stream_key(SECRET, s, "run", "x") for s in (pp.RANDOMISERS, pp.MASKS))
    rows = pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e, 5, 0)
    assert rows == pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e, 5, 0)
    k_e2 = pp.stream_key(SECRET, pp.RANDOMISERS, "run", "y")
    other = pp.encrypted_rows(pub, pp.computed(table, k_e2), layout, e, 5, 0)
    size = pub.ciphertext_bytes
    assert all(rows[i : i + size] != other[i : i + size] for i in range(0, len(rows), size))
    one = pp.masked_reply(pub, table, layout, [(0, 30, rows)], g, 5, [4], k_g)
    two = pp.masked_reply(pub, table, layout, [(0, 30, rows)], g, 5, [4], k_g)
    assert one[0] == two[0] and np.array_equal(one[1], two[1])
    k_g2 = pp.stream_key(SECRET, pp.MASKS, "run", "z")
    three = pp.masked_reply(pub, table, layout, [(0, 30, rows)], g, 5, [4], k_g2)
    assert three[0] != one[0] and not np.array_equal(three[1], one[1])


@pytest.mark.parametrize(("cells", "coins"), [(1, 8), (7, 33), (40, 16)])
def test_coins_give_shares_of_each_cells_centred_xor_sum(key, table, cells, coins):
    pub, layout = key.public, SlotLayout.for_rows(coins, BITS)
    rng = np.random.default_rng(cells)
    a, b = rng.integers(0, 2, (cells, coins)), rng.integers(0, 2, (cells, coins))
    k_e, k_g = (pp.stream_key(SECRET, s, "coins") for s in (pp.RANDOMISERS, pp.MASKS))
    rand, width = pp.computed(table, k_e), layout.slots
    columns = [a[c0 : c0 + width] for c0 in range(0, cells, width)]  # E: a slot column at a time
    rows = b"".join(
        pp.encrypted_rows(pub, rand, layout, pp.coin_rows(col), len(col), j * coins)
        for j, col in enumerate(columns)
    )
    size, total = pub.ciphertext_bytes, coins * layout.per_row(cells)
    cut = total // 3  # G holds one block of E's ciphertexts at a time: any blocking, one reply
    blocks = [(0, cut, rows[: cut * size]), (cut, total, rows[cut * size :])]

    def bits(c0, c1):
        return b[c0:c1]

    reply, g_inner = pp.coin_reply(pub, table, layout, blocks, bits, b.shape, k_g)
    whole = pp.coin_reply(pub, table, layout, [(0, total, rows)], bits, b.shape, k_g)
    assert whole[0] == reply and np.array_equal(whole[1], g_inner)
    e_inner = pp.coin_shares(key, layout, reply, cells)
    np.testing.assert_array_equal(e_inner + g_inner, (a * b).sum(1).astype(np.uint64))
    total = pp.centred_coin_shares(a.sum(1), coins, e_inner, first=True) + (
        pp.centred_coin_shares(b.sum(1), coins, g_inner, first=False)
    )
    np.testing.assert_array_equal(total.view(np.int64), (a ^ b).sum(1) - coins // 2)
    with pytest.raises(ConfigError, match="coin rows"):
        pp.coin_reply(pub, table, layout, blocks[:1], bits, b.shape, k_g)
    with pytest.raises(ConfigError, match="coin rows"):
        pp.coin_reply(pub, table, layout, blocks[1:], bits, b.shape, k_g)


def test_an_aggregator_of_several_attributes_gets_every_cross_count(key, table):
    """G holds 3 attributes (one-hot columns at their offsets, some absent): the shares of
    every one of G's columns against every one of E's sum to the brute-force counts."""
    pub, layout = key.public, SlotLayout.for_rows(128, BITS)
    rng = np.random.default_rng(9)
    sizes, we, rows = [3, 4, 2], 7, 90
    g = onehot_columns(rng, sizes, rows, absent=True)
    e = rng.integers(-1, we, (rows, 1))
    k_e, k_g = (pp.stream_key(SECRET, s, "run", "multi") for s in (pp.RANDOMISERS, pp.MASKS))
    rows_ct = pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e, we, 0)
    reply, g_share = pp.masked_reply(pub, table, layout, [(0, rows, rows_ct)], g, we, sizes, k_g)
    e_share = pp.encrypter_shares(key, layout, reply, (we, sum(sizes)))
    want = np.zeros((sum(sizes), we), dtype=np.uint64)
    for grow, b in zip(g.tolist(), e[:, 0].tolist(), strict=True):
        for a in grow:
            if a >= 0 and b >= 0:
                want[a, b] += 1
    np.testing.assert_array_equal(e_share + g_share, want)


@pytest.mark.parametrize("encrypter_is_lower", [True, False])
def test_round_two_blocks_are_replies_over_singles_and_groups(key, table, encrypter_is_lower):
    """The re-measurement's blocks of a pair (p < q), as the dealer's product shapes them:
    A = p's groups x [q's singles | q's groups] and B = p's singles x q's groups. Each is a
    masked reply of E's rows of one round aggregated by G's columns of the other, so the
    round-1 rows serve again; the shares sum to the brute-force counts either way round."""
    layout, rng = SlotLayout.for_rows(64, BITS), np.random.default_rng(4)
    rows = 50
    singles = {s: [3, 2] for s in "pq"}  # each party's single attributes' sizes
    groups = {"p": [6], "q": [4, 3]}  # each party's round-2 groups (one column set each)
    sizes = {p + k: (singles if k == "1" else groups)[p] for p in "pq" for k in "12"}
    cols = {k: onehot_columns(rng, v, rows) for k, v in sizes.items()}
    widths = {k: sum(v) for k, v in sizes.items()}
    e, g = ("p", "q") if encrypter_is_lower else ("q", "p")

    def cross(g_cols: str, e_cols: str, label: str) -> np.ndarray:
        """G's columns x E's: the product of one reply, both shares summed."""
        k_e = pp.stream_key(SECRET, pp.RANDOMISERS, "round", e_cols)
        k_g = pp.stream_key(SECRET, pp.MASKS, "round", label)
        raw = pp.encrypted_rows(key.public, pp.computed(table, k_e), layout, cols[e_cols],
                                widths[e_cols], 0)  # fmt: skip
        reply, share = pp.masked_reply(key.public, table, layout, [(0, rows, raw)], cols[g_cols],
                                       widths[e_cols], sizes[g_cols], k_g)  # fmt: skip
        return share + pp.encrypter_shares(key, layout, reply, (widths[e_cols], widths[g_cols]))

    def oriented(p_cols: str, q_cols: str) -> np.ndarray:
        """p's columns x q's, from a reply in whichever orientation E and G take."""
        if e == "p":
            return cross(q_cols, p_cols, p_cols + q_cols).T
        return cross(p_cols, q_cols, p_cols + q_cols)

    block_a = np.hstack([oriented("p2", "q1"), oriented("p2", "q2")])
    block_b = oriented("p1", "q2")

    def brute(x: np.ndarray, y: np.ndarray, wx: int, wy: int) -> np.ndarray:
        out = np.zeros((wx, wy), np.uint64)
        for i in range(x.shape[1]):
            for j in range(y.shape[1]):
                np.add.at(out, (x[:, i], y[:, j]), 1)
        return out

    q_all = np.hstack([cols["q1"], cols["q2"] + widths["q1"]])
    np.testing.assert_array_equal(
        block_a, brute(cols["p2"], q_all, widths["p2"], widths["q1"] + widths["q2"])
    )
    np.testing.assert_array_equal(
        block_b, brute(cols["p1"], cols["q2"], widths["p1"], widths["q2"])
    )


def test_a_reply_needs_every_row_once_in_order(key, table):
    pub, layout = key.public, SlotLayout.for_rows(64, BITS)
    e, g = _pair(20, 5, 4, 6)
    k_e, k_g = (pp.stream_key(SECRET, s, "run", "cut") for s in (pp.RANDOMISERS, pp.MASKS))
    rows = [pp.encrypted_rows(pub, pp.computed(table, k_e), layout, e[a:b], 5, a)
            for a, b in ((0, 10), (10, 20))]  # fmt: skip
    for blocks, match in (([(0, 10, rows[0])], "stop at 10 of 20"),
                          ([(10, 20, rows[1]), (0, 10, rows[0])], "as 10:20 after 0"),
                          ([(0, 10, rows[0]), (0, 10, rows[0])], "as 0:10 after 10")):  # fmt: skip
        with pytest.raises(MessageError, match=match):
            pp.masked_reply(pub, table, layout, blocks, g, 5, [4], k_g)


@pytest.mark.parametrize(("cells", "coins"), [(1, 9), (11, 7), (12, 13), (33, 64)])
def test_a_columns_products_by_subset_tables_are_one_at_a_times(cells, coins):
    """G's coin products of one column: by tables of subset products (columns of more than
    11 cells) or one coin at a time, each cell's product is the brute-force one."""
    rng = np.random.default_rng(cells)
    n2 = gmpy2.mpz(2**127 - 1)
    cts = [gmpy2.mpz(int(x)) for x in rng.integers(2, 2**62, coins)]
    bits = rng.integers(0, 2, (cells, coins)).astype(bool)
    acc = [gmpy2.mpz(1)] * (cells + 3)
    pp._multiply_in(acc, 3, bits, cts, n2)
    for c in range(cells):
        want = 1
        for k in range(coins):
            want = want * int(cts[k]) % int(n2) if bits[c, k] else want
        assert acc[3 + c] == want
    assert acc[:3] == [1, 1, 1]


def test_the_plans_count_of_gs_coin_products_is_the_tables_and_one_a_cell():
    """Expected products: 16 tables of 11 and 33 x 15/16 a table for a full column of 64
    coins; one coin at a time (half are 1) for a column of 5 cells."""
    assert pw.coin_products(33, 64, 33) == 16 * (11 + 33 * 15 / 16)
    assert pw.coin_products(5, 8, 33) == 8 * 5 / 2
    assert pw.coin_products(38, 64, 33) == pw.coin_products(33, 64, 33) + 64 * 5 / 2
