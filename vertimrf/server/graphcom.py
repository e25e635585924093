"""GraphCom: join the parties' local graphs with cross-party edges (the paper's
Section 5.1); design notes in docs/design/server.md."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.junction_tree import ModelSize, maximal_cliques, model_size, triangulate


@dataclass(frozen=True)
class GraphComResult:
    """The joined graph (attribute indices), its triangulation, and what was tried."""

    graph: nx.Graph
    chordal: nx.Graph
    cliques: tuple[tuple[int, ...], ...]
    size: ModelSize
    scores: dict[tuple[int, int], float]
    added: tuple[tuple[int, int], ...]
    rejected: tuple[tuple[int, int], ...]


def dependence_score(table: np.ndarray) -> float:
    """1/2 * L1 distance between a 2-way table and the product of its margins (normalised)."""
    p = np.clip(np.asarray(table, dtype=np.float64), 0.0, None)
    s = p.sum()
    if s <= 0:
        return 0.0
    p = p / s
    return 0.5 * float(np.abs(p - np.outer(p.sum(axis=1), p.sum(axis=0))).sum())


def join_graphs(
    domain: Domain,
    local_edges: Sequence[tuple[int, int]],
    cross_pairs: Sequence[tuple[int, int]],
    pair_table: Callable[[int, int], np.ndarray],
    *,
    tau: float,
    max_model_cells: float,
    edge_fraction: float,
) -> GraphComResult:
    """Greedy cross-edge addition under the clique-size limits (see the module docstring)."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(domain)))
    graph.add_edges_from(local_edges)
    chordal = triangulate(graph, domain)
    scores = {p: dependence_score(pair_table(*p)) for p in cross_pairs}
    limit = math.ceil(edge_fraction * len(cross_pairs))
    added: list[tuple[int, int]] = []
    rejected: list[tuple[int, int]] = []
    for pair in sorted(scores, key=lambda p: (-scores[p], p)):
        if len(added) >= limit:
            break
        trial = graph.copy()
        trial.add_edge(*pair)
        tri = triangulate(trial, domain)
        size = model_size(domain, maximal_cliques(tri))
        if size.max_clique_cells <= tau and size.total_cells <= max_model_cells:
            graph, chordal = trial, tri
            added.append(pair)
        else:
            rejected.append(pair)
    cliques = tuple(maximal_cliques(chordal))
    return GraphComResult(
        graph,
        chordal,
        cliques,
        model_size(domain, cliques),
        scores,
        tuple(added),
        tuple(rejected),
    )
