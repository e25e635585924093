"""The aim-like preset: AIM's rounds on the engine's MRF, with the local
oracle; design notes in docs/design/synth.md."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.estimation import Measurement, mirror_descent
from vertimrf.mrf.junction_tree import (
    JunctionTree,
    clique_masks,
    mask_bits,
    triangulate_masks,
)
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.synth.engine.local import LocalOracle
from vertimrf.synth.engine.run import LocalFit
from vertimrf.synth.engine.scores import record_total
from vertimrf.synth.engine.tables import Marginal
from vertimrf.synth.privmrf.graph_search import GraphSearchResult
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.options import AIMOptions, PrivMRFOptions
from vertimrf.workload import Workload, integer_weights

NOISE_L1 = math.sqrt(2.0 / math.pi)  # E|Z| for Z ~ N(0, 1)


@dataclass(frozen=True)
class Round:
    """One round: the marginal selected, its noise scale and the selection's epsilon."""

    marginal: Marginal
    sigma: float
    epsilon: float


class _Graph:
    """The model's chordal graph as adjacency bitmasks, its cliques' cells, and the cells of
    the model each candidate would make (kept until the graph changes)."""

    def __init__(self, domain: Domain) -> None:
        self.sizes = domain.sizes
        self.adj = [0] * len(domain)
        self.cliques = [1 << a for a in range(len(domain))]
        self._cells: dict[Marginal, int] = {}

    def _mask(self, m: Marginal) -> int:
        return sum(1 << a for a in m)

    def holds(self, m: Marginal) -> bool:
        """Whether one clique holds ``m``."""
        mask = self._mask(m)
        return any(mask & c == mask for c in self.cliques)

    def _grown(self, m: Marginal) -> tuple[list[int], list[int]]:
        """The chordal adjacency and cliques with ``m`` added."""
        adj = list(self.adj)
        mask = self._mask(m)
        for a in m:
            adj[a] |= mask & ~(1 << a)
        chordal, peo, _ = triangulate_masks(adj)
        return chordal, clique_masks(chordal, peo)

    def cells(self, m: Marginal) -> int:
        """The model's cells with ``m`` added."""
        if m not in self._cells:
            cliques = self.cliques if self.holds(m) else self._grown(m)[1]
            self._cells[m] = sum(math.prod(self.sizes[a] for a in mask_bits(c)) for c in cliques)
        return self._cells[m]

    def add(self, m: Marginal) -> None:
        """Grow the graph by ``m``."""
        self.adj, self.cliques = self._grown(m)
        self._cells = {}

    def tree(self, domain: Domain) -> JunctionTree:
        """The junction tree of the graph (chordal: built without fill)."""
        graph = nx.Graph()
        graph.add_nodes_from(range(len(domain)))
        graph.add_edges_from((a, b) for a in range(len(domain)) for b in mask_bits(self.adj[a]))
        return JunctionTree.build(domain, graph, heuristic="static_min_degree")

    def edges(self) -> tuple[tuple[int, int], ...]:
        return tuple((a, b) for a in range(len(self.adj)) for b in mask_bits(self.adj[a]) if b > a)


