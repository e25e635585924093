"""The phantom step of an FM sketch (Smith, Song and Thakurta 2020; the paper's
Algorithm 1); design notes in docs/design/party.md."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.privacy.fm import FMNoise


class UniformSource(Protocol):
    """Draws uniform floats on [0, 1): a :class:`~vertimrf.privacy.samplers.NoiseSampler`
    (a party's releases) or a numpy Generator (simulations and tests)."""

    def random(self, size: int | tuple[int, ...]) -> np.ndarray:
        """``size`` i.i.d. uniform draws."""
        ...


def sample_max_geometric(
    k: int, gamma: float, size: int | tuple[int, ...], rng: UniformSource
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


def privatize(values: np.ndarray, noise: FMNoise, rng: UniformSource) -> np.ndarray:
    """DP sketch values: ``max(values, phantom max, floor)`` element-wise, as uint8."""
    phantom = sample_max_geometric(noise.k_p, noise.gamma, values.shape, rng)
    out = np.maximum(values, phantom)
    np.maximum(out, np.uint8(noise.alpha_min), out=out)
    return out
