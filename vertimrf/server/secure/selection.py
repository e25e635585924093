"""The server's selection, post-processing of the first release;
design notes in docs/design/server.md."""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import partial

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure.marginals import BinMaps, Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.server.binning import choose_bins
from vertimrf.server.secure.oracle import SecureOracle
from vertimrf.server.secure.session import (
    ServerSession,
    StepData,
    check_releases,
    cut_spec,
    randomness,
    tables,
)
from vertimrf.synth.engine.plan import EnginePlan, cells_per_precision
from vertimrf.synth.engine.scores import laplace_weight, pooled_one_way, record_total
from vertimrf.synth.engine.select import choose
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import UnionDomain, union_cells
from vertimrf.workload import Workload


def select(session: ServerSession, data: StepData, releases: Sequence[SecureRelease]) -> Request:
    """Step 2: sum the first releases and choose the marginals to re-measure (and the ones
    to measure on bins), into ``data``. Every input is checked before anything is charged."""
    plan = session.plan
    marginals = plan.first_release()
    check_releases(session, SELECT, marginals, releases)
    check_commit_set(data, releases)
    count = [r.count for r in releases if r.party == plan.count_party]
    if count[0] is None:
        raise MessageError(
            f"the first release of the count party {plan.count_party!r} holds no noisy count."
        )
    noise, rng = randomness(session, SELECT, releases)
    data.note_seeded(plan, releases)
    session.ledger.extend([*plan.quantile_releases(), *plan.releases(SELECT, marginals)])
    data.spec = cut_spec(session, {c: v for r in releases for c, v in r.cuts.items()})
    first = data.first = tables(session, SELECT, marginals, releases, noise)
    data.n_hat = record_total(count[0], laplace_weight(plan.count_epsilon), first)
    choice = choose(first, data.n_hat, engine_plan(session), oracle(session), rng)
    data.tree = choice.tree
    bins = binning(session, first, choice.marginals)
    data.request = plan.check_request(choice.marginals, bins)  # canonical order
    return data.request


def check_commit_set(data: StepData, releases: Sequence[SecureRelease]) -> None:
    """Every first release names the commitments its deal was made for, all the same (and
    ``data``'s, if the server dealt in this process); they bind the round-2 deals."""
    sets = {r.commit_set for r in releases}
    mine = None if data.commit_set is None else data.commit_set.hex()
    if len(sets) != 1 or (mine is not None and sets != {mine}):
        raise MessageError(
            "the first releases were made with deals of other data commitments: every "
            "party must release with the deal the server made in this run."
        )
    try:
        data.commit_set = bytes.fromhex(sets.pop())
    except ValueError:
        raise MessageError("a first release names a malformed commit set.") from None


def binning(
    session: ServerSession, first: Tables, marginals: Sequence[Marginal]
) -> dict[Marginal, BinMaps]:
    """The 2-way marginals of the request to measure on bins, with their bins:
    post-processing of the ``first`` release (:func:`choose_bins`)."""
    if session.config.secure_options().binning == "off":
        return {}
    plan = session.plan
    ones, ones_var = pooled_one_way(first, plan.sizes)
    sigma = plan.sigma(MEASURE, marginals)  # before binning, which lowers it
    out: dict[Marginal, BinMaps] = {}
    for m in marginals:
        if len(m) != 2 or m not in first.values:
            continue
        scale = plan.cross_noise.release_scale(sigma) if plan.kind(m) == "cross" else sigma
        shaped = first.values[m].reshape(plan.shape(m))
        choice = choose_bins(shaped, first.scale[m], scale, ones, ones_var, m)
        if choice is not None:
            out[m] = choice.maps
    return out


def resume(session: ServerSession, path: str | os.PathLike) -> StepData:
    """What select found, from ``path`` (:meth:`StepData.load`), its request with the bins
    select chose (deterministic), and the first release charged to the session's ledger."""
    data, marginals = StepData.load(session, path)
    plan, first = session.plan, data.first
    assert first is not None  # loaded
    data.request = plan.check_request(marginals, binning(session, first, marginals))
    session.ledger.extend([*plan.quantile_releases(), *plan.releases(SELECT, plan.first_release())])
    return data


def engine_plan(session: ServerSession) -> EnginePlan:
    """The plan's public numbers as the engine reads them."""
    plan, config, options = session.plan, session.config, session.options
    return EnginePlan(
        domain=config.spec.domain,
        sigma_select=plan.sigma(SELECT, plan.first_release()),
        rho_measure=plan.rho_measure,
        refine_fraction=plan.refine_fraction,
        iters=config.secure_options().iters,
        options=options,
        cells_per_precision=cells_per_precision(options.max_total_cells),
        workload=Workload.given(config.spec.domain, config.secure_options().workload),
    )


def union_fits(session: ServerSession, cliques: Sequence[Sequence[int]]) -> bool:
    """Partial record sets: whether the union model over ``cliques`` (with each party's
    links and the representatives' group) fits the fit's cap on cells."""
    config = session.config
    space = UnionDomain(config.spec.domain, session.plan.owner)
    return union_cells(space, cliques) <= rules(config).model_cap(config)


def oracle(session: ServerSession) -> SecureOracle:
    """The secure product's constraints, as the engine's oracle."""
    union = session.record_sets.models_union
    return SecureOracle(
        session.plan,
        populations=session.record_sets.pair_populations(),
        union_fits=partial(union_fits, session) if union else None,
    )


def cross_tables(
    session: ServerSession, data: StepData, releases: Sequence[SecureRelease]
) -> dict[Marginal, np.ndarray]:
    """The paper pipeline's one release (every binned cross-party pair): the summed shares
    plus the server's noise, charged to the session's ledger; each table in the attribute
    order of its canonical marginal."""
    marginals = session.plan.first_release()
    check_releases(session, SELECT, marginals, releases)
    noise, _ = randomness(session, SELECT, releases)
    data.note_seeded(session.plan, releases)
    session.ledger.extend(session.plan.releases(SELECT, marginals))
    data.first = tables(session, SELECT, marginals, releases, noise)
    sizes = session.plan.sizes
    return {m: v.reshape([sizes[a] for a in m]) for m, v in data.first.values.items()}
