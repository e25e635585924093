"""Named mechanisms for integer releases, each charged to the ledger before it
draws noise; design notes in docs/design/privacy.md."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.samplers import NoiseSampler, exponential_inputs

# The scaled noise parameter s * sigma is at least this (unless s hits MAX_SCALE).
QUANTUM_SIGMA = 2.0**10
MAX_SCALE = 2**20


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


def quantum_scale(sigma: float) -> int:
    """The public scale s of a real query released with noise std ``sigma``: the smallest
    power of two s >= 1 with s * sigma >= 2**10, capped at 2**20 (it depends on sigma only)."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise PrivacyBudgetError(f"sigma must be a positive finite number; got {sigma!r}.")
    scale = 1
    while scale * sigma < QUANTUM_SIGMA and scale < MAX_SCALE:
        scale *= 2
    return scale


def rounded_sensitivity(sensitivity: float, scale: int) -> int:
    """ceil(scale * sensitivity): the sensitivity of round(scale * q) when q has
    ``sensitivity`` (derivation in the module docstring)."""
    if not (sensitivity > 0 and math.isfinite(sensitivity)):
        raise PrivacyBudgetError(f"sensitivity must be positive and finite; got {sensitivity!r}.")
    if isinstance(scale, bool) or not isinstance(scale, (int, np.integer)) or scale < 1:
        raise ConfigError(f"scale must be a positive integer; got {scale!r}.")
    return math.ceil(int(scale) * sensitivity)


def scaled_discrete_gaussian(
    rounded: np.ndarray,
    *,
    scale: int,
    sensitivity: float,
    sigma: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    mechanism: str,
    party: str | None = None,
    description: str = "",
) -> tuple[np.ndarray, Release]:
    """Release real queries q_i of ``sensitivity`` each, given as ``rounded`` = round(scale *
    q_i) (integers computed exactly by the caller), with discrete Gaussian noise of parameter
    scale * sigma: their std is sigma on the 1/scale grid.

    Charges rho = count * ceil(scale * sensitivity)**2 / (2 (scale * sigma)**2) before
    drawing (see the module docstring) and returns the noisy int64 values k_i (the released
    q_i is k_i / scale) with the ledger entry.
    """
    values = _integer_counts(rounded)
    sens = rounded_sensitivity(sensitivity, scale)
    release = ledger.charge_gaussian(
        mechanism,
        sens,
        int(scale) * sigma,
        count=int(values.size),
        party=party,
        description=description,
        sampler="discrete_gaussian",
        scale=int(scale),
    )
    return values + noise.discrete_gaussian(int(scale) * sigma, values.shape), release


def exponential_mechanism(
    scores: Any,
    *,
    sensitivity: int,
    epsilon: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    mechanism: str,
    party: str | None = None,
    description: str = "",
) -> tuple[int, Release]:
    """Select index i of integer ``scores`` (higher is better; each moves by at most the
    integer ``sensitivity`` when one record changes) with probability proportional to
    exp(epsilon k_i / (2 sensitivity)).

    Charges rho = epsilon^2 / 8 before drawing (see the module docstring) and returns the
    index with the ledger entry.
    """
    values, sens, eps = exponential_inputs(scores, sensitivity, epsilon)
    release = ledger.charge_exponential(
        mechanism,
        eps,
        party=party,
        description=description,
        sensitivity=sens,
        candidates=int(values.size),
    )
    return noise.exponential_mechanism(values, sens, eps), release
