"""The engine's selection from the first release: graph search, initial set, what
to re-measure; design notes in docs/design/synth.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.synth.engine.oracle import Oracle
from vertimrf.synth.engine.plan import EnginePlan
from vertimrf.synth.engine.scores import pair_scores
from vertimrf.synth.engine.tables import Marginal, Tables
from vertimrf.synth.privmrf.graph_search import GraphSearchResult, greedy_graph_search
from vertimrf.synth.privmrf.initial_set import initial_marginals
from vertimrf.synth.privmrf.usefulness import graph_phase_max_cells
from vertimrf.workload import Workload

# A 2-way marginal is re-measured only if its first release's noise is above 1/100 of the
# mean count per cell, i.e. cells > n_hat / (EXTRA_PRECISION * sigma_select).
EXTRA_PRECISION = 100.0
# A selection whose model does not fit the oracle's cap is made again with SHRINK times the
# cells, at most SHRINKS times.
SHRINK = 0.7
SHRINKS = 12


@dataclass(frozen=True)
class Choice:
    """What the selection found: the graph, the model's junction tree, the marginals to
    re-measure (the initial set's measurable parts, then the extra pairs) and the scores."""

    graph: GraphSearchResult
    tree: JunctionTree
    marginals: list[Marginal]
    scores: np.ndarray


def choose(
    first: Tables, n_hat: float, plan: EnginePlan, oracle: Oracle, rng: np.random.Generator
) -> Choice:
    """The marginals to re-measure after the ``first`` release (every 2-way marginal, or a
    workload's first release) of a table of about ``n_hat`` records; ``rng`` breaks the
    search's ties."""
    opts, sizes = plan.options, plan.domain.sizes
    scores = pair_scores(first, sizes, n_hat, oracle.populations())
    weights = plan.pair_weights
    if weights is not None:
        scores = scores * weights
    graph, max_total = _search(scores, n_hat, plan, oracle, rng)
    tree = JunctionTree.build(
        plan.domain, graph.cliques, heuristic="min_fill", max_cells=int(max_total)
    )
    # A pair whose first release already has little noise per record of a cell gains
    # little from a re-measurement (its budget goes to the others instead).
    cliques = [set(c) for c in tree.cliques]
    limit = n_hat / (EXTRA_PRECISION * plan.sigma_select)
    eligible = [
        m
        for m in oracle.all_pairs()
        if any(set(m) <= c for c in cliques)
        and oracle.cells(m) > limit
        and (weights is None or weights[m] > 0)
    ]
    sigma_est = math.sqrt(plan.sigma2)
    useful = graph_phase_max_cells(n_hat, sigma_est, opts.theta)
    init = initial_marginals(tree.cliques, sizes, useful, scores, rng)
    if plan.workload is not None and weights is not None:
        init = _for_workload(init, plan.workload, weights, cliques, useful, oracle)
    edges = {tuple(sorted(e)) for e in graph.edges}
    chosen = list(dict.fromkeys(oracle.canonical(m) for m in oracle.measurable(init, edges)))
    chosen = [m for m in chosen if not any(set(m) < set(o) for o in chosen)]
    extra = [m for m in eligible if not any(set(m) <= set(o) for o in chosen)]
    extra.sort(key=lambda m: -scores[m])
    return Choice(graph, tree, chosen + extra[: plan.extras(n_hat)], scores)


def _for_workload(
    init: list[Marginal],
    workload: Workload,
    weights: np.ndarray,
    cliques: list[set[int]],
    useful: float,
    oracle: Oracle,
) -> list[Marginal]:
    """The initial set under a workload: its marginals that hold a pair of the workload,
    then the workload's own marginals (of two or more columns) that lie in a clique and are
    useful (at most ``useful`` cells, PrivMRF's theta rule at the re-measurement's noise).
    On Adult at epsilon 1.6 (3 seeds) the workload's TVD with the workload given is 0.38x
    the default's (``benchmarks/results/engine_workload.md``); before this rule, with the
    weights and the first release only, the same command gave 0.47x."""
    kept = [m for m in init if any(weights[a, b] > 0 for a, b in combinations(m, 2))]
    held = [
        w
        for w in workload.marginals
        if len(w) > 1 and any(set(w) <= c for c in cliques) and oracle.cells(w) <= useful
    ]
    return list(dict.fromkeys(kept + held))


def _search(
    scores: np.ndarray, n_hat: float, plan: EnginePlan, oracle: Oracle, rng: np.random.Generator
) -> tuple[GraphSearchResult, float]:
    """The greedy graph search under the plan's caps, shrunk until the oracle's model fits,
    else the graph without edges (every attribute alone, the smallest model) if that fits;
    the graph and the total cap it was found under."""
    max_clique, max_total = plan.model_caps(n_hat)
    for _ in range(SHRINKS):
        found = greedy_graph_search(
            scores,
            oracle.search_sizes(),
            max_clique_cells=max_clique,
            max_total_cells=max_total,
            size_penalty=plan.options.size_penalty,
            rng=rng,
        )
        if oracle.model_fits(found.cliques):
            return found, max_total
        max_total *= SHRINK
        max_clique = min(max_clique, max_total)
    alone = tuple((a,) for a in range(len(plan.domain)))
    if oracle.model_fits(alone):
        return GraphSearchResult((), (), alone), float(sum(plan.domain.sizes))
    raise ConfigError(oracle.too_large)
