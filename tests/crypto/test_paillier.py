"""Paillier on gmpy2: keys, encryption, the fixed-base table and the packed slots, against
plain big-integer arithmetic and brute-force counts on small inputs."""

from __future__ import annotations

import random

import gmpy2
import numpy as np
import pytest

from tests.helpers import onehot_columns
from vertimrf.crypto import paillier as pl
from vertimrf.crypto.paillier_slots import (
    JointBuckets,
    SlotLayout,
    aggregate,
    aggregate_joint,
    aggregator_shares,
    decrypt_shares,
    draw_masks,
    encrypt_onehot,
    joint_blocks,
    mask,
)
from vertimrf.errors import ConfigError, KeyMaterialError

BITS = 512  # small keys: the arithmetic is the same at 2048 bits, and the tests stay fast


@pytest.fixture(scope="module")
def key() -> pl.PrivateKey:
    return pl.generate(BITS, random.Random(1).getrandbits)


def test_keys_are_blum_moduli_of_the_asked_size(key):
    assert key.public.bits == BITS and key.p * key.q == key.public.n
    assert key.p % 4 == 3 and key.q % 4 == 3 and key.p != key.q
    assert gmpy2.is_prime(key.p) and gmpy2.is_prime(key.q)
    # h_s is an n-th power of a square's negative: a unit of Z_{n^2}.
    assert gmpy2.gcd(key.public.hs, key.public.n) == 1


def test_generation_is_the_random_source_s():
    a = pl.generate(BITS, random.Random(7).getrandbits)
    b = pl.generate(BITS, random.Random(7).getrandbits)
    c = pl.generate(BITS, random.Random(8).getrandbits)
    assert a == b and a.public.n != c.public.n


@pytest.mark.parametrize("bits", [100, 257])
def test_a_modulus_too_small_or_odd_is_refused(bits):
    with pytest.raises(KeyMaterialError, match="even number"):
        pl.generate(bits)


def test_keys_round_trip_as_versioned_bytes(key):
    assert pl.PrivateKey.from_bytes(key.to_bytes()) == key
    assert pl.PublicKey.from_bytes(key.public.to_bytes()) == key.public
    raw = key.public.to_bytes()
    with pytest.raises(KeyMaterialError, match="this version"):
        pl.PublicKey.from_bytes(raw.replace(b"/v1", b"/v9", 1))
    with pytest.raises(KeyMaterialError, match="truncated"):
        pl.PublicKey.from_bytes(raw[:-1])
    other = pl.generate(BITS, random.Random(2).getrandbits)
    forged = key.to_bytes()[: -len(raw)] + other.public.to_bytes()
    with pytest.raises(KeyMaterialError, match="does not match"):
        pl.PrivateKey.from_bytes(forged)


