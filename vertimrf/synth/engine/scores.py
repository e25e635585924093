"""Post-processing of the first release (every 2-way marginal, noisy): pooled 1-way
marginals, the record count pooled with every table's sum, and noisy pairwise scores."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import erfcx

from vertimrf.synth.engine.tables import Marginal, Tables


def _pooled(tables: Tables, sizes: Sequence[int]) -> tuple[list[np.ndarray], list[float]]:
    """Inverse-variance sums of every attribute's row or column sums (a sum over k cells of
    noise scale s has variance k s^2), and of its 1-way table if one was released: the
    weighted numerators and the total weights."""
    num = [np.zeros(int(k)) for k in sizes]
    den = [0.0] * len(sizes)
    for m, flat in tables.values.items():
        s2 = tables.scale[m] ** 2
        if len(m) == 1:  # a 1-way table: its own counts
            num[m[0]] += flat / s2
            den[m[0]] += 1.0 / s2
            continue
        i, j = m
        t = flat.reshape(sizes[i], sizes[j])
        for a, sums, k in ((i, t.sum(1), sizes[j]), (j, t.sum(0), sizes[i])):
            num[a] += sums / (k * s2)
            den[a] += 1.0 / (k * s2)
    return num, den


def pooled_one_way(tables: Tables, sizes: Sequence[int]) -> tuple[list[np.ndarray], list[float]]:
    """Every attribute's 1-way counts, pooled over the row or column sums of every 2-way
    table holding it (inverse-variance weighted), floored at 0, and the variance of each
    pooled count (1 / its total weight). Far less noisy than one table's sums, whose noise
    grows with its width."""
    num, den = _pooled(tables, sizes)
    counts = [np.maximum(num[a] / den[a], 0.0) if den[a] else num[a] for a in range(len(sizes))]
    return counts, [1.0 / d if d else math.inf for d in den]


def left_out_one_ways(
    tables: Tables, sizes: Sequence[int], cliques: Sequence[Sequence[int]]
) -> Tables:
    """The 1-way tables that a model over ``cliques`` can still read from ``tables``'
    2-way tables lying in none of its cliques (the fit leaves each of them out whole):
    their row and column sums, pooled per attribute by inverse variance. Post-processing;
    independent of every table that is not left out. Attributes in no left-out table are
    not returned."""
    groups = [set(c) for c in cliques]
    left: dict[Marginal, np.ndarray] = {
        m: v
        for m, v in tables.values.items()
        if len(m) == 2 and not any(set(m) <= g for g in groups)
    }
    num, den = _pooled(Tables(left, tables.scale), sizes)
    held = sorted({a for m in left for a in m})
    return Tables(
        {(a,): num[a] / den[a] for a in held}, {(a,): 1.0 / math.sqrt(den[a]) for a in held}
    )


def one_way(tables: Tables, sizes: Sequence[int]) -> list[np.ndarray]:
    """The pooled 1-way counts of :func:`pooled_one_way`."""
    return pooled_one_way(tables, sizes)[0]


def pair_scores(
    tables: Tables,
    sizes: Sequence[int],
    n_hat: float,
    populations: Mapping[Marginal, float] | None = None,
) -> np.ndarray:
    """Noisy normalised TVDs from independence, debiased for the noise: for a table T with
    noise scale s over a population of N records, 1/2 sum |T - N p_a p_b| minus the noise's
    expected contribution 1/2 * cells * s * sqrt(2 / pi), floored at 0 and divided by N.
    N is ``n_hat``, or the table's own in ``populations`` (partial record sets: a pair's
    table counts only the records its owners both hold, and measured against n_hat every
    pair of parties would look dependent). The independence table uses the pooled 1-way
    marginals (:func:`one_way`), not T's own noisy sums, whose error made wide tables (e.g.
    Adult's 41-value country) score far above their TVD."""
    d = len(sizes)
    out = np.zeros((d, d))
    ones = one_way(tables, sizes)
    probs = [v / v.sum() if v.sum() > 0 else np.full(v.size, 1.0 / v.size) for v in ones]
    for m, flat in tables.values.items():
        if len(m) != 2:
            continue
        i, j = m
        t = flat.reshape(sizes[i], sizes[j])
        n = n_hat if populations is None else max(populations[i, j], 1.0)
        indep = np.outer(probs[i], probs[j]) * n
        bias = 0.5 * t.size * tables.scale[i, j] * math.sqrt(2.0 / math.pi)
        out[i, j] = out[j, i] = max(0.0, 0.5 * float(np.abs(t - indep).sum()) - bias) / n
    return out


def laplace_weight(epsilon: float) -> float:
    """1 / the variance of discrete Laplace noise of parameter ``epsilon``
    (2 e^-eps / (1 - e^-eps)^2)."""
    return (1.0 - math.exp(-epsilon)) ** 2 / (2.0 * math.exp(-epsilon))


def record_total(count: float, weight: float, *releases: Tables) -> float:
    """The record count from the noisy ``count`` (of inverse variance ``weight``) and every
    noisy table's sum (each sums to the true count plus its noise). Their inverse-variance
    weighted mean m, of standard error s, is the count's estimate; the count is never
    negative, so this returns the mean of N >= 0 given m under a flat prior (a truncated
    normal's): m + s phi(m / s) / Phi(m / s), floored at 1. Once m is a few s above 0 that is
    m; near or below 0 (a table of a hundred records at epsilon 1) it stays of the noise's
    scale, where m floored at 1 made the fit put every record in one cell. The count has a
    tiny budget share; the tables' sums are far more accurate, so this is post-processing
    that fixes n_hat's percent-level error at low epsilon."""
    weights = [weight]
    values = [float(count)]
    for tables in releases:
        for m, v in tables.values.items():
            weights.append(1.0 / (v.size * tables.scale[m] ** 2))
            values.append(float(v.sum()))
    precision = float(np.sum(weights))
    if not precision > 0:
        return 1.0
    mean, se = float(np.dot(weights, values)) / precision, 1.0 / math.sqrt(precision)
    # phi(z) / Phi(z) = sqrt(2 / pi) / erfcx(-z / sqrt(2)): exact in the tails (0 far above).
    mean += se * math.sqrt(2.0 / math.pi) / float(erfcx(-mean / se / math.sqrt(2.0)))
    return max(1.0, mean)
