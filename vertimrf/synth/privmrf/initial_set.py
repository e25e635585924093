"""The initial marginal set: a small Bayesian network inside every maximal
clique; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np


def maximal_parent_sets(
    pool: Sequence[int], sizes: Sequence[int], budget: float
) -> list[tuple[int, ...]]:
    """All subsets P of ``pool`` with prod(sizes[P]) <= budget to which no other member of
    ``pool`` can be added without exceeding it (PrivBayes' maximal parent sets).

    Returns ``[()]`` when no single attribute fits and ``[]`` when even the empty set does
    not (budget < 1). Sets keep the order of ``pool``.
    """
    pool = tuple(pool)
    if budget < 1:
        return []

    @cache
    def rec(k: int, used: int) -> tuple[tuple[tuple[int, ...], int], ...]:
        # Maximal sets over pool[k:] with ``used`` cells already taken: (set, its cells).
        if k == len(pool):
            return (((), 1),)
        x = pool[k]
        u = int(sizes[x])
        out = []
        if used * u <= budget:
            out += [((x,) + z, c * u) for z, c in rec(k + 1, used * u)]
        out += [(z, c) for z, c in rec(k + 1, used) if used * c * u > budget]
        return tuple(out)

    return [z for z, _ in rec(0, 1)]


def cfs_scores(children: Sequence[int], parent_sets: np.ndarray, tvd: np.ndarray) -> np.ndarray:
    """CFS-style score of each (child, parent set) pair, shape (len(children), len(sets)).

    score = sum_p tvd[child, p] / sqrt(max(1, k + sum_{p < q} tvd[p, q])) for the k parents
    of the set. ``parent_sets`` is an (m, k) array of attribute ids.
    """
    # Fix of the reference bug (analysis section 8, item 18): the pairwise term uses the
    # actual parent ids, not the positions 0..k-1.
    m, k = parent_sets.shape
    relevance = tvd[np.asarray(children)][:, parent_sets].sum(axis=2)
    redundancy = np.zeros(m)
    for a in range(k):
        for b in range(a + 1, k):
            redundancy += tvd[parent_sets[:, a], parent_sets[:, b]]
    return relevance / np.sqrt(np.maximum(1.0, k + redundancy))[None, :]


def _best_extension(
    remaining: Sequence[int],
    pool: Sequence[int],
    sizes: Sequence[int],
    max_cells: float,
    tvd: np.ndarray,
) -> tuple[float, int, tuple[int, ...]] | None:
    """Best (score, child, parents) over remaining children and their maximal parent sets."""
    best: tuple[float, int, tuple[int, ...]] | None = None
    by_size: dict[int, list[int]] = {}
    for a in remaining:
        by_size.setdefault(int(sizes[a]), []).append(a)
    for u, children in by_size.items():
        groups: dict[int, list[tuple[int, ...]]] = {}
        for p in maximal_parent_sets(pool, sizes, max_cells / u):
            groups.setdefault(len(p), []).append(p)
        for k, sets in groups.items():
            if k == 0:
                scores = np.zeros((len(children), 1))
            else:
                scores = cfs_scores(children, np.asarray(sets, dtype=np.int64), tvd)
            c, s = np.unravel_index(int(np.argmax(scores)), scores.shape)
            cand = (float(scores[c, s]), children[c], tuple(sets[s]))
            if best is None or cand[0] > best[0]:
                best = cand
    return best


def clique_bayes_net(
    clique: Sequence[int],
    sizes: Sequence[int],
    max_cells: float,
    tvd: np.ndarray,
    rng: np.random.Generator,
) -> list[tuple[tuple[int, ...], int, float]]:
    """The marginals recorded inside one clique as (sorted attrs, child, score)."""
    clique = list(clique)
    first = clique[int(rng.integers(len(clique)))]
    pool = [first]
    remaining = [a for a in clique if a != first]
    recorded = []
    while remaining:
        best = _best_extension(remaining, pool, sizes, max_cells, tvd)
        if best is None or not best[2]:
            break
        score, child, parents = best
        recorded.append((tuple(sorted((child, *parents))), child, score))
        pool.append(child)
        remaining.remove(child)
    return recorded


def initial_marginals(
    cliques: Sequence[Sequence[int]],
    sizes: Sequence[int],
    max_cells: float,
    tvd: np.ndarray,
    rng: np.random.Generator,
) -> list[tuple[int, ...]]:
    """The initial marginal set S (analysis section 2.6)."""
    d = len(sizes)
    best: dict[int, tuple[float, tuple[int, ...]]] = {}
    recorded: list[tuple[int, ...]] = []
    for clique in cliques:
        for attrs, child, score in clique_bayes_net(clique, sizes, max_cells, tvd, rng):
            recorded.append(attrs)
            if child not in best or score > best[child][0]:
                best[child] = (score, attrs)
    chosen = list(dict.fromkeys(best[a][1] for a in sorted(best)))
    out = [m for m in chosen if not any(set(m) < set(o) for o in chosen)]
    covered = {a for m in out for a in m}
    out += [(a,) for a in range(d) if a not in covered]
    extra = [m for m in dict.fromkeys(recorded) if m not in out]
    for k in rng.permutation(len(extra)):
        if len(out) >= d:
            break
        m = extra[k]
        if not any(set(m) <= set(o) for o in out):
            out.append(m)
    return out
