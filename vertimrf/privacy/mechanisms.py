"""Named mechanisms for integer releases, each charged to the ledger before it draws noise.

Every value they return is an integer drawn by an exact discrete sampler (see
:mod:`vertimrf.privacy.samplers`): floating-point noise on a count leaks through its low
bits (Mironov 2012), integer noise from an exact sampler does not.

:func:`discrete_laplace_count` and :func:`discrete_laplace_histogram` add discrete Laplace
noise of scale 1/eps to sensitivity-1 counts: eps-DP, charged eps^2/2 in zCDP.

:func:`scaled_discrete_gaussian` releases REAL-valued queries (e.g. PrivMRF's R-scores and
L1 error queries) on the grid of multiples of 1/s for a public scale s (a power of two,
:func:`quantum_scale`): the caller computes the integers round(s q_i) exactly, and discrete
Gaussian noise of parameter s sigma is added to them. The released value is k / s. The
integers must be exact (rational arithmetic): a floating-point q carries rounding errors that
could cross a rounding boundary and break the bound below.

Sensitivity of the rounded query. Let q have sensitivity Delta, |q(D) - q(D')| <= Delta for
neighbours D, D'. With round(x) = floor(x + 1/2) and a = s q(D) + 1/2, b = s q(D') + 1/2:
floor(a) - floor(b) is an integer strictly between (a - b) - 1 and (a - b) + 1, so
|round(s q(D)) - round(s q(D'))| <= ceil(|a - b|) <= ceil(s Delta) (when a - b is not an
integer the integer is at most floor(|a - b| + 1) = ceil(|a - b|); when it is, it equals it).
So each rounded value is an integer query of sensitivity ceil(s Delta), and a batch of
``count`` of them (each with its own noise) costs count * ceil(s Delta)^2 / (2 (s sigma)^2)
in zCDP (Canonne, Kamath and Steinke 2020, Theorem 4, composed). For an integer s Delta
(PrivMRF: Delta in {1, 2}, s a power of two >= 1) this is exactly the continuous Gaussian
charge count * Delta^2 / (2 sigma^2): the rounding costs no budget, and its error (at most
1/(2s)) is at most 2**-11 sigma, negligible against the noise.

:func:`exponential_mechanism` selects one candidate from integer scores k_i of sensitivity
Delta each (for real scores, the exact round(s q_i) with :func:`rounded_sensitivity`'s
ceil(s Delta), as above): index i with probability proportional to exp(eps k_i / (2 Delta)).
For neighbours D, D' the privacy loss of outcome i is eps (k_i - k'_i) / (2 Delta) minus
log(Z / Z'), the normalisers' ratio: the first term lies in [-eps/2, eps/2] and the second is
the same for every i, so the losses of all outcomes lie in one interval of width eps
("eps-bounded range"). That costs eps^2/8 in zCDP, not the eps^2/2 of a generic eps-DP
release (Cesar and Rogers 2021, "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
Composition for Data Analytics"; the charge AIM uses). The draw is exact (rejection on exact
Bernoulli(exp(-x)) trials, or OpenDP's exact Gumbel noisy max): a floating-point softmax would
draw from a distribution the proof is not about, with probabilities rounded in a
data-dependent way.
"""

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
