"""The server's fit, post-processing of both releases: the engine's fit
(:func:`vertimrf.synth.engine.fit.fit_model`) on every measurement (the re-measured ones,
the binned ones as linear queries on their bin sums, the first release's pairs inside
the cliques and the 1-way sums of the others, each weighted 1 / its noise scale),
warm-started from the first release;
:meth:`~vertimrf.server.secure.SecureServer.synthesize` samples n rows from it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import cast

import numpy as np

from vertimrf.errors import ModelShrunkWarning
from vertimrf.mrf.junction_tree import JunctionTree, model_size, triangulated_cliques
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure.plan import MEASURE
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.server.secure.selection import engine_plan
from vertimrf.server.secure.session import (
    ServerSession,
    StepData,
    check_releases,
    randomness,
    tables,
)
from vertimrf.server.secure.union_fit import partial_releases
from vertimrf.synth.engine.fit import fit_model, measurements
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import Population, UnionDomain, fit_union, union_cells

# The union model's iteration cap over the config's (partial record sets: more cells and
# more tables, fitted cold; on Adult at 80% overlap 3x lowered the 3-way TVD by about 2%).
UNION_ITERS = 3


def fit(
    session: ServerSession, data: StepData, releases: Sequence[SecureRelease]
) -> np.random.Generator:
    """Step 4 without sampling: charge the re-measurement and fit the MRF on every
    measurement (``data.model``). Returns the generator the run's sampling draws from: the
    seeded run's stream, or fresh OS entropy in an unseeded run."""
    _, request, _ = data.selected("synthesize(releases)")
    check_releases(session, MEASURE, request.marginals, releases, request.bins)
    noise, rng = randomness(session, MEASURE, releases)
    if session.seed is None:
        rng = np.random.default_rng()
    plan = session.plan
    data.note_seeded(plan, releases)
    for r in [*plan.releases(MEASURE, request.marginals, request.bins), *plan.fine_releases()]:
        session.ledger.charge(r)
    _fit_shrinking(session, data, releases, noise)
    data.fine = {c: v for r in releases for c, v in r.fine.items()}
    return rng


def _fit_shrinking(
    session: ServerSession, data: StepData, releases: Sequence[SecureRelease], noise: NoiseSampler
) -> None:
    """The fit on both releases (the server's noise drawn once). A fit that runs out of
    memory, or over a cell limit, fits again on the same tables with a smaller model
    (:func:`_shrunk`): post-processing, no new noise and no new charge; a
    :class:`ModelShrunkWarning` says so. With ``data.max_model_cells`` (``vertimrf server
    refit``), a model over it is shrunk before the fit."""
    _, request, tree = data.selected("the fit")
    second = tables(session, MEASURE, request.marginals, releases, noise, request.bins)
    cliques: list[tuple[int, ...]] = list(tree.cliques)
    limit = data.max_model_cells
    if limit is not None and model_cells(session, cliques) > limit:
        cliques = _shrunk(session, data, cliques, limit, f"was over the {limit:,} asked for")
    while True:
        try:
            _fit_on(session, data, second, cliques)
            return
        except MemoryError as exc:  # ModelTooLargeError is one
            cause = "ran out of memory" if type(exc) is MemoryError else "was too large"
            if not any(len(c) > 1 for c in cliques):
                raise
            target = model_cells(session, cliques) // 2
            cliques = _shrunk(session, data, cliques, target, cause)


def _shrunk(
    session: ServerSession,
    data: StepData,
    cliques: Sequence[Sequence[int]],
    target: int,
    cause: str,
) -> list[tuple[int, ...]]:
    """Cliques of a model of at most ``target`` cells, or every attribute alone: the
    smallest of ``cliques`` first, each kept while the model fits (the rest left out, with
    the re-measured marginals they held). Noted in ``data.refits`` and warned
    (:class:`ModelShrunkWarning`) with ``cause``."""
    domain = session.config.spec.domain
    joined = sorted((tuple(c) for c in cliques if len(c) > 1), key=lambda c: (domain.size(c), c))
    kept: list[tuple[int, ...]] = []
    for c in joined:
        if model_cells(session, [*kept, c]) <= target:
            kept.append(c)
    was, now = model_cells(session, cliques), model_cells(session, kept)
    data.refits = [
        *data.refits,
        f"the model of {was:,} cells {cause}; the server fitted again from the same "
        f"releases with a model of {now:,} cells (post-processing: no noise drawn and no "
        "budget spent again)",
    ]
    warnings.warn(data.refits[-1], ModelShrunkWarning, stacklevel=3)
    return kept


def _fit_on(
    session: ServerSession, data: StepData, second: Tables, cliques: Sequence[Sequence[int]]
) -> None:
    """The fit of the model over ``cliques`` (the selection's, or smaller ones)."""
    first, request, tree = data.selected("the fit")
    if list(cliques) != list(tree.cliques):
        domain = session.config.spec.domain
        size = model_size(domain, triangulated_cliques(domain, cliques))
        tree = data.tree = JunctionTree.build(domain, cliques, max_cells=size.total_cells)
        inside = [set(c) for c in tree.cliques]
        second = Tables(
            {m: v for m, v in second.values.items() if any(set(m) <= c for c in inside)},
            second.scale,
        )
    if session.record_sets.models_union:  # partial record sets: one model over the union
        _fit_union(session, data, second)
        return
    bins = {m: request.maps(m) for m in request.bins if m in second.values}
    data.model, data.iterations = fit_model(
        engine_plan(session), tree, data.n_hat, *measurements(first, second, tree, bins)
    )
    data.n_hat = session.record_sets.rows(data.n_hat, session.config.population)


def model_cells(session: ServerSession, cliques: Sequence[Sequence[int]]) -> int:
    """The cells of the model the fit builds over ``cliques`` (over the union with partial
    record sets), triangulated as it is built."""
    domain = session.config.spec.domain
    triangulated = triangulated_cliques(domain, cliques)
    if session.record_sets.models_union:
        return union_cells(UnionDomain(domain, session.plan.owner), triangulated)
    return model_size(domain, triangulated).total_cells


def _fit_union(session: ServerSession, data: StepData, second: Tables) -> None:
    """The model over the union of the records (:mod:`vertimrf.synth.union`) on every
    release and the published region counts, conditioned on the config's population;
    ``n_hat`` becomes the population's DP row count."""
    config, (first, _, tree) = session.config, data.selected("the fit")
    counts, sigma = session.record_sets.regions()
    releases, data.skipped = partial_releases(
        session.plan, config.spec.domain, (first, second), counts, sigma
    )
    union = fit_union(
        releases,
        iters=UNION_ITERS * config.secure_options().iters,
        cliques=tree.cliques,
        max_cells=int(rules(config).model_cap(config)),
    )
    population = cast(Population, config.population)
    data.union = union
    data.model = union.population_model(population)
    data.n_hat = float(union.rows(population))
    data.iterations = [int(union.fit.iterations)]
