"""The engine's bitmask triangulation and the greedy graph search, against networkx."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.mrf.junction_tree import (
    clique_masks,
    mask_bits,
    maximal_cliques,
    triangulate,
    triangulate_masks,
)
from vertimrf.synth.privmrf.graph_search import greedy_graph_search


def _random_adj(rng: np.random.Generator, d: int, p: float) -> tuple[list[int], nx.Graph]:
    g = nx.Graph()
    g.add_nodes_from(range(d))
    g.add_edges_from(e for e in itertools.combinations(range(d), 2) if rng.random() < p)
    adj = [sum(1 << u for u in g.adj[v]) for v in range(d)]
    return adj, g


def _to_nx(adj: list[int]) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(len(adj)))
    g.add_edges_from((v, u) for v in range(len(adj)) for u in range(len(adj)) if adj[v] >> u & 1)
    return g


def _static_triangulation(g: nx.Graph) -> nx.Graph:
    """Reference (analysis 1.3): skip if chordal, else eliminate in original-degree order."""
    if nx.is_chordal(g):
        return g.copy()
    work, out = g.copy(), g.copy()
    for v in sorted(g.nodes, key=lambda u: (g.degree[u], u)):
        nb = list(work.adj[v])
        for a, b in itertools.combinations(nb, 2):
            work.add_edge(a, b)
            out.add_edge(a, b)
        work.remove_node(v)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_triangulation_and_cliques_match_networkx(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 11))
    adj, g = _random_adj(rng, d, float(rng.uniform(0.1, 0.7)))
    chordal, peo, fill = triangulate_masks(adj)
    assert (not fill) == nx.is_chordal(g)  # a chordal graph is returned unchanged
    h = _to_nx(chordal)
    assert set(map(frozenset, h.edges)) == set(map(frozenset, _static_triangulation(g).edges))
    assert set(fill) == {tuple(sorted(e)) for e in h.edges} - {tuple(sorted(e)) for e in g.edges}
    expected = sorted(tuple(sorted(c)) for c in nx.find_cliques(h))
    assert sorted(mask_bits(m) for m in clique_masks(chordal, peo)) == expected
    assert sorted(maximal_cliques(h)) == expected
    # the networkx-level triangulator's static heuristic is the same elimination
    tri = triangulate(g, Domain.from_sizes([2] * d), "static_min_degree")
    assert set(map(frozenset, tri.edges)) == set(map(frozenset, h.edges))


def _plain_mcs(adj: list[int]) -> list[int]:
    """Maximum cardinality search by scanning every unvisited node (ties: smallest index)."""
    d = len(adj)
    weight, order, seen = [0] * d, [], set()
    for _ in range(d):
        v = max((u for u in range(d) if u not in seen), key=lambda u: (weight[u], -u))
        order.append(v)
        seen.add(v)
        for u in range(d):
            if u not in seen and adj[v] >> u & 1:
                weight[u] += 1
    return order


@pytest.mark.parametrize("seed", range(12))
def test_wide_graphs_triangulate_to_networkx_cliques(seed: int) -> None:
    """Graphs of 20-90 nodes (masks wider than a machine word), sparse to dense: the search
    order is the plain scan's, and the cliques are networkx's on the triangulated graph."""
    from vertimrf.mrf.junction_tree import _mcs_order

    rng = np.random.default_rng(100 + seed)
    d = int(rng.integers(20, 91))
    adj, _ = _random_adj(rng, d, float(rng.uniform(0.02, 0.3)))
    assert _mcs_order(adj) == _plain_mcs(adj)
    chordal, peo, _ = triangulate_masks(adj)
    assert _mcs_order(chordal) == _plain_mcs(chordal)
    expected = sorted(tuple(sorted(c)) for c in nx.find_cliques(_to_nx(chordal)))
    assert sorted(mask_bits(m) for m in clique_masks(chordal, peo)) == expected


def _reference_search(scores, sizes, cap, total_cap, penalty, rng):
    """Plain networkx version of the search (analysis 2.4); ties go to the first candidate in
    the random order."""
    d = len(sizes)
    g = nx.Graph()
    g.add_nodes_from(range(d))
    while True:
        best, best_edge = -math.inf, None
        absent = [e for e in itertools.combinations(range(d), 2) if not g.has_edge(*e)]
        for k in rng.permutation(len(absent)):
            i, j = absent[k]
            trial = g.copy()
            trial.add_edge(i, j)
            h = _static_triangulation(trial)
            cells = [math.prod(sizes[a] for a in c) for c in nx.find_cliques(h)]
            if max(cells) > cap or sum(cells) > total_cap:
                continue
            score = sum(scores[a, b] for a, b in h.edges) - penalty * sum(cells)
            if score > best + 1e-12:
                best, best_edge = score, (i, j)
        if best_edge is None:
            return g
        g.add_edge(*best_edge)


@pytest.mark.parametrize("seed", range(8))
def test_search_matches_a_plain_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = 7
    sizes = [int(s) for s in rng.integers(2, 6, d)]
    scores = rng.random((d, d)) * 0.3
    scores = (scores + scores.T) / 2
    cap, total_cap, penalty = 150, 600, 1e-4
    got = greedy_graph_search(
        scores,
        sizes,
        max_clique_cells=cap,
        max_total_cells=total_cap,
        size_penalty=penalty,
        rng=np.random.default_rng(seed),
    )
    ref = _reference_search(scores, sizes, cap, total_cap, penalty, np.random.default_rng(seed))
    assert set(got.edges) == {tuple(sorted(e)) for e in ref.edges}
    h = _static_triangulation(ref)
    assert set(got.chordal_edges) == {tuple(sorted(e)) for e in h.edges}
    assert list(got.cliques) == sorted(tuple(sorted(c)) for c in nx.find_cliques(h))
    cells = [math.prod(sizes[a] for a in c) for c in got.cliques]
    assert max(cells) <= cap and sum(cells) <= total_cap


def test_loose_caps_give_the_complete_graph() -> None:
    sizes = [2] * 9
    scores = np.random.default_rng(0).random((9, 9))
    res = greedy_graph_search(
        (scores + scores.T) / 2,
        sizes,
        max_clique_cells=1e7,
        max_total_cells=5e7,
        size_penalty=1e-8,
        rng=np.random.default_rng(0),
    )
    assert res.cliques == (tuple(range(9)),) and len(res.edges) == 36


def test_caps_too_small_for_one_way_marginals() -> None:
    with pytest.raises(ConfigError, match="caps"):
        greedy_graph_search(
            np.zeros((2, 2)),
            [5, 3],
            max_clique_cells=4,
            max_total_cells=100,
            size_penalty=0.0,
            rng=np.random.default_rng(0),
        )
