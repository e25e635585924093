"""OptMRF's measurement source: cross-party 2-way marginals, estimated from the releases.

Each round the model's L1 error against every remaining candidate pair's estimate is exact
(the estimates are already DP releases, so scoring them is post-processing), and the pairs
that the model fits worst are measured with the cross-party weight.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.server.estimates import CrossEstimates

Pair = tuple[int, ...]


@dataclass
class CrossSource:
    """Candidate pairs (attribute indices) and their cross-party estimates."""

    estimates: CrossEstimates
    pool: Sequence[Pair]
    weight: float
    chosen: set[Pair] = field(default_factory=set)

    def target(self, pair: Pair) -> np.ndarray:
        """The estimated counts of ``pair``."""
        return self.estimates.target(pair)

    def select(self, model: MarkovRandomField, k: int, round_index: int) -> list[Pair]:
        """The ``k`` remaining pairs with the largest L1 error of the model."""
        errs = {
            p: float(np.abs(model.marginal(p) - self.target(p)).sum())
            for p in self.pool
            if p not in self.chosen
        }
        picked = sorted(errs, key=lambda p: (-errs[p], p))[:k]
        self.chosen.update(picked)
        return picked

    def measure(self, marginals: list[Pair], round_index: int) -> list[Measurement]:
        """The estimates of ``marginals`` as measurements with the cross-party weight."""
        return [Measurement(p, self.target(p), self.weight) for p in marginals]
