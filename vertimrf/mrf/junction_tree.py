"""Triangulation, maximal cliques, the junction tree, its message order and the
model-size check; design notes in docs/design/mrf.md."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import networkx as nx
import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, ModelTooLargeError
from vertimrf.mrf.cliques import Clique, CliqueLayout
from vertimrf.mrf.memo import QUERY_MEMO_TABLE_SETS, QueryMemo

#: Default cell limit: total cells over all clique tables (one float64 table set is 8 bytes/cell).
DEFAULT_MAX_CELLS = 50_000_000

#: Float64 clique-table buffers alive during a mirror-descent fit: the model's potentials,
#: beliefs and probabilities, the fit's current, trial and gradient potentials, and the
#: memo of the model's exact queries.
FIT_TABLE_SETS = 6 + QUERY_MEMO_TABLE_SETS

HEURISTICS = ("min_fill", "min_weight", "static_min_degree")


@dataclass(frozen=True)
class ModelSize:
    """Size of a model's clique tables, known before any fitting.

    ``bytes`` is the memory of one float64 table set (``8 * total_cells``); ``fit_bytes`` is the
    working memory of a mirror-descent fit (``FIT_TABLE_SETS`` table sets).
    """

    max_clique_cells: int
    total_cells: int
    bytes: int
    fit_bytes: int
    n_cliques: int

    def __str__(self) -> str:
        return (
            f"{self.n_cliques} cliques, largest {self.max_clique_cells:,} cells, total "
            f"{self.total_cells:,} cells, {_human(self.bytes)} per table set, "
            f"~{_human(self.fit_bytes)} to fit"
        )


def _human(n: int) -> str:
    """Bytes in binary units, e.g. '2.8 MiB'."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    size = float(n)
    i = 0
    while size >= 1024 and i < len(units) - 1:
        size /= 1024
        i += 1
    return f"{size:.1f} {units[i]}"


def model_size(domain: Domain, cliques: Iterable[Iterable[int]]) -> ModelSize:
    """Cells and memory of dense float64 tables over ``cliques`` (as given, no triangulation)."""
    sizes = [domain.size(tuple(c)) for c in cliques]
    total = sum(sizes)
    return ModelSize(
        max(sizes, default=0), total, 8 * total, 8 * total * FIT_TABLE_SETS, len(sizes)
    )


def check_model_size(size: ModelSize, max_cells: int | None) -> None:
    """Raise ModelTooLargeError when ``size`` exceeds the cell limit (default DEFAULT_MAX_CELLS)."""
    limit = DEFAULT_MAX_CELLS if max_cells is None else int(max_cells)
    if size.total_cells > limit:
        raise ModelTooLargeError(
            f"The junction tree needs {size.total_cells:,} cells ({size}), over the limit of "
            f"{limit:,}. Use fewer or smaller cliques (fewer edges, coarser domains), try "
            "heuristic='min_weight', or raise max_cells if the machine has the memory."
        )


def _as_graph(domain: Domain, cliques_or_edges: Iterable[Iterable[int]] | nx.Graph) -> nx.Graph:
    """Attribute graph with nodes 0..d-1 (in order) and every given clique made complete."""
    d = len(domain)
    g = nx.Graph()
    g.add_nodes_from(range(d))
    if isinstance(cliques_or_edges, nx.Graph):
        groups: list[tuple[int, ...]] = [tuple(e) for e in cliques_or_edges.edges]
        groups += [(v,) for v in cliques_or_edges.nodes]
    else:
        groups = [tuple(c) for c in cliques_or_edges]
    for grp in groups:
        attrs = []
        for a in grp:
            try:
                a = operator.index(a)
            except TypeError:
                raise DomainError(
                    f"Clique {grp} holds {a!r}; use integer attribute indices."
                ) from None
            if not 0 <= a < d:
                raise DomainError(
                    f"Clique {grp} uses attribute {a}, outside the domain's 0..{d - 1}."
                )
            attrs.append(a)
        for i, a in enumerate(attrs):
            for b in attrs[i + 1 :]:
                if a != b:
                    g.add_edge(a, b)
    return g


# Static min-degree triangulation on adjacency bitmasks (attribute ``i`` is bit ``i``). The graph
# search triangulates thousands of candidate graphs, so this is kept free of networkx; the
# networkx-level :func:`triangulate` uses it for the ``static_min_degree`` heuristic.

_BITS_CACHE: dict[int, tuple[int, ...]] = {}


