"""Junction tree: triangulation heuristics, cliques, tree properties, message order, size limits."""

import networkx as nx
import numpy as np
import pytest

from tests.mrf.random_models import random_spec
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, ModelTooLargeError
from vertimrf.mrf import (
    CliquePotentials,
    JunctionTree,
    MarkovRandomField,
    model_size,
    triangulate,
)
from vertimrf.mrf.cliques import CliqueLayout, ProjectionMap
from vertimrf.mrf.junction_tree import elimination_order

HEURISTICS = ["min_fill", "min_weight", "static_min_degree"]


def check_tree(tree: JunctionTree, domain: Domain, edges) -> None:
    """All the structural guarantees of a junction tree."""
    k = len(tree.cliques)
    g = tree.chordal_graph
    assert nx.is_chordal(g) and set(g.nodes) == set(range(len(domain)))
    for a, b in edges:
        assert g.has_edge(a, b)
    maximal = {tuple(sorted(c)) for c in nx.find_cliques(g)}
    assert set(tree.cliques) == maximal and len(tree.cliques) == len(maximal)
    assert all(list(c) == sorted(c) for c in tree.cliques)
    t = nx.Graph(tree.edges)
    t.add_nodes_from(range(k))
    assert nx.is_tree(t)
    for e, (a, b) in enumerate(tree.edges):
        assert tree.separators[e] == tuple(sorted(set(tree.cliques[a]) & set(tree.cliques[b])))
        assert tree.parent[b] == a
    for attr in range(len(domain)):  # running intersection property
        holding = [i for i, c in enumerate(tree.cliques) if attr in c]
        assert holding and nx.is_connected(t.subgraph(holding))
    order = tree.message_order
    assert len(order) == 2 * (k - 1)
    assert sorted((s, d) for s, d, _ in order) == sorted(
        [(b, a) for a, b in tree.edges] + list(tree.edges)
    )
    position = {(s, d): i for i, (s, d, _) in enumerate(order)}
    for (s, d), i in position.items():  # every message after all others into its source
        for (s2, d2), j in position.items():
            if d2 == s and s2 != d:
                assert j < i
    assert tree.size.total_cells == sum(domain.size(c) for c in tree.cliques)


@pytest.mark.parametrize("heuristic", HEURISTICS)
@pytest.mark.parametrize("seed", range(20))
def test_random_graphs_give_valid_junction_trees(seed: int, heuristic: str) -> None:
    domain, edges, _ = random_spec(seed)
    tree = JunctionTree.build(domain, edges, heuristic=heuristic)
    check_tree(tree, domain, edges)


def test_static_min_degree_reproduces_the_reference_order() -> None:
    """Reference: sort once by original degree (stable), eliminate in that order."""
    domain = Domain.from_sizes([2] * 6)
    # 6-cycle 0-1-2-3-4-5-0 plus chord 0-3: degrees 3,2,2,3,2,2
    g = nx.cycle_graph(6)
    g.add_edge(0, 3)
    assert elimination_order(g, domain, "static_min_degree") == [1, 2, 4, 5, 0, 3]
    tri = triangulate(g, domain, "static_min_degree")
    # eliminating 1 adds 0-2, eliminating 4 adds 3-5; nothing else is needed
    assert set(map(frozenset, tri.edges)) - set(map(frozenset, g.edges)) == {
        frozenset((0, 2)),
        frozenset((3, 5)),
    }


def test_min_weight_prefers_small_domains_and_min_fill_adds_few_edges() -> None:
    # 4-cycle with one huge attribute: min_weight must not put it in both triangles' chord
    domain = Domain.from_sizes([100, 2, 2, 2])
    g = nx.cycle_graph(4)
    tri = triangulate(g, domain, "min_weight")
    assert tri.has_edge(1, 3) and not tri.has_edge(0, 2)
    fill = triangulate(g, domain, "min_fill")
    assert fill.number_of_edges() == 5


def test_chordal_input_is_not_changed() -> None:
    domain = Domain.from_sizes([3] * 5)
    edges = [(0, 1), (1, 2), (0, 2), (2, 3), (3, 4)]
    for h in HEURISTICS:
        tree = JunctionTree.build(domain, edges, heuristic=h)
        assert tree.chordal_graph.number_of_edges() == len(edges)
        assert tree.cliques == [(0, 1, 2), (2, 3), (3, 4)]