def test_encryption_is_additive_and_decrypts_by_crt(key):
    pub, rng = key.public, random.Random(3)
    table = pl.randomiser_table(pub)
    for _ in range(20):
        a, b = rng.randrange(pub.n), rng.randrange(pub.n)
        ca = pub.encrypt(a, table.power(rng.getrandbits(pl.EXPONENT_BITS)))
        cb = pub.encrypt(b, table.power(rng.getrandbits(pl.EXPONENT_BITS)))
        assert key.decrypt(ca) == a and key.decrypt(ca * cb % pub.n2) == (a + b) % pub.n
        # The textbook decryption, L(c^lambda mod n^2) mu mod n, agrees with the CRT one.
        lam = gmpy2.lcm(key.p - 1, key.q - 1)
        mu = gmpy2.invert((gmpy2.powmod(pub.n + 1, lam, pub.n2) - 1) // pub.n, pub.n)
        assert (gmpy2.powmod(ca, lam, pub.n2) - 1) // pub.n * mu % pub.n == a
    with pytest.raises(KeyMaterialError, match=r"\[0, n\)"):
        pub.encrypt(int(pub.n), gmpy2.mpz(1))


@pytest.mark.parametrize("window", [1, 4, 8])
def test_the_fixed_base_table_equals_powmod(key, window):
    pub, rng = key.public, random.Random(window)
    table = pl.FixedBase(pub.hs, pub.n2, 64, window)
    for e in [0, 1, (1 << 64) - 1, *(rng.getrandbits(64) for _ in range(10))]:
        assert table.power(e) == gmpy2.powmod(pub.hs, e, pub.n2)
    with pytest.raises(KeyMaterialError, match="range"):
        table.power(1 << 64)


def test_the_owners_crt_tables_give_the_public_tables_values(key):
    """The key owner's randomisers by CRT equal h_s^e mod n^2 from the public table."""
    pub, rng = key.public, random.Random(5)
    owner, public = pl.randomiser_table(key), pl.randomiser_table(pub)
    assert isinstance(owner, pl.OwnerTable) and isinstance(public, pl.FixedBase)
    top = (1 << pl.EXPONENT_BITS) - 1
    for e in [0, 1, top, *(rng.getrandbits(pl.EXPONENT_BITS) for _ in range(20))]:
        assert owner.power(e) == public.power(e) == gmpy2.powmod(pub.hs, e, pub.n2)


def test_exponents_are_the_keys_stream_however_blocked():
    key = bytes(range(32))
    whole = pl.exponents(key, 0, 9)
    assert pl.exponents(key, 4, 5) == whole[4:] and pl.exponents(key, 0, 4) == whole[:4]
    assert all(0 <= e < 1 << pl.EXPONENT_BITS for e in whole) and len(set(whole)) == 9
    assert pl.exponents(bytes(32), 0, 9) != whole
    with pytest.raises(KeyMaterialError, match="32-byte"):
        pl.exponents(b"short", 0, 1)


def test_ciphertexts_round_trip_and_corrupt_ones_are_refused(key):
    pub = key.public
    cts = [pub.encrypt(i, gmpy2.mpz(1)) for i in range(5)]
    raw = pl.ciphertexts_to_bytes(pub, cts)
    assert len(raw) == 5 * pub.ciphertext_bytes and pl.ciphertexts_from_bytes(pub, raw) == cts
    with pytest.raises(KeyMaterialError, match="bytes each"):
        pl.ciphertexts_from_bytes(pub, raw[:-1])
    with pytest.raises(KeyMaterialError, match="outside"):
        pl.ciphertexts_from_bytes(pub, b"\xff" * pub.ciphertext_bytes)


def test_the_slot_layout_leaves_room_for_count_and_mask():
    layout = SlotLayout.for_rows(1 << 20, 2048)
    assert layout.count_bits == 21 and layout.slot_bits == 62 and layout.slots == 33
    assert layout.per_row(100) == 4 and layout.per_row(1) == 1
    # Every slot's count + mask stays below 2^slot_bits: no carry into the next slot.
    assert (1 << layout.count_bits) + (1 << layout.mask_bits) < 1 << layout.slot_bits
    assert layout.slots * layout.slot_bits <= 2048 - 2
    with pytest.raises(ConfigError, match="lower max_rows"):
        SlotLayout.for_rows(1 << 30, 2048)


def _brute(g: np.ndarray, e: np.ndarray, wg: int, we: int) -> np.ndarray:
    out = np.zeros((wg, we), dtype=np.uint64)
    for grow, erow in zip(g.tolist(), e.tolist(), strict=True):
        for a in grow:
            for b in erow:
                if a >= 0 and b >= 0:
                    out[a, b] += 1
    return out


@pytest.mark.parametrize(
    ("rows", "sizes_e", "sizes_g", "kappa"),
    [(1, [1], [1], 40), (60, [3, 4], [5], 20), (90, [20, 7], [2, 3], 30), (40, [33], [4, 4], 40)],
)
def test_packed_shares_sum_to_the_brute_force_cross_counts(key, rows, sizes_e, sizes_g, kappa):
    """E encrypts, G aggregates and masks, E decrypts: the shares sum to every cross count
    (mod 2^64), with absent values (-1), several ciphertexts a row and several attributes."""
    pub, rng = key.public, np.random.default_rng(rows)
    table = pl.randomiser_table(pub)
    layout = SlotLayout.for_rows(4 * rows, BITS, kappa)

    e, g = (onehot_columns(rng, sizes, rows, absent=True) for sizes in (sizes_e, sizes_g))
    we, wg = sum(sizes_e), sum(sizes_g)
    per = layout.per_row(we)
    rand = pl.randomisers(table, bytes(32), 0, rows * per)
    cts = encrypt_onehot(pub, layout, e, we, rand)
    half = rows // 2  # two blocks of rows into the same accumulators
    acc = aggregate(pub, cts[: half * per], per, g[:half], wg)
    acc = aggregate(pub, cts[half * per :], per, g[half:], wg, acc)
    masks = draw_masks(layout, bytes(range(32)), (wg, we))
    assert masks.max() < 1 << layout.mask_bits
    masked = mask(pub, layout, acc, masks, pl.randomisers(table, bytes([5] * 32), 0, len(acc)))
    shares = decrypt_shares(key, layout, masked, (wg, we))
    np.testing.assert_array_equal(shares + aggregator_shares(masks), _brute(g, e, wg, we))


def test_slot_inputs_out_of_range_are_refused(key):
    layout = SlotLayout.for_rows(16, BITS)
    pub = key.public
    with pytest.raises(ConfigError, match=r"\[-1, 3\)"):
        encrypt_onehot(pub, layout, np.array([[3]]), 3, [gmpy2.mpz(1)])
    with pytest.raises(ConfigError, match="randomisers"):
        encrypt_onehot(pub, layout, np.array([[0], [1]]), 3, [gmpy2.mpz(1)])
    with pytest.raises(ConfigError, match="ciphertexts"):
        aggregate(pub, [gmpy2.mpz(1)], 1, np.array([0, 1]), 2)


@pytest.mark.parametrize(
    ("sizes", "limit", "runs"),
    [([5, 2, 8, 15, 16, 41, 2], 4096, [[0, 1, 2, 3], [4, 5, 6]]),
     ([16, 7, 16, 16, 16, 7, 14, 6], 4096, [[0, 1, 2], [3, 4, 5], [6, 7]]),
     ([5000, 3], 4096, [[0], [1]]), ([1], 2, [[0]]), ([], 10, [])],
)  # fmt: skip
def test_joint_blocks_are_runs_within_the_limit(sizes, limit, runs):
    assert joint_blocks(sizes, limit) == runs


@pytest.mark.parametrize(
    ("rows", "sizes", "limit"), [(1, [1], 4096), (60, [3, 4, 2, 5], 30), (90, [7, 1, 6], 4096),
                                 (50, [2, 2, 2, 2, 2], 9), (40, [40, 3], 10)],
)  # fmt: skip
def test_joint_aggregation_gives_the_same_accumulators(key, rows, sizes, limit):
    """Bucketing rows by joint values first gives the very integers of the plain loop."""
    pub, rng = key.public, np.random.default_rng(rows + limit)
    layout = SlotLayout.for_rows(4 * rows, BITS, 20)
    g = onehot_columns(rng, sizes, rows, absent=True)
    we = 40
    per = layout.per_row(we)
    e = rng.integers(-1, we, rows)
    rand = pl.randomisers(pl.randomiser_table(pub), bytes(32), 0, rows * per)
    cts = encrypt_onehot(pub, layout, e, we, rand)
    plain = aggregate(pub, cts, per, g, sum(sizes))
    assert aggregate_joint(pub, cts, per, g, sizes, limit=limit) == plain
    half = rows // 2  # in two blocks of rows, into the same accumulators ...
    acc = aggregate_joint(pub, cts[: half * per], per, g[:half], sizes, limit=limit)
    assert aggregate_joint(pub, cts[half * per :], per, g[half:], sizes, acc, limit) == plain
    buckets = JointBuckets(pub, per, sizes, limit)  # ... or into the same buckets
    buckets.add(cts[: half * per], g[:half])
    buckets.add(cts[half * per :], g[half:])
    assert buckets.accumulators() == plain
    bad = g.copy()
    bad[0, 0] = sizes[0] if len(sizes) > 1 else -2  # a column of the next attribute
    with pytest.raises(ConfigError, match="outside"):
        aggregate_joint(pub, cts, per, bad, sizes, limit=limit)
