"""The DP step of an FM sketch (Smith, Song and Thakurta 2020; the paper's Algorithm 1).

A sketch value alpha_X = max of Geometric(p) hashes over a set X becomes eps'-DP as

    max(alpha_X, alpha_p, alpha_min),   alpha_p = max of k_p fresh Geometric(p) draws,

with p = gamma / (1 + gamma), k_p = ceil(1 / (e^eps' - 1)) phantom elements and the floor
alpha_min = ceil(log_{1+gamma}(1 / (1 - e^-eps'))). Geometric(p) here is supported on
{1, 2, ...} with P(G >= k) = (1+gamma)^-(k-1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError


@dataclass(frozen=True)
class FMNoise:
    """DP parameters of one sketch: per-sketch epsilon', phantom count and floor."""

    eps_prime: float
    gamma: float
    k_p: int
    alpha_min: int


def fm_noise(eps_prime: float, gamma: float = 1.0) -> FMNoise:
    """Phantom count k_p and floor alpha_min that make one FM sketch eps'-DP."""
    check_gamma(gamma)
    if not (eps_prime > 0 and math.isfinite(eps_prime)):
        raise PrivacyBudgetError(f"per-sketch epsilon must be positive; got {eps_prime!r}.")
    k_p = math.ceil(1.0 / math.expm1(eps_prime))
    alpha_min = math.ceil(math.log(1.0 / -math.expm1(-eps_prime)) / math.log1p(gamma))
    if alpha_min > 255:
        raise PrivacyBudgetError(
            f"per-sketch epsilon {eps_prime:.3g} is too small for uint8 sketch values "
            f"(floor {alpha_min} > 255); raise the sketch budget or lower t."
        )
    return FMNoise(eps_prime, gamma, k_p, alpha_min)


def check_gamma(gamma: float) -> None:
    """Raise unless gamma is in (0, 1]."""
    if not (0.0 < gamma <= 1.0):
        raise ConfigError(f"gamma must be in (0, 1]; got {gamma!r}.")


def sample_max_geometric(
    k: int, gamma: float, size: int | tuple[int, ...], rng: np.random.Generator
) -> np.ndarray:
    """Draws of the max of ``k`` i.i.d. Geometric(gamma/(1+gamma)) values, by inverse CDF.

    P(max <= j) = (1 - q^j)^k with q = 1/(1+gamma), so the draw for U ~ Uniform[0, 1) is the
    smallest j >= 1 with q^j <= 1 - U^(1/k): O(1) per draw, whatever k is.
    """
    if k < 1:
        raise ConfigError(f"k must be >= 1; got {k}.")
    u = rng.random(size)
    with np.errstate(divide="ignore"):
        tail = -np.expm1(np.log(u) / k)
        j = np.ceil(np.log(tail) / -math.log1p(gamma))
    return np.clip(j, 1, 255).astype(np.uint8)


def privatize(values: np.ndarray, noise: FMNoise, rng: np.random.Generator) -> np.ndarray:
    """DP sketch values: ``max(values, phantom max, floor)`` element-wise, as uint8."""
    phantom = sample_max_geometric(noise.k_p, noise.gamma, values.shape, rng)
    out = np.maximum(values, phantom)
    np.maximum(out, np.uint8(noise.alpha_min), out=out)
    return out
