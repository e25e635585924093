"""Maximal parent sets, the CFS score and the initial marginal set."""

import itertools
import math

import numpy as np
import pytest

from vertimrf.synth.privmrf.initial_set import (
    cfs_scores,
    clique_bayes_net,
    initial_marginals,
    maximal_parent_sets,
)


def _brute_maximal(pool, sizes, budget):
    fits = [
        set(s)
        for k in range(len(pool) + 1)
        for s in itertools.combinations(pool, k)
        if math.prod(sizes[a] for a in s) <= budget
    ]
    return {frozenset(s) for s in fits if not any(s < t for t in fits)}


@pytest.mark.parametrize("seed", range(30))
def test_maximal_parent_sets_match_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sizes = [int(s) for s in rng.integers(2, 9, 10)]
    pool = [int(a) for a in rng.permutation(10)[: int(rng.integers(0, 9))]]
    budget = float(rng.uniform(0.5, 400))
    got = maximal_parent_sets(pool, sizes, budget)
    assert len(got) == len(set(map(frozenset, got)))
    if budget < 1:
        assert got == []
    else:
        assert set(map(frozenset, got)) == _brute_maximal(pool, sizes, budget)


def test_maximal_parent_sets_edge_cases() -> None:
    assert maximal_parent_sets([0, 1], [5, 5], 4) == [()]
    assert maximal_parent_sets([], [5], 10) == [()]
    assert maximal_parent_sets([0], [5], 0.5) == []
    assert sorted(maximal_parent_sets([0, 1, 2], [2, 2, 2], 4)) == [(0, 1), (0, 2), (1, 2)]


def test_cfs_uses_the_actual_parent_ids() -> None:
    # Analysis section 8, item 18: the reference sums tvd over positions 0..k-1, which here
    # would be tvd[0, 1] = 0.9; the parents are 2 and 3 with tvd[2, 3] = 0.1.
    tvd = np.zeros((5, 5))
    tvd[0, 1] = tvd[1, 0] = 0.9
    tvd[2, 3] = tvd[3, 2] = 0.1
    tvd[4, 2] = tvd[2, 4] = 0.3
    tvd[4, 3] = tvd[3, 4] = 0.2
    score = cfs_scores([4], np.array([[2, 3]]), tvd)
    assert score.shape == (1, 1)
    assert score[0, 0] == pytest.approx((0.3 + 0.2) / math.sqrt(2 + 0.1))
    # One parent: the denominator is sqrt(max(1, 1)) = 1.
    assert cfs_scores([4, 0], np.array([[2], [1]]), tvd) == pytest.approx(
        np.array([[0.3, 0.0], [0.0, 0.9]])
    )


def test_clique_bayes_net_respects_the_cell_limit() -> None:
    rng = np.random.default_rng(3)
    sizes = [4, 3, 5, 2, 6, 3]
    tvd = rng.random((6, 6)) * 0.3
    tvd = (tvd + tvd.T) / 2
    recorded = clique_bayes_net(range(6), sizes, 60, tvd, rng)
    children = [c for _, c, _ in recorded]
    assert len(children) == len(set(children))
    placed = set(range(6)) - set(children)
    assert len(placed) >= 1  # the random first attribute
    for attrs, child, _ in recorded:
        assert child in attrs and len(attrs) >= 2
        assert math.prod(sizes[a] for a in attrs) <= 60
        assert set(attrs) - {child} <= placed  # parents come from the placed pool
        placed.add(child)


def test_initial_set_covers_every_attribute() -> None:
    rng = np.random.default_rng(4)
    sizes = [4, 3, 5, 2, 6, 3, 50]
    tvd = rng.random((7, 7)) * 0.3
    tvd = (tvd + tvd.T) / 2
    cliques = [(0, 1, 2, 3), (2, 3, 4, 5), (5, 6)]
    out = initial_marginals(cliques, sizes, 40, tvd, np.random.default_rng(5))
    assert {a for m in out for a in m} == set(range(7))
    assert (6,) in out  # 50 cells > 40: only its 1-way marginal can be measured
    assert len(out) == len(set(out))
    assert not any(set(b) <= set(a) for i, a in enumerate(out) for b in out[i + 1 :])
    for m in out:
        assert m == tuple(sorted(m))
        assert len(m) == 1 or math.prod(sizes[a] for a in m) <= 40
        assert any(set(m) <= set(c) for c in cliques)
    assert out == initial_marginals(cliques, sizes, 40, tvd, np.random.default_rng(5))