def test_disconnected_graph_gives_one_tree_with_empty_separators() -> None:
    domain = Domain.from_sizes([2, 3, 4, 5, 6])
    tree = JunctionTree.build(domain, [(0, 1), (2, 3)])
    assert tree.cliques == [(0, 1), (2, 3), (4,)]
    assert len(tree.edges) == 2 and tree.separators.count(()) == 2
    assert tree.root == 1  # the largest clique
    check_tree(tree, domain, [(0, 1), (2, 3)])


def test_inputs_as_cliques_edges_or_networkx_graph_agree() -> None:
    domain = Domain.from_sizes([2, 3, 4, 2])
    g = nx.Graph([(0, 1), (1, 2), (0, 2), (2, 3)])
    a = JunctionTree.build(domain, [(0, 1, 2), (2, 3)])
    b = JunctionTree.build(domain, [(0, 1), (1, 2), (2, 0), (3, 2)])
    c = JunctionTree.build(domain, g)
    assert a.cliques == b.cliques == c.cliques == [(0, 1, 2), (2, 3)]


def test_model_size_report_and_cell_limit() -> None:
    domain = Domain.from_sizes([10, 20, 30, 40])
    size = model_size(domain, [(0, 1), (1, 2, 3)])
    assert size.max_clique_cells == 24_000 and size.total_cells == 24_200
    assert size.bytes == 8 * 24_200 and size.fit_bytes > size.bytes and size.n_cliques == 2
    assert "24,200" in str(size)
    tree = JunctionTree.build(domain, [(0, 1), (1, 2, 3)])
    assert tree.size == size
    with pytest.raises(ModelTooLargeError, match="24,200 cells.*limit of 1,000"):
        JunctionTree.build(domain, [(0, 1), (1, 2, 3)], max_cells=1000)
    with pytest.raises(ModelTooLargeError):
        MarkovRandomField(domain, tree, max_cells=1000)


def test_huge_model_is_refused_before_any_allocation() -> None:
    """10 attributes of size 1000 in one clique is 1e30 cells: a clear error, not an OOM."""
    domain = Domain.from_sizes([1000] * 10)
    with pytest.raises(ModelTooLargeError, match="cells"):
        MarkovRandomField(domain, [tuple(range(10))])
    with pytest.raises(ModelTooLargeError):
        JunctionTree.build(domain, [(i, (i + 1) % 10) for i in range(10)])


def test_bad_inputs_raise_clear_errors() -> None:
    domain = Domain.from_sizes([2, 3])
    with pytest.raises(DomainError, match="outside"):
        JunctionTree.build(domain, [(0, 2)])
    with pytest.raises(DomainError, match="integer"):
        JunctionTree.build(domain, [(0, "a")])
    with pytest.raises(ConfigError, match="heuristic"):
        JunctionTree.build(domain, [(0, 1)], heuristic="magic")
    with pytest.raises(DomainError, match="domain sizes"):
        MarkovRandomField(Domain.from_sizes([2, 4]), JunctionTree.build(domain, [(0, 1)]))


def test_layout_offsets_views_and_projection_maps() -> None:
    domain = Domain.from_sizes([2, 3, 4])
    layout = CliqueLayout(domain, [(0, 1), (1, 2)])
    assert list(layout.offsets) == [0, 6, 18] and layout.strides == [(3, 1), (4, 1)]
    pot = CliquePotentials(layout)
    pot[(1, 2)] = np.arange(12.0).reshape(3, 4)
    assert np.array_equal(pot.values[6:], np.arange(12.0))
    pot.table((0, 1))[1, 2] = 5.0
    assert pot.values[5] == 5.0 and pot.version == 1
    pm = ProjectionMap.build((0, 1, 2), (0, 2), domain)
    cells = (pm.base[:, None] + pm.rest[None, :]).ravel()
    assert sorted(cells) == list(range(24))
    idx = np.arange(24).reshape(2, 3, 4)
    assert np.array_equal(pm.base, idx[:, 0, :].ravel())
    assert pm.run == 4 and pm.side == 1  # the last axis (size 4) is in the subset
    with pytest.raises(ConfigError, match="not a subset"):
        ProjectionMap.build((0, 1), (2,), domain)