def mask_bits(mask: int) -> tuple[int, ...]:
    """Set bit positions of ``mask``, ascending (memoised: the search asks for few masks)."""
    out = _BITS_CACHE.get(mask)
    if out is None:
        found = []
        rest = mask
        while rest:
            low = rest & -rest
            found.append(low.bit_length() - 1)
            rest ^= low
        out = tuple(found)
        if len(_BITS_CACHE) < 1 << 18:
            _BITS_CACHE[mask] = out
    return out


def _mcs_order(adj: Sequence[int]) -> list[int]:
    """Maximum cardinality search visit order (ties by the smallest index).

    The unvisited nodes are kept as one bitmask per weight, so each step takes the lowest bit
    of the heaviest non-empty level: O(edges) mask operations, not O(d^2) comparisons.
    """
    d = len(adj)
    weight = [0] * d
    level = [(1 << d) - 1] + [0] * d  # level[w]: the unvisited nodes of weight w
    top = 0
    unvisited = (1 << d) - 1
    order = []
    for _ in range(d):
        while not level[top]:
            top -= 1
        low = level[top] & -level[top]
        v = low.bit_length() - 1
        order.append(v)
        level[top] ^= low
        unvisited ^= low
        for u in mask_bits(adj[v] & unvisited):
            bit = 1 << u
            level[weight[u]] ^= bit
            weight[u] += 1
            level[weight[u]] |= bit
            top = max(top, weight[u])
    return order


def _peo_if_chordal(adj: Sequence[int]) -> list[int] | None:
    """A perfect elimination order if the graph is chordal, else None.

    The reverse of a maximum cardinality search order is perfect iff the graph is chordal
    (Tarjan and Yannakakis 1984): for each node, its first-eliminated later neighbour must
    be adjacent to all its other later neighbours.
    """
    order = _mcs_order(adj)[::-1]
    position = [0] * len(adj)
    for k, v in enumerate(order):
        position[v] = k
    for v in order:
        later = [u for u in mask_bits(adj[v]) if position[u] > position[v]]
        if len(later) > 1:
            first = min(later, key=position.__getitem__)
            rest = sum(1 << u for u in later) & ~(1 << first)
            if rest & ~adj[first]:
                return None
    return order


def static_min_degree_order(adj: Sequence[int]) -> list[int]:
    """The reference's elimination order: nodes sorted once by degree, ties by index."""
    return sorted(range(len(adj)), key=lambda v: (adj[v].bit_count(), v))


