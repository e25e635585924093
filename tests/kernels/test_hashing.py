"""Keyed hash kernels are bit-exact against the reference packages and the published vector."""

import numpy as np
import pytest

from tests.kernel_entries import siphash24_shared_message
from vertimrf.kernels.hashing import SIP_LANES, siphash24_array, xxh64_array

siphash24 = pytest.importorskip("siphash24")
xxhash = pytest.importorskip("xxhash")

N_RANDOM = 10_000
EDGE = np.array([0, 1, 2**63 - 1, 2**63, 2**64 - 1], dtype=np.uint64)


def _ref_siphash(k0: int, k1: int, m: int) -> int:
    key = int(k0).to_bytes(8, "little") + int(k1).to_bytes(8, "little")
    digest = siphash24.siphash24(int(m).to_bytes(8, "little"), key=key).digest()
    return int.from_bytes(digest, "little")


def _ref_xxh64(seed: int, m: int) -> int:
    return xxhash.xxh64_intdigest(int(m).to_bytes(8, "little"), seed=int(seed))


def _random_u64(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**64, size=n, dtype=np.uint64, endpoint=False)


def test_siphash_published_vector():
    # Key 00..0f, message 00..07: the reference paper's vector, bytes 62 24 93 9a 79 f5 f5 93.
    key, msg = bytes(range(16)), bytes(range(8))
    assert siphash24.siphash24(msg, key=key).hexdigest() == "6224939a79f5f593"
    k0 = np.array([int.from_bytes(key[:8], "little")], dtype=np.uint64)
    k1 = np.array([int.from_bytes(key[8:], "little")], dtype=np.uint64)
    m = np.array([int.from_bytes(msg, "little")], dtype=np.uint64)
    assert int(siphash24_array(k0, k1, m)[0]) == 0x93F5F5799A932462


def test_siphash_matches_reference_on_random_inputs():
    rng = np.random.default_rng(20240601)
    k0, k1, m = (_random_u64(rng, N_RANDOM) for _ in range(3))
    got = siphash24_array(k0, k1, m)
    want = np.array(
        [_ref_siphash(a, b, c) for a, b, c in zip(k0, k1, m, strict=True)], dtype=np.uint64
    )
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n_keys", [1, SIP_LANES - 1, SIP_LANES, SIP_LANES + 1, 64, 1003])
def test_vector_siphash_matches_reference_for_any_key_count(n_keys):
    # The 8-lane LLVM vector path plus the scalar tail must equal the reference package lane
    # by lane, whatever the count of keys (multiple of SIP_LANES or not).
    rng = np.random.default_rng(20240603 + n_keys)
    k0, k1 = _random_u64(rng, n_keys), _random_u64(rng, n_keys)
    for m in _random_u64(rng, 3):
        want = np.array([_ref_siphash(a, b, m) for a, b in zip(k0, k1, strict=True)], np.uint64)
        np.testing.assert_array_equal(siphash24_shared_message(k0, k1, m), want)


def test_vector_siphash_matches_scalar_kernel_on_many_inputs():
    rng = np.random.default_rng(20240604)
    k0, k1 = _random_u64(rng, 4096), _random_u64(rng, 4096)
    for m in np.concatenate([EDGE, _random_u64(rng, 20)]):
        scalar = siphash24_array(k0, k1, np.full(k0.size, m, dtype=np.uint64))
        np.testing.assert_array_equal(siphash24_shared_message(k0, k1, m), scalar)


def test_xxh64_matches_reference_on_random_inputs():
    rng = np.random.default_rng(20240602)
    seeds, m = _random_u64(rng, N_RANDOM), _random_u64(rng, N_RANDOM)
    got = xxh64_array(seeds, m)
    want = np.array([_ref_xxh64(s, c) for s, c in zip(seeds, m, strict=True)], dtype=np.uint64)
    np.testing.assert_array_equal(got, want)


def test_edge_keys_and_messages():
    k0, k1, m = (a.ravel() for a in np.meshgrid(EDGE, EDGE, EDGE, indexing="ij"))
    sip = np.array(
        [_ref_siphash(a, b, c) for a, b, c in zip(k0, k1, m, strict=True)], dtype=np.uint64
    )
    xxh = np.array([_ref_xxh64(a, c) for a, c in zip(k0, m, strict=True)], dtype=np.uint64)
    np.testing.assert_array_equal(siphash24_array(k0, k1, m), sip)
    np.testing.assert_array_equal(xxh64_array(k0, m), xxh)
