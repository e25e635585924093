"""The union tables read each part (a party's own counts, its counts over the records a peer
also holds) off the release whose sum has the least variance, not off the table with the
fewest cells: a small table of the noisy first release would carry its noise into every
cross and presence table of its attributes."""

from __future__ import annotations

import math

import numpy as np

from vertimrf.domain import Domain
from vertimrf.server.secure.union_fit import _presence
from vertimrf.synth.union import NoisyTable, PartialReleases, union_tables
from vertimrf.synth.union.measurements import pooled

SIZES = (3, 4, 6, 2, 5)
OWNER = (0, 0, 0, 1, 1)
NOISY, PRECISE = 50.0, 5.0


def _table(attrs: tuple[int, ...], sigma: float) -> NoisyTable:
    shape = tuple(SIZES[a] for a in attrs)
    return NoisyTable(attrs, np.full(shape, 100.0), sigma)


def test_parts_come_from_the_least_noisy_release():
    # Attribute 0's own counts: (0, 1) has the fewest cells, (0, 2) the least noisy sum.
    own = (_table((0, 1), NOISY), _table((0, 2), PRECISE), _table((3, 4), PRECISE))
    # Its counts over the records both hold: summing (0, 3) adds 2 cells, (0, 4) 5.
    cross = (_table((0, 3), NOISY), _table((0, 4), PRECISE))
    presence = _presence(cross, OWNER, SIZES)
    (shared,) = [t for t in presence[(0, 1)] if t.attrs == (0,)]
    assert shared.sigma == PRECISE * math.sqrt(SIZES[4])
    regions = {1: 50.0, 2: 50.0, 3: 300.0}
    releases = PartialReleases(Domain.from_sizes(SIZES), OWNER, own, cross, presence, regions, 1.0)
    (table,) = [t for t in union_tables(releases) if t.attrs == (0, 4)]
    # Where 0 is held and 4 absent: own counts (summed off (0, 2)) less the shared ones
    # pooled with them (measurements.pooled), each source at its least variance.
    own = np.full(SIZES[0], 100.0 * SIZES[2])
    share = regions[3] / (regions[1] + regions[3])
    want = pooled(own, PRECISE**2 * SIZES[2], shared.values, shared.sigma**2, share).rest_var
    np.testing.assert_allclose(table.variance[: SIZES[0], SIZES[4]], want)
