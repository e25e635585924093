"""LocEnc registers and geometric values against plain Python / numpy references."""

import math
from fractions import Fraction

import numba
import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, KeyMaterialError, RecordIDError
from vertimrf.kernels.hashing import siphash24_array, xxh64_array
from vertimrf.kernels.registers import KEY_BLOCK, _update_slot, geometric_table
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import (
    EMPTY_REGISTER,
    compute_registers,
    merge_registers,
    registers_to_geometric,
)
from vertimrf.privacy.fm import geometric_thresholds, max_geometric_value

siphash24 = pytest.importorskip("siphash24")
xxhash = pytest.importorskip("xxhash")

SECRET = bytes(range(100, 132))
EMPTY = int(EMPTY_REGISTER)

# (rows, domain sizes, keys): empty table, one row, one key, partial key blocks,
# several whole blocks, and a domain that needs uint16 codes.
SHAPES = [
    (0, [3, 2], 5),
    (1, [4], 1),
    (57, [5, 1, 3], 70),
    (400, [7, 3, 9, 2], 2 * KEY_BLOCK),
    (300, [300, 2], 33),
]


def _table(rng, n, sizes):
    codes = np.stack([rng.integers(0, s, n) for s in sizes], axis=1)
    dtype = np.uint8 if max(sizes) <= 256 else np.uint16
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    return codes.astype(dtype), Domain.from_sizes(sizes), fps


def _pure_python_registers(codes, sizes, fps, keys, hash_name):
    """Reference straight from the definition, hashing with the reference packages."""
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    regs = [[EMPTY] * int(offsets[-1]) for _ in range(keys.t)]
    for i in range(keys.t):
        k0, k1 = int(keys.k0[i]), int(keys.k1[i])
        key = k0.to_bytes(8, "little") + k1.to_bytes(8, "little")
        for r, fp in enumerate(fps):
            msg = int(fp).to_bytes(8, "little")
            if hash_name == "siphash24":
                h = int.from_bytes(siphash24.siphash24(msg, key=key).digest(), "little")
            else:
                h = xxhash.xxh64_intdigest(msg, seed=k0)
            for j in range(len(sizes)):
                s = int(offsets[j] + codes[r, j])
                regs[i][s] = min(regs[i][s], h)
    return np.array(regs, dtype=np.uint64).reshape(keys.t, int(offsets[-1]))


def _numpy_registers(codes, domain, fps, keys, hash_name):
    """Vectorised reference: one hash column per key, then a scatter-min per attribute."""
    t, n = keys.t, fps.size
    regs = np.full((t, sum(domain.sizes)), EMPTY_REGISTER, dtype=np.uint64)
    for i in range(t):
        k0 = np.full(n, keys.k0[i], dtype=np.uint64)
        if hash_name == "siphash24":
            h = siphash24_array(k0, np.full(n, keys.k1[i], dtype=np.uint64), fps)
        else:
            h = xxh64_array(k0, fps)
        for j, off in enumerate(domain.offsets):
            np.minimum.at(regs[i], off + codes[:, j].astype(np.int64), h)
    return regs


@pytest.mark.parametrize("hash_name", ["siphash24", "xxh64"])
@pytest.mark.parametrize(("n", "sizes", "t"), SHAPES[:3])
def test_small_tables_match_pure_python(hash_name, n, sizes, t):
    rng = np.random.default_rng(n + t)
    codes, domain, fps = _table(rng, n, sizes)
    keys = HashKeys.from_secret(SECRET, t)
    got = compute_registers(codes, domain, fps, keys, hash=hash_name)
    want = _pure_python_registers(codes, sizes, fps, keys, hash_name)
    assert got.dtype == np.uint64 and got.shape == (t, sum(sizes))
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("hash_name", ["siphash24", "xxh64"])
@pytest.mark.parametrize(("n", "sizes", "t"), SHAPES)
def test_tables_match_numpy_reference(hash_name, n, sizes, t):
    rng = np.random.default_rng(1000 + n + t)
    codes, domain, fps = _table(rng, n, sizes)
    keys = HashKeys.from_secret(SECRET, t)
    got = compute_registers(codes, domain, fps, keys, hash=hash_name)
    np.testing.assert_array_equal(got, _numpy_registers(codes, domain, fps, keys, hash_name))
    unused = np.setdiff1d(np.arange(sum(sizes)), np.unique(codes + domain.offsets))
    assert np.all(got[:, unused] == EMPTY_REGISTER)


