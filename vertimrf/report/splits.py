"""VertiBench's attribute splits (Wu et al., 2023), written from its
published rule; design notes in docs/design/report.md."""

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
