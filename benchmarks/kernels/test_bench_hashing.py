"""Record hashing: SipHash-2-4 and xxh64 of every record's 8-byte fingerprint (records/s)."""

import numpy as np
import pytest
from kernel_references import siphash24_numpy, xxh64_numpy

from vertimrf.kernels.hashing import siphash24_array, xxh64_array

SIZES = [pytest.param(10_000, id="10k"), pytest.param(1_000_000, marks=pytest.mark.large, id="1M")]


def _records(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fingerprints of n records and the two key words, the same key for every record."""
    rng = np.random.default_rng(n)
    k0, k1 = rng.integers(0, 2**64, 2, dtype=np.uint64)
    m = rng.integers(0, 2**64, n, dtype=np.uint64)
    return np.full(n, k0), np.full(n, k1), m


@pytest.mark.benchmark(group="hash: SipHash-2-4")
@pytest.mark.parametrize("n", SIZES)
def test_siphash24(pair, n: int) -> None:
    k0, k1, m = _records(n)
    pair(
        kernel=lambda: siphash24_array(k0, k1, m),
        reference=lambda: siphash24_numpy(k0[0], k1[0], m),
        check=np.testing.assert_array_equal,
        items=n,
        unit="records/s",
        reference_name="numpy",
    )


@pytest.mark.benchmark(group="hash: xxh64")
@pytest.mark.parametrize("n", SIZES)
def test_xxh64(pair, n: int) -> None:
    seeds, _, m = _records(n)
    pair(
        kernel=lambda: xxh64_array(seeds, m),
        reference=lambda: xxh64_numpy(seeds[0], m),
        check=np.testing.assert_array_equal,
        items=n,
        unit="records/s",
        reference_name="numpy",
    )
