"""The server's fit when the parties' record sets differ (``record_sets="partial"``): the
noisy releases of a secure run as :class:`~vertimrf.synth.union.PartialReleases`, and the
model over the union of the records (:mod:`vertimrf.synth.union`).

Every table is post-processing of a DP release (no new charge):

* a marginal within one party's attributes is counted over that party's records: an
  ``own`` table;
* a 2-way marginal across two parties is counted over the records both hold: a ``cross``
  table;
* a party's attribute against a peer's presence (its counts over the records both hold) is
  the sum of a cross table over the peer's attribute with the fewest values (every record
  the peer holds has one value of it), of variance that many times the cell's;
* the region counts are those the deal published, each with the dummies' and the server's
  noise (variance 2 sigma_r^2 to the server).

Marginals the fit cannot read this way (across three or more parties' attributes, or
measured on bins) are left out; ``skipped`` counts them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.protocol.secure import SecurePlan
from vertimrf.server.secure.state import Tables
from vertimrf.synth.union import NoisyTable, PartialReleases


def partial_releases(
    plan: SecurePlan,
    domain: Domain,
    tables: Iterable[Tables],
    regions: Mapping[int, int],
) -> tuple[PartialReleases, int]:
    """The run's releases (``tables``: each release's noisy marginals and their noise
    scales; ``regions``: the published region counts) over ``domain`` as the union model's
    input, and the number of marginals left out."""
    assert plan.regions is not None  # partial record sets
    sizes = domain.sizes
    owner = tuple(plan.owner[a] for a in range(len(sizes)))
    own: list[NoisyTable] = []
    cross: list[NoisyTable] = []
    skipped = 0
    for release in tables:
        for m, v in release.values.items():
            shape = [sizes[a] for a in m]
            parties = {owner[a] for a in m}
            if v.size != math.prod(shape) or (len(parties) > 1 and len(m) > 2):
                skipped += 1  # measured on bins, or across more than two attributes
                continue
            table = NoisyTable(m, np.asarray(v, np.float64).reshape(shape), release.scale[m])
            (own if len(parties) == 1 else cross).append(table)
    releases = PartialReleases(
        domain=domain,
        owner=owner,
        own=tuple(own),
        cross=tuple(cross),
        presence=_presence(cross, owner, sizes),
        regions={t: float(r) for t, r in regions.items()},
        region_sigma=math.sqrt(2.0) * plan.regions.sigma,
    )
    return releases, skipped


def _presence(
    cross: Sequence[NoisyTable], owner: Sequence[int], sizes: Sequence[int]
) -> dict[tuple[int, int], tuple[NoisyTable, ...]]:
    """For each ordered pair (p, q), p's attributes counted over the records p and q both
    hold: each cross table of p's attribute and q's, summed over q's (the fewest values)."""
    best: dict[tuple[int, int], NoisyTable] = {}  # (a, q) -> the table to sum
    for t in cross:
        for axis, a in enumerate(t.attrs):
            other = t.attrs[1 - axis]
            key = (a, owner[other])
            if key not in best or sizes[other] < sizes[_other(best[key], a)]:
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
