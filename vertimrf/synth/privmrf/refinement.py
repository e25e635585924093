"""Refinement ("entropy descent"): pick more marginals by noisy L1 error
(section 2.9); design notes in docs/design/synth.md."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.synth.privmrf.budget_split import ERROR_QUERY_SENSITIVITY
from vertimrf.synth.privmrf.noise import FitNoise


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


def rounded_l1_error(model: np.ndarray, truth: np.ndarray, scale: int) -> int:
    """round(scale * ||model - truth||_1) (half up), exactly, for a float ``model``, an
    integer-valued ``truth`` and a power-of-two ``scale``.

    With a = scale * model (exact) split as A + f (A = floor(a), f in [0, 1)) and
    b = scale * truth, each |a - b| is |A - b| + f or |A - b| - f, so the total is an exact
    integer I plus F = sum(+-f). math.fsum rounds F correctly, so unless it lands on a
    half-integer (then F is summed in rationals) it rounds like F itself.
    """
    s = int(scale)
    if s < 1 or s & (s - 1):
        raise ConfigError(f"scale must be a power of two >= 1; got {scale!r}.")
    a = np.asarray(model, dtype=np.float64).ravel() * s
    whole = np.floor(a)
    frac = a - whole
    big = whole.astype(np.int64)
    b = np.rint(np.asarray(truth, dtype=np.float64).ravel()).astype(np.int64) * s
    above = big >= b
    exact_int = int(np.abs(big - b).sum())
    signed = np.where(above, frac, -frac).tolist()
    total = math.fsum(signed)
    k = math.floor(total)
    rest = total - k  # exact: k is the integer part of a double
    if rest == 0.5:
        return exact_int + math.floor(sum(map(Fraction, signed), Fraction(1, 2)))
    return exact_int + k + (1 if rest > 0.5 else 0)


def noisy_l1_errors(
    queries: Sequence[tuple[int, ...]],
    model_marginal: Callable[[tuple[int, ...]], np.ndarray],
    true_histogram: Callable[[tuple[int, ...]], np.ndarray],
    sigma: float,
    noise: FitNoise,
    what: str = "L1 errors",
) -> np.ndarray:
    """||model - truth||_1 of every query released with noise std ``sigma`` on the 1/s grid
    (count units), charged to ``noise``'s ledger as ``privmrf.error_queries``."""
    return noise.real(
        "privmrf.error_queries",
        lambda scale: np.array(
            [rounded_l1_error(model_marginal(q), true_histogram(q), scale) for q in queries],
            dtype=np.int64,
        ),
        ERROR_QUERY_SENSITIVITY,
        sigma,
        what,
    )


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
