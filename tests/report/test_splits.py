"""VertiBench's attribute splits: exact pcor values, every column given once, the Dirichlet
rule's extremes, and the correlation rule against brute force over every split."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from vertimrf.report.splits import correlation_split, importance_split, pcor, split_score

NAMES = [f"c{j}" for j in range(8)]


def test_pcor_of_exact_blocks():
    assert pcor(np.eye(3)) == pytest.approx(0.0)  # singular values 1, 1, 1
    # All-ones 2x2: singular values 2 and 0, sd sqrt(2), over sqrt(2).
    assert pcor(np.ones((2, 2))) == pytest.approx(1.0)
    assert pcor(np.ones((1, 1))) == 0.0


@pytest.mark.parametrize("alpha", [0.01, 1.0, 100.0])
def test_importance_split_gives_every_column_once_and_no_party_nothing(alpha):
    rng = np.random.default_rng(1)
    for _ in range(50):
        groups = importance_split(NAMES, 3, alpha, rng)
        assert sorted(c for g in groups for c in g) == sorted(NAMES)
        assert all(groups)


def test_importance_split_alpha_sets_the_balance():
    # Dirichlet(0.01, 0.01): a share below 1e-3 with probability about 0.93 (the smaller
    # share is Beta(0.01, 0.01)-distributed), so nearly every split gives one party 7 of 8.
    # Dirichlet(100, 100): shares within 0.5 +- 0.1 (sd 0.035), so parties near 4 each.
    rng = np.random.default_rng(2)
    lopsided = [max(map(len, importance_split(NAMES, 2, 0.01, rng))) for _ in range(200)]
    even = [max(map(len, importance_split(NAMES, 2, 100.0, rng))) for _ in range(200)]
    assert np.mean(np.array(lopsided) == 7) > 0.8
    assert np.mean(even) < 5.5


def _table() -> pd.DataFrame:
    # Two blocks of near-copies: columns 0-2 follow one coin, 3-5 another.
    rng = np.random.default_rng(4)
    coins = rng.integers(0, 2, (2, 500))
    flips = rng.random((6, 500)) < 0.1
    return pd.DataFrame(
        {f"c{j}": np.where(flips[j], 1 - coins[j // 3], coins[j // 3]) for j in range(6)}
    )


def _all_scores(df: pd.DataFrame) -> dict[frozenset, float]:
    corr = df.rank().corr().to_numpy()
    scores = {}
    for first in itertools.combinations(range(6), 3):
        rest = [j for j in range(6) if j not in first]
        scores[frozenset(first)] = split_score(corr, [np.array(first), np.array(rest)])
    return scores


@pytest.mark.parametrize("beta", [0.0, 1.0])
def test_correlation_split_reaches_the_brute_force_extreme(beta):
    df = _table()
    scores = _all_scores(df)
    groups = correlation_split(df, 2, beta, np.random.default_rng(0))
    got = scores[frozenset(int(c[1:]) for c in groups[0])]
    extreme = min(scores.values()) if beta == 0 else max(scores.values())
    assert got == pytest.approx(extreme)
    if beta == 0:  # least correlation across parties: the two blocks apart
        assert {frozenset(g) for g in groups} == {
            frozenset({"c0", "c1", "c2"}),
            frozenset({"c3", "c4", "c5"}),
        }


def test_correlation_split_rejects_beta_outside_0_1():
    with pytest.raises(ValueError, match="beta"):
        correlation_split(_table(), 2, 1.5, np.random.default_rng(0))