def test_default_hash_is_siphash_and_code_types_do_not_matter():
    rng = np.random.default_rng(5)
    codes, domain, fps = _table(rng, 200, [6, 4])
    keys = HashKeys.from_secret(SECRET, 20)
    want = compute_registers(codes, domain, fps, keys, hash="siphash24")
    np.testing.assert_array_equal(compute_registers(codes, domain, fps, keys), want)
    bounds = np.append(domain.offsets, sum(domain.sizes))
    for variant in (codes.astype(np.int64), codes.astype(np.uint16), pd.DataFrame(codes)):
        np.testing.assert_array_equal(compute_registers(variant, bounds, fps, keys), want)
    read_only = codes.copy()
    read_only.setflags(write=False)
    np.testing.assert_array_equal(compute_registers(read_only, domain, fps, keys), want)


def _high_half_ties(seed: int, count: int) -> list[tuple[int, int]]:
    """Pairs of messages whose xxh64 under ``seed`` agree on the top 32 bits (birthday search)."""
    rng = np.random.default_rng(seed)
    msgs = rng.integers(0, 2**64, 400_000, dtype=np.uint64)
    h = xxh64_array(np.full(msgs.size, seed, dtype=np.uint64), msgs)
    top = h >> np.uint64(32)
    order = np.argsort(top, kind="stable")
    same = np.flatnonzero(top[order][1:] == top[order][:-1])
    pairs = [(int(msgs[order[i]]), int(msgs[order[i + 1]])) for i in same[:count]]
    assert len(pairs) == count
    return pairs


