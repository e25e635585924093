"""The FM sketches' DP parameters and value range, shared by parties and the
server; design notes in docs/design/privacy.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError

_MAX_UINT8 = 255


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


def check_gamma(gamma: float) -> float:
    """gamma as a float; raise ConfigError unless it is a number in (0, 1]."""
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | np.floating | np.integer):
        raise ConfigError(f"gamma must be a number in (0, 1]; got {type(gamma).__name__}.")
    value = float(gamma)
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise ConfigError(f"gamma must be in (0, 1]; got {gamma!r}.")
    return value


@lru_cache(maxsize=32)
def _threshold_table(gamma: float) -> np.ndarray:
    ratio = Fraction(1) + Fraction(gamma)  # exact value of the float 1 + gamma
    p, q = ratio.numerator, ratio.denominator
    table = []
    num, den = 1 << 64, 1
    while True:
        num *= q
        den *= p
        bound = -(-num // den)  # ceil(2**64 * (1 + gamma) ** -(k - 1)), k = len(table) + 2
        if bound < 2:
            break
        table.append(bound)
        if len(table) + 2 > _MAX_UINT8:
            raise ConfigError(
                f"gamma={gamma!r} gives geometric values above {_MAX_UINT8}, which do not fit "
                "in uint8; use gamma >= 0.19."
            )
    out = np.array(table, dtype=np.uint64)
    out.setflags(write=False)
    return out


def geometric_thresholds(gamma: float) -> np.ndarray:
    """Descending integer thresholds: ``G >= i + 2  <=>  h < thresholds[i]`` (cached per gamma).

    Entry ``i`` is ``ceil(2**64 * (1 + gamma) ** -(i + 1))``, computed exactly with rationals;
    the table stops at the last entry >= 2. Raises :class:`ConfigError` if some G would not
    fit in uint8 (gamma below about 0.19).
    """
    return _threshold_table(check_gamma(gamma))


def max_geometric_value(gamma: float) -> int:
    """Largest geometric value for ``gamma``: the one of ``h = 0`` (one above ``h = 1``)."""
    return int(geometric_thresholds(gamma).size) + 2
