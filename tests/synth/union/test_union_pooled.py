"""A party's 1-way over the records every party holds keeps the precision of its own counts
(a party's own 1-way came back far off): the union fit pools the noisy shared counts with the
own counts.

Party 0 holds a (K = 8 values), party 1 holds b (B = 20); every record is held by party 0 or
1 or both, at random (as ``vertimrf split`` does), s = 2,400 by both, 800 by each alone. The
releases: each 1-way over its party's records (sigma_o = 5 per cell), the cross table (a, b)
over the shared records (sigma_x = 20), the region counts (sigma 5).

* Before: the shared counts of a are the cross table summed over b, sd sigma_x sqrt(B) = 89
  per cell, and the own-only region takes own minus them, so the fit's shared 1-way follows
  that noise, E TVD up to K sqrt(2 / pi) 89 / (2 s) = 0.12 (0.051 at this seed).
* Pooled: the own counts times the shared fraction f = 0.75, sd f sigma_o = 3.8, plus the
  random split's own spread, sd sqrt(c f (1 - f)) = 8.7 per cell of c = 400 own records:
  E TVD = K sqrt(2 / pi) 9.5 / (2 s) = 0.013 (0.011 at this seed). The bound 0.03 is over
  2x that.
"""

from __future__ import annotations

import numpy as np

from vertimrf.domain import Domain
from vertimrf.server.secure.union_fit import _presence
from vertimrf.synth.union import NoisyTable, PartialReleases, fit_union

K, B, SHARED, ALONE = 8, 20, 2400, 800
SIGMA_OWN, SIGMA_CROSS, SIGMA_REGION = 5.0, 20.0, 5.0


def _tvd(x: np.ndarray, y: np.ndarray) -> float:
    return 0.5 * float(np.abs(x / x.sum() - y / y.sum()).sum())


def test_the_shared_one_way_keeps_the_own_counts_precision():
    rng = np.random.default_rng(5)
    n = SHARED + 2 * ALONE
    codes = np.stack([rng.integers(0, K, n), rng.integers(0, B, n)], 1)
    codes[:, 1] = np.where(rng.random(n) < 0.5, codes[:, 0] % B, codes[:, 1])  # a, b correlate
    region = rng.permutation(np.repeat([3, 1, 2], [SHARED, ALONE, ALONE]))
    holds = [(region >> p & 1).astype(bool) for p in (0, 1)]
    shared = holds[0] & holds[1]

    def noisy(attrs: tuple[int, ...], rows: np.ndarray, sigma: float) -> NoisyTable:
        sizes = (K, B)
        counts = np.zeros([sizes[a] for a in attrs])
        np.add.at(counts, tuple(codes[rows, a] for a in attrs), 1)
        return NoisyTable(attrs, counts + sigma * rng.standard_normal(counts.shape), sigma)

    own = (noisy((0,), holds[0], SIGMA_OWN), noisy((1,), holds[1], SIGMA_OWN))
    cross = (noisy((0, 1), shared, SIGMA_CROSS),)
    owner = (0, 1)
    regions = {
        t: float((region == t).sum()) + SIGMA_REGION * rng.standard_normal() for t in (1, 2, 3)
    }
    releases = PartialReleases(
        Domain.from_sizes((K, B)), owner, own, cross, _presence(cross, owner, (K, B)), regions,
        SIGMA_REGION,
    )  # fmt: skip
    model = fit_union(releases, iters=2000).population_model("intersection")
    truth = np.bincount(codes[shared, 0], minlength=K)
    assert _tvd(model.marginal((0,))[:K], truth) <= 0.03
