"""The engine's fit, post-processing of both releases: every re-measurement (a binned one as
a linear query on its bin sums), the first release's pairs inside the cliques and the
pooled 1-way sums of the others, each weighted 1 / its noise scale, fit the MRF by mirror
descent, warm-started on the first release alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from vertimrf.mrf.estimation import Measurement, mirror_descent, theoretic_loss
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.synth.engine.plan import EnginePlan
from vertimrf.synth.engine.scores import left_out_one_ways
from vertimrf.synth.engine.tables import Marginal, Tables

BinMaps = tuple[np.ndarray | None, ...]


def measurements(
    first: Tables,
    second: Tables,
    tree: JunctionTree,
    bins: Mapping[Marginal, BinMaps] | None = None,
) -> tuple[list[Measurement], list[Measurement]]:
    """The re-measurements (``second``; those in ``bins`` measured on them), then the
    ``first`` release's pairs inside a clique of ``tree`` and the 1-way tables pooled from
    the others (:func:`~vertimrf.synth.engine.scores.left_out_one_ways`)."""
    bins = bins or {}
    cliques = [set(c) for c in tree.cliques]
    again = [
        Measurement(m, v, 1.0 / second.scale[m], bins=bins.get(m)) for m, v in second.values.items()
    ]
    ones = left_out_one_ways(first, tree.domain.sizes, tree.cliques)
    pairs = [
        Measurement(m, v, 1.0 / first.scale[m])
        for m, v in first.values.items()
        if any(set(m) <= c for c in cliques)
    ]
    pairs += [Measurement(m, v, 1.0 / ones.scale[m]) for m, v in ones.values.items()]
    return again, pairs


def fit_model(
    plan: EnginePlan,
    tree: JunctionTree,
    n_hat: float,
    again: list[Measurement],
    pairs: list[Measurement],
) -> tuple[MarkovRandomField, list[int]]:
    """The MRF on ``tree`` (total ``n_hat``) fitted to both releases (:func:`measurements`),
    and the iterations of its two fits. Warm start: the cheap first release (every 2-way
    marginal in a clique) first, then everything; on Adult at eps 1.6 this fits in a third
    of the iterations of one cold fit at an equal or lower 3-way TVD."""
    model = MarkovRandomField(plan.domain, tree, total=n_hat)
    opts = plan.options
    iterations = [
        _fit(plan, model, pairs, opts.convergence_ratio),
        _fit(plan, model, again + pairs, opts.final_convergence_ratio),
    ]
    return model, iterations


def _fit(
    plan: EnginePlan, model: MarkovRandomField, ms: Sequence[Measurement], ratio: float
) -> int:
    """Mirror descent (warm-started from the model) until the loss is ``ratio`` times the
    noise's expected loss; returns the iterations."""
    opts = plan.options
    result = mirror_descent(
        model,
        list(ms),
        iters=plan.iters,
        tol=opts.tol,
        target_loss=ratio * theoretic_loss(list(ms), plan.domain),
        min_iters=0,
        check_every=opts.check_every,
    )
    return int(result.iterations)
