"""The union model's structure: its cliques, its structural zeros and its
measurements; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.junction_tree import triangulated_size
from vertimrf.synth.union.measurements import Assembled, UnionDomain

__all__ = ["Structure", "presence_bins", "union_structure"]


@dataclass(frozen=True)
class Structure:
    """What the union model is built and fitted on.

    Attributes:
        cliques: the attribute sets the junction tree must cover (data attribute indices).
        zeros: log-factors, -inf at the structural zeros.
        representatives: the attribute each party's presence is read off.
        tables: the assembled tables measured, in the order of ``measurements``.
        measurements: the tables as measurements of the model (module doc).
    """

    cliques: tuple[tuple[int, ...], ...]
    zeros: dict[tuple[int, ...], np.ndarray]
    representatives: tuple[int, ...]
    tables: tuple[Assembled, ...]
    measurements: tuple[Measurement, ...]


def union_structure(
    space: UnionDomain, tables: Sequence[Assembled], cliques: Sequence[Sequence[int]] | None
) -> Structure:
    """The structure (module doc) for ``tables``; ``cliques`` (data attribute sets) bounds
    the data graph, leaving out the tables over two or more attributes in none of them
    (default: every table over data attributes is a clique)."""
    d = len(space.data)
    plain = [t for t in tables if max(t.attrs) < d]
    if cliques is None:
        groups = [set(t.attrs) for t in plain]
    else:
        groups = [{int(a) for a in c} for c in cliques]
        plain = [t for t in plain if _inside(set(t.attrs), groups)]
    groups, links, reps = _joined(space, groups)
    kept, measurements = list(plain), [_measure(t, t.attrs, space) for t in plain]
    for table in tables:
        if max(table.attrs) < d:
            continue
        attrs = _on_data(space, table.attrs, reps, groups)
        if attrs is not None:
            kept.append(table)
            measurements.append(_measure(table, attrs, space))
    zeros: dict[tuple[int, ...], np.ndarray] = {pair: _link_zeros(space, pair) for pair in links}
    zeros[reps] = _nobody_zeros(space, reps)
    return Structure(
        tuple(tuple(sorted(g)) for g in groups),
        zeros,
        reps,
        tuple(kept),
        tuple(measurements),
    )


def _joined(
    space: UnionDomain, groups: list[set[int]]
) -> tuple[list[set[int]], list[tuple[int, int]], tuple[int, ...]]:
    """``groups`` with each party's links and the representatives' group added; the links
    and the representatives."""
    links = _links(space, groups)
    groups = groups + [set(pair) for pair in links]
    reps = _representatives(space, groups)
    return [*groups, set(reps)], links, reps


def union_cells(space: UnionDomain, cliques: Sequence[Sequence[int]]) -> int:
    """The cells of the junction tree that :func:`~vertimrf.synth.union.fit_union` builds
    over data ``cliques`` (with the links and the representatives' group, triangulated as
    the model is), however many, so a caller can choose cliques whose union model fits its
    cap."""
    groups, _, _ = _joined(space, [{int(a) for a in c} for c in cliques])
    return triangulated_size(space.model_domain, groups, heuristic="min_fill").total_cells


def presence_bins(space: UnionDomain, a: int) -> np.ndarray:
    """Attribute a's values binned by presence: 1 where held, 0 at absent."""
    bins = np.ones(space.absent(a) + 1, np.int64)
    bins[space.absent(a)] = 0
    return bins


def _inside(attrs: set[int], groups: list[set[int]]) -> bool:
    """Whether ``attrs`` (one attribute or none always) lies in one of ``groups``."""
    return len(attrs) <= 1 or any(attrs <= g for g in groups)


