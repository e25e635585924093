"""Register building: min-hash registers of t keys over sum(u) value slots (register updates/s:
rows x attributes x t)."""

import numpy as np
import pytest
from kernel_references import registers_numpy, value_groups

from vertimrf.domain import Domain
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import compute_registers

SIZES = [41, 16, 6, 12, 7, 15, 5, 2]  # the domain of Adult's first party (8 columns)


@pytest.mark.benchmark(group="registers: SipHash-2-4")
@pytest.mark.parametrize(
    ("n", "t", "reference_keys"),
    [
        pytest.param(10_000, 2000, 128, id="10k-t2000"),
        pytest.param(1_000_000, 1024, 2, marks=pytest.mark.large, id="1M-t1024"),
    ],
)
def test_registers(pair, n: int, t: int, reference_keys: int) -> None:
    rng = np.random.default_rng(n)
    domain = Domain.from_sizes(SIZES)
    codes = np.stack([rng.integers(0, u, n) for u in SIZES], axis=1).astype(np.uint8)
    fingerprints = rng.integers(0, 2**64, n, dtype=np.uint64)
    keys = HashKeys.from_secret(bytes(range(32)), t)
    groups = value_groups(codes, domain.offsets)
    k0, k1 = keys.k0[:reference_keys], keys.k1[:reference_keys]

    def check(got: np.ndarray, want: np.ndarray) -> None:
        np.testing.assert_array_equal(got[:reference_keys], want)

    pair(
        kernel=lambda: compute_registers(codes, domain, fingerprints, keys, hash="siphash24"),
        reference=lambda: registers_numpy(groups, sum(SIZES), k0, k1, fingerprints),
        check=check,
        items=n * len(SIZES) * t,
        unit="register updates/s",
        reference_name="numpy SipHash + group minimum, values pre-sorted",
        reference_fraction=reference_keys / t,
    )
