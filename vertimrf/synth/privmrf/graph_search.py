"""Greedy attribute-graph search under clique-size and total-size caps (analysis
section 2.4); design notes in docs/design/synth.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.mrf.junction_tree import clique_masks, mask_bits, maximal_cliques, triangulate_masks

_TIE = 1e-12


@dataclass(frozen=True)
class GraphSearchResult:
    """The searched graph's edges, its triangulation's edges and maximal cliques."""

    edges: tuple[tuple[int, int], ...]
    chordal_edges: tuple[tuple[int, int], ...]
    cliques: tuple[tuple[int, ...], ...]


def _edges(adj: Sequence[int]) -> tuple[tuple[int, int], ...]:
    return tuple((i, j) for i in range(len(adj)) for j in mask_bits(adj[i]) if j > i)


def _every_graph_fits(sizes: Sequence[int], max_clique: float, max_total: float) -> bool:
    """True if no triangulated graph can break the caps. The complete graph has one clique of
    prod(sizes) cells; any other chordal graph has at most d maximal cliques, each missing an
    attribute, so at most d * prod(sizes) / min(sizes) cells in total."""
    full = math.prod(int(s) for s in sizes)
    worst_total = max(full, len(sizes) * full // min(int(s) for s in sizes))
    return full <= max_clique and worst_total <= max_total


class _CellCounter:
    """Product of domain sizes over a bitmask, memoised."""

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = [int(s) for s in sizes]
        self.cache: dict[int, int] = {}

    def __call__(self, mask: int) -> int:
        cells = self.cache.get(mask)
        if cells is None:
            cells = math.prod(self.sizes[i] for i in mask_bits(mask))
            self.cache[mask] = cells
        return cells


def greedy_graph_search(
    scores: np.ndarray,
    sizes: Sequence[int],
    *,
    max_clique_cells: float,
    max_total_cells: float,
    size_penalty: float,
    rng: np.random.Generator,
) -> GraphSearchResult:
    """Grow an attribute graph edge by edge (analysis section 2.4); see the module docstring.

    ``scores`` is the symmetric (d, d) matrix of noisy normalised TVDs.
    """
    d = len(sizes)
    if scores.shape != (d, d):
        raise ConfigError(f"scores must be ({d}, {d}); got {scores.shape}.")
    cells = _CellCounter(sizes)
    if max(sizes) > max_clique_cells or sum(sizes) > max_total_cells:
        raise ConfigError(
            f"the size caps (max_clique_cells={max_clique_cells:g}, max_total_cells="
            f"{max_total_cells:g}) cannot hold even the 1-way marginals; raise them."
        )
    w = scores.tolist()
    adj = [0] * d
    if _every_graph_fits(sizes, max_clique_cells, max_total_cells):
        # Every candidate is feasible, so every step adds an edge whatever the scores and the
        # search ends at the complete graph; skip the O(d^4) triangulations.
        adj = [((1 << d) - 1) & ~(1 << v) for v in range(d)]
    base = 0.0
    while True:
        absent = [(i, j) for i in range(d) for j in range(i + 1, d) if not adj[i] >> j & 1]
        best_score, best_edge = -math.inf, None
        for k in rng.permutation(len(absent)):
            i, j = absent[k]
            trial = list(adj)
            trial[i] |= 1 << j
            trial[j] |= 1 << i
            chordal, peo, fill = triangulate_masks(trial)
            cliques = clique_masks(chordal, peo)
            sizes_c = [cells(c) for c in cliques]
            total = sum(sizes_c)
            if max(sizes_c) > max_clique_cells or total > max_total_cells:
                continue
            score = base + w[i][j] + sum(w[a][b] for a, b in fill) - size_penalty * total
            # Candidates that triangulate to the same graph tie up to rounding; the first in
            # the random order wins.
            if score > best_score + _TIE:
                best_score, best_edge = score, (i, j)
        if best_edge is None:
            break
        i, j = best_edge
        adj[i] |= 1 << j
        adj[j] |= 1 << i
        base += w[i][j]
    chordal_edges = _edges(triangulate_masks(adj)[0])
    graph = nx.Graph()
    graph.add_nodes_from(range(d))
    graph.add_edges_from(chordal_edges)
    return GraphSearchResult(_edges(adj), chordal_edges, tuple(sorted(maximal_cliques(graph))))