def _static_elimination(adj: Sequence[int]) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Static min-degree elimination: (chordal adjacency, elimination order, fill edges)."""
    d = len(adj)
    order = static_min_degree_order(adj)
    filled = list(adj)
    fill = []
    alive = (1 << d) - 1
    for v in order:
        alive &= ~(1 << v)
        nbrs = filled[v] & alive
        for u in mask_bits(nbrs):
            add = nbrs & ~(1 << u) & ~filled[u]
            if add:
                for t in mask_bits(add):
                    filled[t] |= 1 << u
                    fill.append((min(u, t), max(u, t)))
                filled[u] |= add
    return filled, order, fill


def triangulate_masks(adj: Sequence[int]) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    """Static min-degree triangulation of a graph given as adjacency bitmasks (node ``i`` is
    bit ``i``): the chordal supergraph, a perfect elimination order of it and the fill edges
    (pairs ``(min, max)`` in elimination order); a chordal graph is returned unchanged."""
    peo = _peo_if_chordal(adj)
    if peo is not None:
        return list(adj), peo, []
    return _static_elimination(adj)


def clique_masks(adj: Sequence[int], peo: Sequence[int]) -> list[int]:
    """Maximal cliques (bitmasks) of a chordal graph given a perfect elimination order.

    For the graph search's feasibility checks, which triangulate thousands of candidate
    graphs: about 100x faster than building a networkx graph for :func:`maximal_cliques`.
    """
    later = (1 << len(adj)) - 1
    candidates = []
    own: dict[int, int] = {}
    maximal = set()
    for v in peo:
        later &= ~(1 << v)
        c = (1 << v) | (adj[v] & later)
        candidates.append(c)
        # Only a node eliminated before v and adjacent to it has v in its candidate, so only
        # such a node's candidate can hold v's.
        if not any(c & own[u] == c for u in mask_bits(adj[v] & ~later & ~(1 << v))):
            maximal.add(c)
        own[v] = c
    return [c for c in sorted(set(candidates), key=lambda m: -m.bit_count()) if c in maximal]


def _masks(graph: nx.Graph) -> tuple[list[int], list]:
    """Adjacency bitmasks of ``graph`` (node at position ``i`` of ``graph.nodes`` is bit ``i``)."""
    nodes = list(graph.nodes)
    pos = {v: i for i, v in enumerate(nodes)}
    return [sum(1 << pos[u] for u in graph.adj[v]) for v in nodes], nodes


def _fill_in(adj: dict[int, set[int]], v: int) -> int:
    nb = list(adj[v])
    return sum(1 for i, a in enumerate(nb) for b in nb[i + 1 :] if b not in adj[a])


def _weight(adj: dict[int, set[int]], v: int, domain: Domain) -> int:
    return domain.size([v, *adj[v]])


def _eliminate(adj: dict[int, set[int]], v: int, fill: list[tuple[int, int]]) -> None:
    nb = list(adj[v])
    for i, a in enumerate(nb):
        for b in nb[i + 1 :]:
            if b not in adj[a]:
                adj[a].add(b)
                adj[b].add(a)
                fill.append((a, b))
    for a in nb:
        adj[a].discard(v)
    del adj[v]


def elimination_order(graph: nx.Graph, domain: Domain, heuristic: str) -> list[int]:
    """Greedy elimination order of ``graph``'s nodes under ``heuristic``.

    ``min_fill``: fewest fill edges (ties: smallest clique weight, then index).
    ``min_weight``: smallest product of domain sizes of the node and its neighbours (ties: fill).
    ``static_min_degree``: the reference's order, nodes sorted once by degree in the original
    graph (stable, so ties keep node order).
    """
    if heuristic == "static_min_degree":
        masks, nodes = _masks(graph)
        return [nodes[i] for i in static_min_degree_order(masks)]
    adj = {v: set(graph.adj[v]) for v in graph.nodes}
    order: list[int] = []
    scratch: list[tuple[int, int]] = []
    while adj:
        if heuristic == "min_fill":
            v = min(adj, key=lambda u: (_fill_in(adj, u), _weight(adj, u, domain), u))
        else:
            v = min(adj, key=lambda u: (_weight(adj, u, domain), _fill_in(adj, u), u))
        order.append(v)
        _eliminate(adj, v, scratch)
    return order


def triangulate(graph: nx.Graph, domain: Domain, heuristic: str = "min_fill") -> nx.Graph:
    """Chordal supergraph of ``graph`` (the graph itself when it is already chordal).

    ``static_min_degree`` is :func:`triangulate_masks`, the elimination the graph search runs
    on bitmasks; the other heuristics eliminate in their :func:`elimination_order`.
    """
    if heuristic not in HEURISTICS:
        raise ConfigError(
            f"Unknown triangulation heuristic {heuristic!r}; use one of {HEURISTICS}."
        )
    chordal = graph.copy()
    if heuristic == "static_min_degree":
        masks, nodes = _masks(graph)
        chordal.add_edges_from((nodes[a], nodes[b]) for a, b in triangulate_masks(masks)[2])
        return chordal
    if nx.is_chordal(graph):
        return chordal
    adj = {v: set(graph.adj[v]) for v in graph.nodes}
    fill: list[tuple[int, int]] = []
    for v in elimination_order(graph, domain, heuristic):
        _eliminate(adj, v, fill)
    chordal.add_edges_from(fill)
    return chordal


def maximal_cliques(chordal: nx.Graph) -> list[Clique]:
    """Maximal cliques of a chordal graph as sorted tuples, in networkx's order."""
    if not chordal.edges:
        return [(v,) for v in chordal.nodes]
    return [tuple(sorted(c)) for c in nx.chordal_graph_cliques(chordal)]


def _max_spanning_tree(cliques: Sequence[Clique]) -> list[tuple[int, int]]:
    """Kruskal on separator size (0-weight pairs included, so the tree is always connected)."""
    k = len(cliques)
    sets = [set(c) for c in cliques]
    pairs = sorted((-len(sets[i] & sets[j]), i, j) for i in range(k) for j in range(i + 1, k))
    parent = list(range(k))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    edges = []
    for _, i, j in pairs:
        ri, rj = find(i), find(j)
        if ri != rj:
            parent[ri] = rj
            edges.append((i, j))
            if len(edges) == k - 1:
                break
    return edges


def _triangulated(
    domain: Domain, cliques_or_edges: Iterable[Iterable[int]] | nx.Graph, heuristic: str
) -> tuple[nx.Graph, list[Clique]]:
    """The chordal graph of the attribute graph under ``heuristic`` and its sorted maximal
    cliques."""
    if len(domain) == 0:
        raise DomainError("The domain has no attributes; an MRF needs at least one.")
    chordal = triangulate(_as_graph(domain, cliques_or_edges), domain, heuristic)
    return chordal, sorted(maximal_cliques(chordal))


