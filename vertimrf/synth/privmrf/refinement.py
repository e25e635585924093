"""Refinement ("entropy descent"): pick more marginals by noisy L1 error (section 2.9).

The candidate pool holds, for each maximal clique C, its subsets of 1..min(max_arity,
|C| - 1) attributes that pass theta-usefulness; a candidate's weight is the sum over the
cliques that generate it of |C|^2 / (number of candidates from C). Each round queries the
model's L1 error on a weighted sample of candidates with Gaussian noise (sensitivity 1 per
query: one record changes one cell of the true histogram by one) and measures the ones with
the largest noisy error.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.privacy.samplers import NoiseSampler


@dataclass
class CandidatePool:
    """Refinement candidates (sorted attribute tuples) with their sampling weights."""

    weights: dict[tuple[int, ...], float]

    def __len__(self) -> int:
        return len(self.weights)


def candidate_pool(
    cliques: Sequence[Sequence[int]],
    sizes: Sequence[int],
    max_cells: float,
    max_arity: int,
    exclude: Sequence[tuple[int, ...]] = (),
) -> CandidatePool:
    """The candidate pool of the given cliques, without the marginals in ``exclude``."""
    if max_arity < 1:
        raise ConfigError(f"max_arity must be >= 1; got {max_arity}.")
    weights: dict[tuple[int, ...], float] = {}
    for clique in cliques:
        clique = tuple(sorted(clique))
        found = [
            s
            for k in range(1, min(max_arity, len(clique) - 1) + 1)
            for s in itertools.combinations(clique, k)
            if k == 1 or math.prod(int(sizes[a]) for a in s) < max_cells
        ]
        for s in found:
            weights[s] = weights.get(s, 0.0) + len(clique) ** 2 / len(found)
    # Fix of the reference bug (analysis section 8, item 22): a marginal that is already
    # measured is never a candidate, so no budget is spent re-measuring it.
    for s in exclude:
        weights.pop(tuple(sorted(s)), None)
    return CandidatePool(weights)


def query_set(
    pool: CandidatePool, max_queries: int, rng: np.random.Generator, min_size: int = 0
) -> list[tuple[int, ...]]:
    """The candidates to query this round: all of them if there are at most ``max_queries``,
    else ``max_queries`` weighted draws with replacement, de-duplicated, topped up with the
    heaviest other candidates to at least ``min_size`` (the number to select) if needed."""
    items = list(pool.weights)
    if len(items) <= max(max_queries, min_size):
        return items
    w = np.fromiter(pool.weights.values(), dtype=np.float64, count=len(items))
    picks = rng.choice(len(items), size=max_queries, replace=True, p=w / w.sum())
    chosen = list(dict.fromkeys(picks.tolist()))
    if len(chosen) < min_size:
        taken = set(chosen)
        heavy = [i for i in np.argsort(-w, kind="stable").tolist() if i not in taken]
        chosen += heavy[: min_size - len(chosen)]
    return [items[k] for k in chosen]


def noisy_l1_errors(
    queries: Sequence[tuple[int, ...]],
    model_marginal: Callable[[tuple[int, ...]], np.ndarray],
    true_histogram: Callable[[tuple[int, ...]], np.ndarray],
    sigma: float,
    rng: np.random.Generator | NoiseSampler,
) -> np.ndarray:
    """||model - truth||_1 + N(0, sigma^2) for every query (count units)."""
    exact = np.array([float(np.abs(model_marginal(q) - true_histogram(q)).sum()) for q in queries])
    return exact + rng.normal(0.0, sigma, size=len(queries))


def select_and_update(
    pool: CandidatePool, queries: Sequence[tuple[int, ...]], errors: np.ndarray, k: int
) -> list[tuple[int, ...]]:
    """Take the ``k`` queries with the largest noisy error out of the pool and halve the
    weights of the lower-scoring half of the queries; return the selected marginals."""
    # Fix of the reference bug (analysis section 8, item 19): always a plain list, also when
    # fewer queries than k exist or k is 0, so callers never unpack a malformed result.
    order = np.argsort(-np.asarray(errors), kind="stable")
    chosen = [queries[i] for i in order[: max(0, k)]]
    # Fix of the reference quirk (analysis section 8, item 21): the halved "second half" is
    # the half with the lowest noisy error, not an arbitrary half in set order.
    for i in order[(len(queries) + 1) // 2 :]:
        if queries[i] in pool.weights:
            pool.weights[queries[i]] *= 0.5
    for q in chosen:
        del pool.weights[q]
    return chosen
