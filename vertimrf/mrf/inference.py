"""Exact marginal queries on a calibrated junction tree, for any
attribute set; design notes in docs/design/mrf.md."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.mrf.cliques import Clique, expand_to, sum_onto_many
from vertimrf.mrf.junction_tree import (
    DEFAULT_MAX_CELLS,
    CalibratedModel,
    check_model_size,
    model_size,
)
from vertimrf.mrf.memo import QueryMemo

LogFactor = tuple[Clique, np.ndarray]


def logsumexp(x: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Stable log(sum(exp(x))) over ``axis``; all -inf gives -inf."""
    m = np.max(x, axis=axis, keepdims=True) if x.size else np.full((1,) * x.ndim, -np.inf)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


#: Largest intermediate (cells) einsum may build; numpy's default (the largest operand) forces
#: naive multi-operand loops, hundreds of times slower on cross-clique queries.
EINSUM_MAX_INTERMEDIATE = 1 << 24


def _lse_onto(f: LogFactor, keep: set[int]) -> LogFactor:
    attrs, table = f
    axes = tuple(i for i, a in enumerate(attrs) if a not in keep)
    if not axes:
        return f
    return tuple(a for a in attrs if a in keep), np.asarray(logsumexp(table, axes))


def _product(f: LogFactor, g: LogFactor) -> LogFactor:
    attrs = tuple(sorted(set(f[0]) | set(g[0])))
    return attrs, expand_to(f[1], f[0], attrs) + expand_to(g[1], g[0], attrs)


def _steiner(model: CalibratedModel, query: set[int]) -> dict[int, dict[int, Clique]]:
    """Smallest subtree covering ``query``: prune leaves whose query attrs their separator has."""
    tree = model.tree
    adj: dict[int, dict[int, Clique]] = {i: {} for i in range(len(tree.cliques))}
    for e, (a, b) in enumerate(tree.edges):
        adj[a][b] = tree.separators[e]
        adj[b][a] = tree.separators[e]
    leaves = [i for i in adj if len(adj[i]) == 1]
    while leaves:
        c = leaves.pop()
        if c not in adj or len(adj[c]) != 1 or len(adj) == 1:
            continue
        ((nb, sep),) = adj[c].items()
        if (set(tree.cliques[c]) & query) <= set(sep):
            del adj[c]
            del adj[nb][c]
            if len(adj[nb]) == 1:
                leaves.append(nb)
    return adj


def query_log_marginal(model: CalibratedModel, attrs: Sequence[int]) -> np.ndarray:
    """Normalised log-marginal of ``attrs`` (axes in the given order) of a calibrated model."""
    query = set(attrs)
    check_model_size(model_size(model.domain, [tuple(attrs)]), DEFAULT_MAX_CELLS)
    layout = model.layout
    home = layout.smallest_containing(query)
    if home is not None:
        clique = layout.cliques[home]
        f = _lse_onto((clique, model.clique_log_marginal(clique)), query)
    else:
        f = _tree_query(model, query)
    order = sorted(attrs)
    return np.transpose(f[1], [order.index(a) for a in attrs])


def _contract(memo: QueryMemo, factors: list[LogFactor], out: Clique) -> LogFactor:
    """Sum over the variables outside ``out`` of the product of ``factors``, all in
    probability space.

    The factors are conditionals, marginals or messages (values <= 1), contracted with
    ``np.einsum`` (which picks the elimination order, remembered per shapes, and never builds
    the full product); joint probabilities below ~1e-308 flush to zero. Above einsum's 52
    labels it falls back to log-space products.
    """
    labels = sorted(set().union(*(f[0] for f in factors)))
    if len(labels) > 52:
        with np.errstate(divide="ignore"):
            f = (factors[0][0], np.log(factors[0][1]))
            for attrs, table in factors[1:]:
                f = _product(f, (attrs, np.log(table)))
        return out, np.exp(_lse_onto(f, set(out))[1])
    pos = {a: i for i, a in enumerate(labels)}
    args: list = []
    for attrs, table in factors:
        args += [table, [pos[a] for a in attrs]]
    args.append([pos[a] for a in out])
    key = (tuple((f[0], f[1].shape) for f in factors), out)
    path = memo.path(
        key, lambda: np.einsum_path(*args, optimize=("greedy", EINSUM_MAX_INTERMEDIATE))[0]
    )
    return out, np.einsum(*args, optimize=path)