def triangulated_cliques(
    domain: Domain,
    cliques_or_edges: Iterable[Iterable[int]] | nx.Graph,
    *,
    heuristic: str = "min_fill",
) -> list[Clique]:
    """The cliques :meth:`JunctionTree.build` gives the same graph, however many cells
    they hold (nothing is allocated, nothing refused)."""
    return _triangulated(domain, cliques_or_edges, heuristic)[1]


def triangulated_size(
    domain: Domain,
    cliques_or_edges: Iterable[Iterable[int]] | nx.Graph,
    *,
    heuristic: str = "min_fill",
) -> ModelSize:
    """The size of the model :meth:`JunctionTree.build` makes of the same graph, found on
    the same triangulation, however large (nothing is allocated, nothing refused)."""
    return model_size(domain, triangulated_cliques(domain, cliques_or_edges, heuristic=heuristic))


class JunctionTree:
    """Maximal cliques of a chordal graph joined into a rooted tree with a two-pass message order.

    Attributes:
        cliques: maximal cliques as sorted attribute tuples.
        edges: tree edges ``(parent, child)`` as clique indices, in pre-order from the root.
        separators: ``separators[e]`` is the sorted intersection of edge ``e``'s cliques.
        message_order: ``(src, dst, edge)`` triples, all child-to-parent messages (post-order)
            then all parent-to-child messages (pre-order); ``2 * (len(cliques) - 1)`` in all.
        root: index of the root clique (the largest).
        parent: parent clique index of every clique (-1 for the root).
        preorder: clique indices, root first, every parent before its children.
        chordal_graph: the triangulated attribute graph.
        size: the :class:`ModelSize` of the clique tables.
    """

    def __init__(
        self,
        domain: Domain,
        chordal_graph: nx.Graph,
        cliques: Sequence[Clique],
        tree_edges: Sequence[tuple[int, int]],
    ) -> None:
        self.domain = domain
        self.chordal_graph = chordal_graph
        self.cliques: list[Clique] = list(cliques)
        self.size = model_size(domain, self.cliques)
        sizes = [domain.size(c) for c in self.cliques]
        self.root = max(range(len(sizes)), key=lambda i: (sizes[i], -i)) if sizes else 0
        nbrs: dict[int, list[int]] = {i: [] for i in range(len(self.cliques))}
        for a, b in tree_edges:
            nbrs[a].append(b)
            nbrs[b].append(a)
        self.parent = [-1] * len(self.cliques)
        preorder: list[int] = []
        stack = [self.root]
        seen = {self.root}
        while stack:
            a = stack.pop()
            preorder.append(a)
            for b in sorted(nbrs[a], reverse=True):
                if b not in seen:
                    seen.add(b)
                    self.parent[b] = a
                    stack.append(b)
        self.preorder = preorder
        self.edges: list[tuple[int, int]] = [(self.parent[v], v) for v in preorder[1:]]
        self.separators: list[Clique] = [
            tuple(sorted(set(self.cliques[a]) & set(self.cliques[b]))) for a, b in self.edges
        ]
        up = [(b, a, e) for e, (a, b) in reversed(list(enumerate(self.edges)))]
        down = [(a, b, e) for e, (a, b) in enumerate(self.edges)]
        self.message_order: list[tuple[int, int, int]] = up + down

    @classmethod
    def build(
        cls,
        domain: Domain,
        cliques_or_edges: Iterable[Iterable[int]] | nx.Graph,
        *,
        heuristic: str = "min_fill",
        max_cells: int | None = None,
    ) -> JunctionTree:
        """Junction tree of the attribute graph given by cliques, edges or a networkx graph.

        Every attribute of ``domain`` is a node; attributes in no clique become singleton
        cliques. Raises ModelTooLargeError when the tables would exceed ``max_cells`` cells
        (default :data:`DEFAULT_MAX_CELLS`); nothing is allocated before that check.
        """
        chordal, cliques = _triangulated(domain, cliques_or_edges, heuristic)
        check_model_size(model_size(domain, cliques), max_cells)
        return cls(domain, chordal, cliques, _max_spanning_tree(cliques))

    def __repr__(self) -> str:
        return f"JunctionTree({len(self.cliques)} cliques, {self.size})"


class CalibratedModel(Protocol):
    """What queries and sampling read of a model on a junction tree
    (:class:`~vertimrf.mrf.model.MarkovRandomField`), calibrated when asked."""

    domain: Domain
    tree: JunctionTree
    layout: CliqueLayout

    def clique_log_marginal(self, clique: Iterable[int]) -> np.ndarray: ...

    def clique_marginals(self) -> np.ndarray: ...

    def query_memo(self) -> QueryMemo: ...
