"""The server's fit when the parties' record sets differ
(``record_sets="partial"``); design notes in docs/design/server.md."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import NoisyTable, PartialReleases


def partial_releases(
    plan: SecurePlan,
    domain: Domain,
    tables: Iterable[Tables],
    regions: Mapping[int, int],
    sigma: float,
) -> tuple[PartialReleases, int]:
    """The run's releases (``tables``: each release's noisy marginals and their noise
    scales; ``regions``: the published region counts, each with noise of scale ``sigma``)
    over ``domain`` as the union model's input, and the number of marginals left out."""
    sizes = domain.sizes
    owner = tuple(plan.owner[a] for a in range(len(sizes)))
    own: list[NoisyTable] = []
    across: list[NoisyTable] = []
    skipped = 0
    for release in tables:
        for m, v in release.values.items():
            shape = [sizes[a] for a in m]
            if v.size != math.prod(shape) or len({owner[a] for a in m}) > 2:
                skipped += 1  # measured on bins, or across three parties
                continue
            table = NoisyTable(m, np.asarray(v, np.float64).reshape(shape), release.scale[m])
            (own if len({owner[a] for a in m}) == 1 else across).append(table)
    covered = [set(t.attrs) for t in own]
    cross = []
    for table in across:  # each party's part needs an own table holding it
        parts = [{a for a in table.attrs if owner[a] == p} for p in {owner[a] for a in table.attrs}]
        if all(any(part <= c for c in covered) for part in parts):
            cross.append(table)
        else:
            skipped += 1
    releases = PartialReleases(
        domain=domain,
        owner=owner,
        own=tuple(own),
        cross=tuple(cross),
        presence=_presence(cross, owner, sizes),
        regions={t: float(r) for t, r in regions.items()},
        region_sigma=math.sqrt(2.0) * sigma,
    )
    return releases, skipped


def _presence(
    cross: Sequence[NoisyTable], owner: Sequence[int], sizes: Sequence[int]
) -> dict[tuple[int, int], tuple[NoisyTable, ...]]:
    """For each ordered pair (p, q), p's attributes counted over the records p and q both
    hold: a 2-way cross table of p's attribute and q's, summed over q's, the one whose sum
    has the least variance (its sigma^2 times q's attribute's values)."""

    def variance(t: NoisyTable, a: int) -> float:
        return t.sigma**2 * sizes[_other(t, a)]

    best: dict[tuple[int, int], NoisyTable] = {}  # (a, q) -> the table to sum
    for t in (t for t in cross if len(t.attrs) == 2):
        for axis, a in enumerate(t.attrs):
            key = (a, owner[t.attrs[1 - axis]])
            if key not in best or variance(t, a) < variance(best[key], a):
                best[key] = t
    out: dict[tuple[int, int], list[NoisyTable]] = {}
    for (a, q), t in sorted(best.items()):
        axis = t.attrs.index(a)
        other = t.attrs[1 - axis]
        summed = t.values.sum(axis=1 - axis)
        sigma = t.sigma * math.sqrt(sizes[other])
        out.setdefault((owner[a], q), []).append(NoisyTable((a,), summed, sigma))
    return {k: tuple(v) for k, v in out.items()}


def _other(table: NoisyTable, a: int) -> int:
    return table.attrs[1 - table.attrs.index(a)]
