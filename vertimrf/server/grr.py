"""GRR inversion: the server's unbiased marginal estimates from the parties' GRR rows.

The transition matrix of GRR is (p - q) I + q 11^T, whose inverse applied to a histogram h
along one axis is (h - q * sum(h)) / (p - q) (because p + (u - 1) q = 1). Applying it along
each axis of an l-way histogram gives the unbiased marginal estimate without ever building
the (prod u)^2 matrix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.cliques import histogram
from vertimrf.privacy.calibration import grr_probabilities


def grr_marginal(
    perturbed: np.ndarray, domain: Domain, epsilon: float, attrs: Sequence[int]
) -> np.ndarray:
    """Unbiased estimate of the counts of the marginal over attribute indices ``attrs``."""
    attrs = [int(a) for a in attrs]
    est = histogram(perturbed.astype(np.int64, copy=False), attrs, domain.sizes)
    for axis, a in enumerate(attrs):
        p, q = grr_probabilities(epsilon, domain.sizes[a])
        est = (est - q * est.sum(axis=axis, keepdims=True)) / (p - q)
    return est
