"""Refinement: candidate pool, round schedule, query sets, selection, error sensitivity."""

import itertools

import numpy as np
import pytest

from vertimrf.mrf.cliques import histogram
from vertimrf.synth.privmrf.budget_split import ERROR_QUERY_SENSITIVITY
from vertimrf.synth.privmrf.refinement import (
    CandidatePool,
    candidate_pool,
    noisy_l1_errors,
    query_set,
    select_and_update,
)
from vertimrf.synth.refine import round_sizes


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
    out = noisy_l1_errors(
        [(0,), (1,)], model.__getitem__, truth.__getitem__, 1e-12, np.random.default_rng(0)
    )
    assert out == pytest.approx([1.0, 6.0])