def _links(space: UnionDomain, groups: list[set[int]]) -> list[tuple[int, int]]:
    """Each party's spanning tree of links (module doc), as attribute pairs, cheapest first
    (Kruskal, union-find): a pair inside a clique costs nothing; a pair (a, b) whose
    cliques meet costs the cells of a's clique with b added (the fill stays local); any
    other pair the cells of both cliques joined."""
    sizes = space.model_domain.sizes

    def cells(attrs: set[int]) -> int:
        return int(np.prod([sizes[a] for a in attrs], dtype=np.float64))

    links = []
    for p in range(space.parties):
        mine = space.attributes(p)
        homes = {a: [g for g in groups if a in g] or [{a}] for a in mine}
        costs = []
        for i, a in enumerate(mine):
            for b in mine[i + 1 :]:
                best = min(
                    0 if b in g else cells(g | {b}) if g & h else cells(g | h)
                    for g in homes[a]
                    for h in homes[b]
                )
                costs.append((best, a, b))
        parent = {a: a for a in mine}
        for _, a, b in sorted(costs):
            ra, rb = _root(parent, a), _root(parent, b)
            if ra != rb:
                parent[rb] = ra
                links.append((a, b))
    return links


def _root(parent: dict[int, int], a: int) -> int:
    """The root of a's component."""
    while parent[a] != a:
        a = parent[a]
    return a


def _representatives(space: UnionDomain, groups: list[set[int]]) -> tuple[int, ...]:
    """One attribute per party, all in one of ``groups`` where one holds them (module doc)."""
    sizes = space.model_domain.sizes

    def pick(pool: set[int]) -> tuple[int, ...] | None:
        chosen = []
        for p in range(space.parties):
            mine = sorted(set(space.attributes(p)) & pool, key=lambda a: (sizes[a], a))
            if not mine:
                return None
            chosen.append(mine[0])
        return tuple(chosen)

    found = [r for r in (pick(g) for g in groups) if r is not None]
    if not found:
        return pick(set(range(len(space.data)))) or ()
    return min(found, key=lambda r: (int(np.prod([sizes[a] for a in r])), r))


def _on_data(
    space: UnionDomain,
    attrs: tuple[int, ...],
    reps: tuple[int, ...],
    groups: list[set[int]],
) -> tuple[int, ...] | None:
    """A table's attributes with each presence attribute replaced by the attribute it is
    read off (module doc); None when a partner is missing."""
    d = len(space.data)
    data = {a for a in attrs if a < d}
    if not data:
        return tuple(reps[a - d] for a in attrs)
    sizes = space.model_domain.sizes
    out = []
    for a in attrs:
        if a < d:
            out.append(a)
            continue
        partners = [b for b in space.attributes(a - d) if _inside(data | {b}, groups)]
        if not partners:
            return None
        out.append(min(partners, key=lambda b: (sizes[b], b)))
    return tuple(out)


def _measure(table: Assembled, attrs: tuple[int, ...], space: UnionDomain) -> Measurement:
    """``table`` measured on the model's ``attrs``: binned by presence where a presence
    attribute was replaced, with weight 1 / the table's sigma."""
    replaced = [a != b for a, b in zip(table.attrs, attrs, strict=True)]
    bins = tuple(
        presence_bins(space, b) if r else None for b, r in zip(attrs, replaced, strict=True)
    )
    return Measurement(attrs, table.values, 1.0 / table.sigma, bins=bins if any(replaced) else None)


def _link_zeros(space: UnionDomain, pair: tuple[int, int]) -> np.ndarray:
    """-inf where one attribute of the pair is absent and the other held."""
    a, b = pair
    table = np.zeros((space.absent(a) + 1, space.absent(b) + 1))
    table[space.absent(a), : space.absent(b)] = -np.inf
    table[: space.absent(a), space.absent(b)] = -np.inf
    return table


def _nobody_zeros(space: UnionDomain, reps: tuple[int, ...]) -> np.ndarray:
    """-inf where every representative is absent."""
    table = np.zeros(tuple(space.absent(a) + 1 for a in reps))
    table[tuple(space.absent(a) for a in reps)] = -np.inf
    return table