@pytest.mark.parametrize("lane", [0, 37])
def test_ties_in_the_high_half_keep_the_exact_minimum(lane):
    """End to end: two records whose hashes tie on the high half resolve to the exact minimum."""
    k0 = np.arange(1, 65, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    seed = int(k0[lane])
    keys = HashKeys(k0, np.arange(64, dtype=np.uint64))
    for a, b in _high_half_ties(seed, 3):
        ha, hb = (xxhash.xxh64_intdigest(m.to_bytes(8, "little"), seed=seed) for m in (a, b))
        assert ha >> 32 == hb >> 32 and ha != hb
        for first, second in ((a, b), (b, a)):
            fps = np.array([first, second], dtype=np.uint64)
            regs = compute_registers(
                np.zeros((2, 1), np.uint8), Domain.from_sizes([1]), fps, keys, hash="xxh64"
            )
            assert int(regs[lane, 0]) == min(ha, hb)


@pytest.mark.parametrize("seed", range(4))
def test_narrow_update_is_exact_when_one_lane_ties_on_the_high_half(seed):
    """Slot update: lanes whose new hash is larger in the high half must not hide a lane that
    ties on the high half and is smaller in the low half (or one that is smaller outright)."""
    rng = np.random.default_rng(seed)
    slots, lanes = 3, KEY_BLOCK
    hi = rng.integers(1, 2**31, (slots, lanes), dtype=np.uint64)
    full = (hi << np.uint64(32)) | rng.integers(1, 2**31, (slots, lanes), dtype=np.uint64)
    top = (full >> np.uint64(32)).astype(np.uint32)
    s = 1
    h = full[s] + (np.uint64(1) << np.uint64(32))  # every lane larger in the high half
    lane = int(rng.integers(lanes))
    # Same high half and 1 below / 1 above in the low half, or one high-half step below / above.
    h[lane] = int(full[s, lane]) + [-1, 1, -(2**32), 2**32][seed]
    want = full.copy()
    want[s] = np.minimum(full[s], h)
    _update_slot(full, top, s, h, (h >> np.uint64(32)).astype(np.uint32), np.uint64(0))
    np.testing.assert_array_equal(full, want)
    np.testing.assert_array_equal(top, (want >> np.uint64(32)).astype(np.uint32))


def test_shards_merge_to_the_single_pass_result():
    rng = np.random.default_rng(11)
    codes, domain, fps = _table(rng, 1000, [5, 8, 3])
    keys = HashKeys.from_secret(SECRET, 150)
    whole = compute_registers(codes, domain, fps, keys)
    cuts = [0, 0, 317, 318, 800, 1000]  # includes an empty and a one-row shard
    shards = [
        compute_registers(codes[a:b], domain, fps[a:b], keys)
        for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    ]
    np.testing.assert_array_equal(merge_registers(*shards), whole)
    perm = rng.permutation(1000)
    np.testing.assert_array_equal(compute_registers(codes[perm], domain, fps[perm], keys), whole)


def test_thread_count_does_not_change_the_result():
    rng = np.random.default_rng(12)
    codes, domain, fps = _table(rng, 500, [4, 6])
    keys = HashKeys.from_secret(SECRET, 5 * KEY_BLOCK + 3)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = compute_registers(codes, domain, fps, keys)
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = compute_registers(codes, domain, fps, keys)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(one, two)


def _exact_geometric(h: int, gamma: float) -> int:
    """G = ceil(-log_{1+gamma}(h / 2**64)) with exact rationals: largest k with
    h * (1 + gamma)**(k - 1) < 2**64 (h = 0 is capped one above h = 1)."""
    if h == EMPTY:
        return 0
    base = 1 + Fraction(gamma)
    k, value = 1, Fraction(max(h, 1))
    while value * base < 2**64:
        value *= base
        k += 1
    return k + (h == 0)


def _log_geometric(h: np.ndarray, gamma: float) -> np.ndarray:
    u = h.astype(np.float64) / 2.0**64
    return np.ceil(-np.log(u) / math.log1p(gamma)).astype(np.int64)


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.3])
def test_geometric_values_match_the_log_formula(gamma):
    rng = np.random.default_rng(int(gamma * 10))
    # Register-like values: spread over all magnitudes, like minima of many hashes.
    # (Exact threshold hits, where float logs can round the wrong way, are tested below.)
    shifts = rng.integers(0, 40, (300, 400)).astype(np.uint64)
    h = np.maximum(rng.integers(1, 2**64, (300, 400), dtype=np.uint64) >> shifts, np.uint64(1))
    got = registers_to_geometric(h, gamma)
    assert got.dtype == np.uint8 and got.shape == h.shape
    np.testing.assert_array_equal(got.astype(np.int64), _log_geometric(h, gamma))


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.3, 0.2])
def test_geometric_values_are_exact_at_the_thresholds(gamma):
    thr = [int(x) for x in geometric_thresholds(gamma)]
    special = {0, 1, 2, 3, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 2, EMPTY}
    for c in thr[:: max(1, len(thr) // 20)] + thr[-3:]:
        special |= {c - 1, c, c + 1}
    values = np.array(sorted(special), dtype=np.uint64).reshape(1, -1)
    got = registers_to_geometric(values, gamma)[0]
    want = [_exact_geometric(int(v), gamma) for v in values[0]]
    assert got.tolist() == want
    assert int(got.max()) == max_geometric_value(gamma)


def test_gamma_one_uses_leading_zeros_consistent_with_the_table():
    thr = geometric_thresholds(1.0)
    assert [int(x) for x in thr] == [2**k for k in range(63, 0, -1)]
    rng = np.random.default_rng(3)
    h = rng.integers(0, 2**64, (50, 70), dtype=np.uint64)
    h >>= rng.integers(0, 64, (50, 70)).astype(np.uint64)
    h[0, :3] = [0, EMPTY, 1]
    clz = registers_to_geometric(h, 1.0)
    np.testing.assert_array_equal(clz, geometric_table(h, np.array(thr)))
    assert clz[0, :3].tolist() == [65, 0, 64]
    assert max_geometric_value(1.0) == 65


def test_threshold_table_is_cached_and_read_only():
    assert geometric_thresholds(0.5) is geometric_thresholds(0.5)
    with pytest.raises(ValueError):
        geometric_thresholds(0.5)[0] = 1


@pytest.mark.parametrize("gamma", [0.0, -0.5, 1.5, float("nan"), 0.1, "1", True])
def test_bad_gamma_is_rejected(gamma):
    with pytest.raises(ConfigError):
        registers_to_geometric(np.zeros((2, 2), dtype=np.uint64), gamma)


def test_input_validation():
    rng = np.random.default_rng(4)
    codes, domain, fps = _table(rng, 10, [3, 4])
    keys = HashKeys.from_secret(SECRET, 3)
    bad_codes = codes.astype(np.int64)
    bad_codes[2, 1] = 4
    with pytest.raises(DomainError, match="Attribute 1 has 1 rows"):
        compute_registers(bad_codes, domain, fps, keys)
    bad_codes[2, 1] = -1
    with pytest.raises(DomainError, match="Attribute 1"):
        compute_registers(bad_codes, domain, fps, keys)
    with pytest.raises(DomainError, match="2-D"):
        compute_registers(codes[:, 0], domain, fps, keys)
    with pytest.raises(DomainError, match="2-D"):
        compute_registers(codes.astype(np.float64), domain, fps, keys)
    with pytest.raises(DomainError, match="last domain size"):
        compute_registers(codes, domain.offsets, fps, keys)
    with pytest.raises(DomainError, match="columns"):
        compute_registers(codes, Domain.from_sizes([3, 4, 5]), fps, keys)
    with pytest.raises(RecordIDError):
        compute_registers(codes, domain, fps.astype(np.int64), keys)
    with pytest.raises(RecordIDError):
        compute_registers(codes, domain, fps[:-1], keys)
    with pytest.raises(KeyMaterialError):
        compute_registers(codes, domain, fps, b"secret")
    with pytest.raises(ConfigError, match="hash must be one of"):
        compute_registers(codes, domain, fps, keys, hash="md5")
    regs = compute_registers(codes, domain, fps, keys)
    with pytest.raises(ConfigError):
        merge_registers(regs, regs[:, :-1])
    with pytest.raises(ConfigError):
        merge_registers()
    with pytest.raises(ConfigError):
        registers_to_geometric(regs.astype(np.int64))
