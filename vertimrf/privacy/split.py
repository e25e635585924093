"""The adaptive split of a budget between the first release (every 2-way marginal, or a
workload's pairs) and the re-measurement, for Centralized and method "secure" alike: the
first release gets FIRST_SHARES[0] of rho when, released at that share, its marginals would
be informative, else FIRST_SHARES[1], leaving more for the re-measurement."""

from __future__ import annotations

import math
from collections.abc import Sequence

# The first release gets FIRST_SHARES[0] of rho when its pairs' expected noise TVD at that
# share is at most NOISY_FIRST, else FIRST_SHARES[1].
FIRST_SHARES = (0.5, 0.2)
NOISY_FIRST = 0.05


def first_share(
    sizes: Sequence[int],
    rho: float,
    count: float,
    first: Sequence[Sequence[int]] | None = None,
) -> float:
    """The first release's share of ``rho`` for a table of ``sizes`` and about ``count``
    records, whose first release is ``first`` (default: every 2-way marginal), each of
    sensitivity 1: 0.5 when, released at that share, its marginals would be informative
    (the mean over them of their noise's expected TVD, 1/2 cells sigma sqrt(2 / pi) / count,
    at most NOISY_FIRST), else 0.2. Centralized gives the noisy count (post-processing);
    method "secure" gives max_rows, the config's public bound (the count comes later).
    That mean is 0.002-0.012 on NLTCS at epsilon 3.2-0.4 and 0.03-0.20 on Adult
    (``benchmarks/results/engine_shares.md``: 0.5 is the better share on NLTCS at epsilon
    0.4, 0.2 on Adult at 0.4 and 0.8, and the two tie elsewhere). The threshold was set on
    those two tables."""
    d = len(sizes)
    if first is None:
        first = [(i, j) for i in range(d) for j in range(i + 1, d)]
    sigma = math.sqrt(len(first) / (2.0 * rho * FIRST_SHARES[0]))
    cells = sum(math.prod(int(sizes[a]) for a in m) for m in first)
    noise = 0.5 * cells * sigma * math.sqrt(2.0 / math.pi) / (len(first) * max(count, 1.0))
    return FIRST_SHARES[0] if noise <= NOISY_FIRST else FIRST_SHARES[1]
