"""Named mechanisms for scalar releases, each charged to the ledger before it draws noise."""

from __future__ import annotations

import math

import numpy as np

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger


def laplace_count(
    count: int,
    rho: float,
    *,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    party: str | None = None,
    description: str = "noisy record count",
) -> float:
    """Release ``count`` with Laplace noise (sensitivity 1) costing ``rho`` in zCDP.

    Laplace(1/eps) is eps-DP, and eps-DP is eps^2/2-zCDP, so eps = sqrt(2 rho).
    """
    if not rho > 0:
        raise PrivacyBudgetError(f"the noisy count needs a positive rho share; got {rho!r}.")
    eps = math.sqrt(2.0 * rho)
    ledger.charge_pure("laplace", eps, party=party, description=description, sensitivity=1)
    return float(count + rng.laplace(0.0, 1.0 / eps))


def laplace_histogram(
    counts: np.ndarray,
    epsilon: float,
    *,
    rng: np.random.Generator,
    ledger: PrivacyLedger,
    party: str | None = None,
    description: str = "value counts",
) -> np.ndarray:
    """Release a histogram (one record changes one count by 1) with Laplace(1/epsilon) noise
    on every cell: epsilon-DP, charged to ``ledger`` before the noise is drawn."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"the histogram needs a positive epsilon; got {epsilon!r}.")
    counts = np.asarray(counts, dtype=np.float64)
    ledger.charge_pure("laplace_hist", epsilon, party=party, description=description, sensitivity=1)
    return counts + rng.laplace(0.0, 1.0 / epsilon, counts.shape)
