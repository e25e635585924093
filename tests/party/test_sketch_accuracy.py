"""Accuracy of the whole sketch path (real keyed hashing, registers, DP step, CarEst)."""

import math

import numpy as np
import pytest

from tests.naive import estimate_cardinality
from vertimrf.datasets import load_dataset
from vertimrf.domain import Domain
from vertimrf.experiment import cross_marginal_experiment
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import compute_registers, merge_registers, registers_to_geometric


@pytest.mark.parametrize("gamma", [1.0, 0.5])
def test_union_cardinality_without_noise(gamma):
    """Union of two overlapping random sets of 10^3..10^6 records. The harmonic estimate's
    relative sd is about 1.04/sqrt(t) (more for gamma < 1), so its mean absolute relative
    error is near 0.83*1.04/sqrt(t); the bound 3/sqrt(t) leaves a wide margin."""
    t = 256
    rng = np.random.default_rng(int(gamma * 10))
    one = Domain.from_sizes([1])
    errors = []
    for size in (1_000, 10_000, 100_000, 1_000_000):
        for _ in range(3 if size < 1_000_000 else 2):
            keys = HashKeys.from_secret(rng.bytes(32), t)
            fps = rng.integers(0, 2**63, size, dtype=np.int64).astype(np.uint64)
            a, b = fps[: int(0.7 * size)], fps[int(0.4 * size) :]
            regs = [
                compute_registers(np.zeros((len(x), 1), np.uint8), one, x, keys, hash="xxh64")
                for x in (a, b)
            ]
            merged = registers_to_geometric(merge_registers(*regs), gamma)[:, 0]
            errors.append(abs(estimate_cardinality(merged, gamma) / size - 1))
    assert np.mean(errors) <= 3 / math.sqrt(t)


def test_nltcs_cross_two_way_accuracy_and_accounting():
    """NLTCS as two parties (8 & 8), epsilon = 0.8 for the whole protocol, the paper's sketch
    share 0.36, t = 2000. Mean TVD of the 64 cross 2-way estimates, averaged over 3 fixed seeds
    (the seed-to-seed sd of one run's mean TVD is about 0.003 here; the zCDP mean measured
    0.018 against the 0.035 target), and the paper's accounting formula is clearly worse."""
    df, spec = load_dataset("nltcs")
    names = list(spec.names)
    parties = [names[:8], names[8:]]
    kw = {"epsilon": 0.8, "t": 2000, "sketch_share": 0.36}
    zcdp = [cross_marginal_experiment(df, spec, parties, seed=s, **kw).mean_tvd for s in range(3)]
    paper = [
        cross_marginal_experiment(df, spec, parties, seed=s, accounting="theorem2", **kw).mean_tvd
        for s in range(3)
    ]
    assert np.mean(zcdp) <= 0.035
    assert np.mean(paper) >= 1.5 * np.mean(zcdp)
