"""VertiBench's attribute splits (Wu et al., "VertiBench: Advancing Feature Distribution
Diversity in Vertical Federated Learning Benchmarks", 2023), written from its published rule;
the ``vertibench`` package itself needs torch, shap and pymoo, too heavy for a report.

- Importance split, parameter alpha > 0: draw party shares p ~ Dirichlet(alpha, ..., alpha),
  give each party one column drawn at random, then each other column to party i with
  probability p_i. The columns are exchangeable, so the expected importance each party holds
  is proportional to p: a small alpha gives one party most of the columns (and importance), a
  large alpha an even split.
- Correlation split, parameter beta in [0, 1]: with C the Spearman correlation matrix of the
  columns and parties of (near-)equal size, the score of a split is the mean over parties i of
  the mean over parties j != i of pcor(C[j, i]) - pcor(C[i, i]), where pcor of a block is the
  standard deviation of its singular values over sqrt(its smaller side). The split sought has
  the score beta * max + (1 - beta) * min, the extremes over all splits; VertiBench finds the
  extremes and the target with a genetic algorithm (BRKGA), here a seeded local search of
  single swaps from random starts does it. beta = 1: the columns most correlated across
  parties rather than within; beta = 0: the least.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd


def importance_split(
    names: list[str], parties: int, alpha: float, rng: np.random.Generator
) -> list[list[str]]:
    """The importance split of ``names`` over ``parties`` (each gets at least one column)."""
    shares = rng.dirichlet([alpha] * parties)
    first = rng.choice(len(names), size=parties, replace=False)
    owner = rng.choice(parties, size=len(names), p=shares / shares.sum())
    owner[first] = np.arange(parties)
    return [[n for n, o in zip(names, owner, strict=True) if o == i] for i in range(parties)]


def pcor(block: np.ndarray) -> float:
    """VertiBench's correlation of a block: the sd of its singular values over sqrt(min side)."""
    values = np.linalg.svd(block, compute_uv=False)
    if values.size < 2:
        return 0.0
    return float(np.std(values, ddof=1) / np.sqrt(min(block.shape)))


def split_score(corr: np.ndarray, groups: list[np.ndarray]) -> float:
    """The mean over parties of (mean correlation with the others - correlation within)."""
    diffs = []
    for i, gi in enumerate(groups):
        inner = pcor(corr[np.ix_(gi, gi)])
        inter = [pcor(corr[np.ix_(gj, gi)]) for j, gj in enumerate(groups) if j != i]
        diffs.append(np.mean(inter) - inner)
    return float(np.mean(diffs))


def correlation_split(
    df: pd.DataFrame,
    parties: int,
    beta: float,
    rng: np.random.Generator,
    starts: int = 4,
) -> list[list[str]]:
    """The correlation split of ``df``'s columns over ``parties`` of near-equal size."""
    if not 0 <= beta <= 1:
        raise ValueError(f"beta must be in [0, 1]; got {beta}")
    names = list(df.columns)
    codes = df.apply(lambda c: pd.factorize(c, sort=True)[0])
    corr = np.nan_to_num(codes.rank().corr().to_numpy())
    low = _search(corr, parties, rng, starts, lambda s: s)
    high = _search(corr, parties, rng, starts, lambda s: -s)
    target = beta * split_score(corr, _groups(high, parties)) + (1 - beta) * split_score(
        corr, _groups(low, parties)
    )
    best = _search(corr, parties, rng, starts, lambda s: abs(s - target))
    return [[names[j] for j in sorted(g)] for g in _groups(best, parties)]


def _groups(order: np.ndarray, parties: int) -> list[np.ndarray]:
    return list(np.array_split(order, parties))


def _search(
    corr: np.ndarray,
    parties: int,
    rng: np.random.Generator,
    starts: int,
    loss: Callable[[float], float],
) -> np.ndarray:
    """The column order (cut into ``parties`` groups) of least ``loss(score)`` that single
    swaps across groups reach from ``starts`` random orders."""
    d = corr.shape[0]
    best, best_loss = np.arange(d), np.inf
    for _ in range(starts):
        order = rng.permutation(d)
        current = loss(split_score(corr, _groups(order, parties)))
        improved = True
        while improved:
            improved = False
            for a in range(d):
                for b in range(a + 1, d):
                    order[[a, b]] = order[[b, a]]
                    value = loss(split_score(corr, _groups(order, parties)))
                    if value < current - 1e-12:
                        current, improved = value, True
                    else:
                        order[[a, b]] = order[[b, a]]
        if current < best_loss:
            best, best_loss = order.copy(), current
    return best