def _rooted(adj: dict[int, dict[int, Clique]], root: int) -> tuple[dict[int, int], list[int]]:
    """Parent of every clique of the subtree, and the cliques in breadth-first order."""
    parent = {root: -1}
    order = [root]
    for c in order:
        for nb in sorted(adj[c]):
            if nb not in parent:
                parent[nb] = c
                order.append(nb)
    return parent, order


def _message_scopes(
    model: CalibratedModel, adj: dict[int, dict[int, Clique]], root: int, query: set[int]
) -> tuple[dict[int, int], list[int], dict[int, set[int]]]:
    """Rooting of the subtree and the scope of every clique's message to its parent."""
    cliques = model.layout.cliques
    parent, order = _rooted(adj, root)
    below: dict[int, set[int]] = {}
    scopes: dict[int, set[int]] = {}
    for c in reversed(order):
        below[c] = (set(cliques[c]) & query).union(
            *(below[k] for k in adj[c] if parent.get(k) == c)
        )
        if c != root:
            scopes[c] = set(adj[c][parent[c]]) | below[c]
    return parent, order, scopes


def _conditional(
    model: CalibratedModel, memo: QueryMemo, c: int, keep: Clique, given: Clique | None
) -> LogFactor:
    """Clique ``c``'s calibrated marginal of ``keep``, divided by its marginal of ``given``
    (unless None), as probabilities (0/0 = 0); summed from the clique's probabilities. Both
    are remembered in ``memo``, the model's for its calibration."""
    clique = model.layout.cliques[c]

    def make() -> LogFactor:
        probs = memo.table(c, lambda: (clique, np.exp(model.clique_log_marginal(clique))))
        f = _sum_onto(probs, keep)
        if given is None:
            return f
        s = expand_to(_sum_onto(f, given)[1], given, keep)
        with np.errstate(invalid="ignore", divide="ignore"):
            return keep, np.where(s > 0, f[1] / s, 0.0)

    return memo.table((c, keep, given), make)


def _sum_onto(f: LogFactor, keep: Clique) -> LogFactor:
    """Probability table ``f`` summed over its attributes outside ``keep`` (sorted)."""
    if len(keep) == len(f[0]):
        return f
    return keep, sum_onto_many(f[1], [[a in keep for a in f[0]]])[0]


def _tree_query(model: CalibratedModel, query: set[int]) -> LogFactor:
    cliques = model.layout.cliques
    memo = model.query_memo()
    adj = _steiner(model, query)
    cost = {}
    for r in adj:  # root the subtree where the messages, which carry query attrs, are smallest
        scopes = _message_scopes(model, adj, r, query)[2]
        cost[r] = sum(model.domain.size(sorted(s)) for s in scopes.values())
    root = min(adj, key=lambda r: (cost[r], r))
    parent, order, scopes = _message_scopes(model, adj, root, query)
    msgs: dict[int, list[LogFactor]] = {c: [] for c in order}

    def kept(c: int) -> Clique:
        return tuple(sorted((set(cliques[c]) & query).union(*(set(s) for s in adj[c].values()))))

    for c in reversed(order[1:]):
        f = _conditional(model, memo, c, kept(c), tuple(adj[c][parent[c]]))
        msgs[parent[c]].append(_contract(memo, [f, *msgs[c]], tuple(sorted(scopes[c]))))
    f = _conditional(model, memo, root, kept(root), None)
    attrs, probs = _contract(memo, [f, *msgs[root]], tuple(sorted(query)))
    with np.errstate(divide="ignore"):
        return attrs, np.log(probs)
