"""Named mechanisms for integer releases, each charged to the ledger before it draws noise.

Every value they return is an integer drawn by an exact discrete sampler (see
:mod:`vertimrf.privacy.samplers`): floating-point noise on a count leaks through its low
bits (Mironov 2012), integer noise from an exact sampler does not.

:func:`discrete_laplace_count` and :func:`discrete_laplace_histogram` add discrete Laplace
noise of scale 1/eps to sensitivity-1 counts: eps-DP, charged eps^2/2 in zCDP.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler


def _integer_counts(counts: Any) -> np.ndarray:
    arr = np.asarray(counts)
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.bool_)):
        rounded = np.rint(arr)
        if not np.array_equal(rounded, arr):
            raise PrivacyBudgetError("discrete mechanisms release integer counts only.")
        arr = rounded
    return arr.astype(np.int64)


def discrete_laplace_count(
    count: int,
    epsilon: float,
    *,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
    description: str = "noisy record count",
) -> int:
    """Release ``count`` (sensitivity 1) plus discrete Laplace noise of scale 1/epsilon."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"the noisy count needs a positive epsilon; got {epsilon!r}.")
    ledger.charge_pure(
        "discrete_laplace",
        epsilon,
        party=party,
        description=description,
        sensitivity=1,
        scale=1.0 / epsilon,
    )
    return int(count) + int(noise.discrete_laplace(1.0 / epsilon, 1)[0])


def discrete_laplace_histogram(
    counts: np.ndarray,
    epsilon: float,
    *,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
    description: str = "value counts",
) -> np.ndarray:
    """Release a histogram (one record changes one count by 1) with discrete Laplace noise of
    scale 1/epsilon on every cell: epsilon-DP. Returns int64 counts (may be negative)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"the histogram needs a positive epsilon; got {epsilon!r}.")
    counts = _integer_counts(counts)
    ledger.charge_pure(
        "discrete_laplace_hist",
        epsilon,
        party=party,
        description=description,
        sensitivity=1,
        scale=1.0 / epsilon,
        cells=int(counts.size),
    )
    return counts + noise.discrete_laplace(1.0 / epsilon, counts.shape)
