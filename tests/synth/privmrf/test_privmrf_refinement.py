"""Refinement: candidate pool, round schedule, query sets, selection, error sensitivity."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from vertimrf.errors import ConfigError
from vertimrf.mrf.cliques import histogram
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.mechanisms import quantum_scale, rounded_sensitivity
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.synth.privmrf.budget_split import ERROR_QUERY_SENSITIVITY
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.refinement import (
    CandidatePool,
    candidate_pool,
    noisy_l1_errors,
    query_set,
    rounded_l1_error,
    select_and_update,
)
from vertimrf.synth.refine import round_sizes


def _exact_rounded(model: np.ndarray, truth: np.ndarray, scale: int) -> int:
    """floor(s ||model - truth||_1 + 1/2) in rationals (the floats taken exactly)."""
    total = sum(
        abs(Fraction(float(m)) - int(t)) for m, t in zip(model.ravel(), truth.ravel(), strict=True)
    )
    return math.floor(scale * total + Fraction(1, 2))


def test_candidate_pool_by_hand() -> None:
    sizes = [2, 3, 4, 5]
    pool = candidate_pool([(0, 1, 2), (2, 3)], sizes, max_cells=10, max_arity=6)
    # Clique (0,1,2): subsets of size 1..2; 2x3=6 and 2x4=8 pass, 3x4=12 does not -> 5
    # candidates, weight 9/5 each. Clique (2,3): size 1 only -> 2 candidates, weight 4/2.
    expected = {(0,): 1.8, (1,): 1.8, (2,): 1.8 + 2.0, (0, 1): 1.8, (0, 2): 1.8, (3,): 2.0}
    assert pool.weights == pytest.approx(expected)
    small = candidate_pool([(0, 1, 2)], sizes, max_cells=10, max_arity=1, exclude=[(1,)])
    assert small.weights == pytest.approx({(0,): 3.0, (2,): 3.0})


def test_round_sizes() -> None:
    assert round_sizes(12, 8) == [2, 2, 2, 2, 1, 1, 1, 1]
    assert round_sizes(3, 8) == [1, 1, 1]
    assert round_sizes(0, 4) == []
    assert round_sizes(5, 1) == [5]


def test_query_set() -> None:
    small = CandidatePool({(0,): 1.0, (1,): 2.0})
    assert query_set(small, 400, np.random.default_rng(0)) == [(0,), (1,)]
    big = CandidatePool({(i, j): 1.0 + i for i, j in itertools.combinations(range(40), 2)})
    q = query_set(big, 100, np.random.default_rng(1))
    assert len(q) == len(set(q)) <= 100 and set(q) <= set(big.weights)
    assert q == query_set(big, 100, np.random.default_rng(1))


def test_select_and_update() -> None:
    pool = CandidatePool({(0,): 1.0, (1,): 1.0, (2,): 1.0, (3,): 1.0, (4,): 1.0})
    queries = [(0,), (1,), (2,), (3,)]
    chosen = select_and_update(pool, queries, np.array([5.0, 9.0, 1.0, 3.0]), 1)
    assert chosen == [(1,)]
    # The two lowest errors, (2,) and (3,), get half weight; unqueried (4,) is untouched.
    assert pool.weights == {(0,): 1.0, (2,): 0.5, (3,): 0.5, (4,): 1.0}
    assert select_and_update(pool, [(0,)], np.array([1.0]), 0) == []
    assert select_and_update(pool, [(0,), (4,)], np.array([1.0, 2.0]), 5) == [(4,), (0,)]


def test_error_query_sensitivity_by_brute_force() -> None:
    # ||model - h(D)||_1 moves by at most 1 when one record is added (one cell of h by 1).
    rng = np.random.default_rng(2)
    sizes = [3, 2]
    codes = np.column_stack([rng.integers(0, s, 30) for s in sizes])
    model = rng.random((3, 2)) * 10
    base = np.abs(model - histogram(codes, (0, 1), sizes)).sum()
    for rec in itertools.product(range(3), range(2)):
        bigger = np.vstack([codes, rec])
        change = abs(np.abs(model - histogram(bigger, (0, 1), sizes)).sum() - base)
        assert change <= ERROR_QUERY_SENSITIVITY + 1e-12


def test_noisy_l1_errors_without_noise() -> None:
    truth = {(0,): np.array([1.0, 2.0]), (1,): np.array([3.0, 3.0])}
    model = {(0,): np.array([2.0, 2.0]), (1,): np.array([0.0, 0.0])}
    noise = FitNoise(PrivacyLedger(), SeededSampler(0), None)
    # sigma 1e-12: s = 2**20, noise parameter ~1e-6, so every draw is 0.
    out = noisy_l1_errors([(0,), (1,)], model.__getitem__, truth.__getitem__, 1e-12, noise)
    assert out.tolist() == [1.0, 6.0]


@pytest.mark.parametrize("scale", [1, 2, 1024, 2**20])
def test_rounded_l1_error_is_exact(scale: int) -> None:
    rng = np.random.default_rng(5)
    for size in (1, 7, 300):
        model = rng.random(size) * rng.choice([1e-3, 1.0, 1e6], size)
        truth = rng.integers(0, 50, size).astype(np.float64)
        assert rounded_l1_error(model, truth, scale) == _exact_rounded(model, truth, scale)
    # Ties at a half (resolved in rationals, half up) and sums whose float total rounds
    # onto a half although the exact one is not.
    half = np.array([0.25, 0.25, 0.0])
    assert rounded_l1_error(half, np.zeros(3), 2) == 1  # 2 * 0.5 = 1
    assert rounded_l1_error(np.array([0.25]), np.zeros(1), 2) == 1  # 0.5 rounds up
    assert rounded_l1_error(np.array([0.25]), np.ones(1), 2) == 2  # 1.5 rounds up
    tiny = np.array([0.5, 2.0**-60, 0.25, 0.25])  # exact total 1 + 2**-60
    assert rounded_l1_error(tiny, np.zeros(4), 1) == 1
    near = np.array([0.5, 2.0**-60])  # total just above 0.5: its float sum is 0.5
    assert rounded_l1_error(near, np.zeros(2), 1) == 1
    below = np.array([0.5, 2.0**-60])  # |0.5 - 1| + |2**-60 - 0| = 0.5 + 2**-60 -> 1
    assert rounded_l1_error(below, np.array([1.0, 0.0]), 1) == 1
    under = np.array([1.5, 2.0**-60])  # |1.5 - 1| + |2**-60 - 1| = 1.5 - 2**-60 -> 1
    assert rounded_l1_error(under, np.array([1.0, 1.0]), 1) == 1
    with pytest.raises(ConfigError, match="power of two"):
        rounded_l1_error(half, np.zeros(3), 3)


@pytest.mark.parametrize("scale", [1, 2, 8, 1024])
def test_rounded_error_query_sensitivity_by_brute_force(scale: int) -> None:
    # round(s ||m - h(D)||_1) moves by at most ceil(s * 1) = s when one record is added,
    # for every table of n <= 3 records on a 2 x 2 domain, against models with fractional
    # cells (mechanisms.py). Rounding can exceed s times the real change (checked).
    bound = rounded_sensitivity(ERROR_QUERY_SENSITIVITY, scale)
    assert bound == scale
    cells = list(itertools.product(range(2), range(2)))
    models = [np.array([[0.3, 1.7], [2.49, 0.5]]), np.array([[1 / 3, 0.0], [1.25, 2 / 7]])]
    worst, beyond = 0, False
    for model in models:
        for n in range(0, 4):
            for rows in itertools.combinations_with_replacement(cells, n):
                base = histogram(np.array(rows, dtype=np.int64).reshape(n, 2), (0, 1), [2, 2])
                r0 = rounded_l1_error(model, base, scale)
                for rec in cells:
                    bigger = base.copy()
                    bigger[rec] += 1
                    change = abs(rounded_l1_error(model, bigger, scale) - r0)
                    real = abs(np.abs(model - bigger).sum() - np.abs(model - base).sum())
                    beyond |= change > scale * real + 1e-9
                    worst = max(worst, change)
    assert worst <= bound
    assert beyond


def test_noisy_errors_lie_on_the_public_grid_and_are_charged_by_hand() -> None:
    # sigma = 3: the smallest power of two s with 3 s >= 2**10 is 512 (3 * 256 = 768).
    # Rounded errors have sensitivity ceil(512 * 1) = 512, the noise parameter is 1536, so
    # each of the 2 queries costs 512**2 / (2 * 1536**2) = 1/18: the continuous 1 / (2 * 9).
    rng = np.random.default_rng(6)
    truth = {(0,): rng.integers(0, 9, 5).astype(float), (1,): rng.integers(0, 9, 3).astype(float)}
    model = {q: rng.random(t.shape) * 9 for q, t in truth.items()}
    noise = FitNoise(PrivacyLedger(), SeededSampler(7), "alice")
    out = noisy_l1_errors([(0,), (1,)], model.__getitem__, truth.__getitem__, 3.0, noise, "r1")
    assert quantum_scale(3.0) == 512
    assert np.array_equal(out * 512, np.rint(out * 512))
    (release,) = noise.ledger.releases
    assert (release.mechanism, release.count, release.party) == (
        "privmrf.error_queries",
        2,
        "alice",
    )
    assert release.params == {
        "sensitivity": 512,
        "sigma": 1536.0,
        "sampler": "discrete_gaussian",
        "scale": 512,
    }
    assert release.rho == pytest.approx(2 / 18, rel=1e-15)