def fit_aim(
    codes: np.ndarray,
    domain: Domain,
    rho: float,
    aim: AIMOptions,
    options: PrivMRFOptions,
    noise: FitNoise,
    say: Callable[[str], None] | None = None,
) -> tuple[LocalFit, tuple[Round, ...]]:
    """Spend ``rho`` on ``codes`` (rows over ``domain``) in AIM's rounds (``aim``; the fits'
    convergence from ``options``); ``noise`` charges and draws, ``say`` hears a line per
    round (its marginal's columns and sigma: public, no data). Returns the fit and its
    rounds."""
    d = len(domain)
    workload = Workload.all_way(d) if aim.workload is None else Workload.of(domain, aim.workload)
    candidates = workload.candidates()
    weights = dict(zip(candidates, integer_weights(list(candidates.values())), strict=True))
    oracle = LocalOracle(codes, domain, noise)
    rounds_t = aim.rounds_per_attribute * d
    sigma = math.sqrt(rounds_t / (2.0 * aim.alpha * rho))
    epsilon = math.sqrt(8.0 * (1.0 - aim.alpha) * rho / rounds_t)
    ones = oracle.measure([(a,) for a in range(d)], sigma, "every 1-way marginal")
    used = d / (2.0 * sigma**2)
    n_hat = record_total(0.0, 0.0, ones)  # no count is released: its weight is 0
    measured = [Measurement(m, v, 1.0 / sigma) for m, v in ones.values.items()]
    graph = _Graph(domain)
    model = MarkovRandomField(domain, graph.tree(domain), total=n_hat)
    iterations = [_fit(model, measured, aim.iters, options)]
    rounds: list[Round] = []
    last = False
    while not last:
        if rho - used < 2.0 * (1.0 / (2.0 * sigma**2) + epsilon**2 / 8.0):
            left = rho - used
            sigma = math.sqrt(1.0 / (2.0 * aim.alpha * left))
            epsilon = math.sqrt(8.0 * (1.0 - aim.alpha) * left)
            last = True
        used += 1.0 / (2.0 * sigma**2) + epsilon**2 / 8.0
        limit = aim.max_cells * used / rho
        small = [m for m in candidates if graph.holds(m) or graph.cells(m) <= limit]
        estimates = {m: model.marginal(m).ravel() for m in small}
        chosen = oracle.select(
            estimates, weights, sigma, epsilon, f"round {len(rounds) + 1}: AIM's selection"
        )
        values = oracle.measure([chosen], sigma, f"round {len(rounds) + 1}: the selection")
        measured.append(Measurement(chosen, values.values[chosen], 1.0 / sigma))
        if not graph.holds(chosen):
            graph.add(chosen)
            model = _regrow(model, graph.tree(domain))
        iterations.append(_fit(model, measured, aim.iters, options))
        rounds.append(Round(chosen, sigma, epsilon))
        if say is not None:
            columns = ", ".join(domain.names[a] for a in chosen)
            say(f"round {len(rounds)}: ({columns}), sigma {sigma:.4g}, {iterations[-1]} iterations")
        moved = float(np.abs(model.marginal(chosen).ravel() - estimates[chosen]).sum())
        if moved <= NOISE_L1 * sigma * oracle.cells(chosen):
            sigma, epsilon = sigma / 2.0, epsilon * 2.0
    tree = model.tree
    found = GraphSearchResult(graph.edges(), graph.edges(), tuple(sorted(tree.cliques)))
    fit = LocalFit(model, found, tree, n_hat, tuple(measured), sigma, tuple(iterations))
    return fit, tuple(rounds)


def _regrow(model: MarkovRandomField, tree: JunctionTree) -> MarkovRandomField:
    """A model on ``tree`` (whose cliques hold every clique of ``model``) with the same
    distribution: each old clique's log-potential added into a new clique holding it."""
    layout, values = model.layout, model.potentials.values
    factors: dict[tuple[int, ...], np.ndarray] = {
        c: values[layout.slice(i)].reshape(layout.shapes[i]) for i, c in enumerate(layout.cliques)
    }
    return MarkovRandomField(model.domain, tree, potentials=factors, total=model.total)


def _fit(
    model: MarkovRandomField, measured: list[Measurement], iters: int, options: PrivMRFOptions
) -> int:
    """Mirror descent from the model's potentials for ``iters`` iterations, or until the
    loss falls by less than ``options``' tolerance; the iterations. No early stop at the
    noise's expected loss: a fit stopped early barely moves the model, and the next round
    would take that for a measurement that taught it nothing and halve sigma."""
    result = mirror_descent(
        model, measured, iters=iters, tol=options.tol, check_every=options.check_every
    )
    return int(result.iterations)
