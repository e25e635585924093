"""CarEst: the server's estimate of any l-way marginal from FM sketches (NOT
DP jointly); design notes in docs/design/server.md."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.kernels.carest import union_exceed_counts, union_table_sums
from vertimrf.protocol.options import CAREST_METHODS as METHODS
from vertimrf.protocol.sketchset import SketchSet
from vertimrf.server.merge import MergedSketches

MAX_WAYS = 4


@functools.lru_cache(maxsize=64)
def harmonic_constant(gamma: float, t: int) -> float:
    """Bias constant of the harmonic estimator alpha * t / sum_h b^-s_h, base b = 1 + gamma.

    With G the max of N geometrics, b^-G ~ b^-(X + F) where b^-X ~ Exp(N)/N and the rounding
    F is uniform on [0, 1) on average over N, so E[b^-G] = (b - 1) / (b ln b) / N and
    CV^2 = E[Z^2]/E[Z]^2 - 1 = (b + 1) ln b / (b - 1) - 1. Averaging t repetitions and
    inverting adds a bias factor 1 + CV^2/t, so
    alpha = (b - 1) / (b ln b) / (1 + CV^2 / t). For b = 2 this is HyperLogLog's
    0.7213 / (1 + 1.079 / t).
    """
    b = 1.0 + gamma
    lnb = math.log(b)
    cv2 = (b + 1.0) * lnb / (b - 1.0) - 1.0
    return (b - 1.0) / (b * lnb) / (1.0 + cv2 / t)


@functools.lru_cache(maxsize=64)
def _power_table(gamma: float) -> np.ndarray:
    return (1.0 + gamma) ** -np.arange(256, dtype=np.float64)


_INV_TABLE = np.concatenate(([np.inf], 1.0 / np.arange(1, 256, dtype=np.float64)))


def containment_probability(
    a: np.ndarray, total: float, gamma: float, alpha_min: int
) -> np.ndarray:
    """P(max(G_a, floor) > max(G_b, floor)) with b = total - a, for an array of sizes ``a``.

    G_x is the max of x i.i.d. Geometric(gamma/(1+gamma)) values on {1, 2, ...}, so
    P(G_x <= k) = (1 - q^k)^x with q = 1/(1+gamma); a phantom group of k_p draws counts as
    k_p elements. The event needs G_a = k > floor and G_b <= k - 1, summed over k. Terms
    with q^k below 1e-18 / total vanish in double precision and are skipped.
    """
    q = 1.0 / (1.0 + gamma)
    k_hi = min(256, alpha_min + 2 + int(math.log(max(total, 2.0) * 1e18) / -math.log(q)))
    k = np.arange(max(alpha_min, 0) + 1, k_hi, dtype=np.float64)
    with np.errstate(divide="ignore"):
        log_cdf_k = np.log1p(-(q**k))
        log_cdf_km1 = np.log1p(-(q ** (k - 1)))
    a = np.asarray(a, dtype=np.float64)[..., None]
    b = total - a
    with np.errstate(invalid="ignore"):
        pa = np.exp(a * log_cdf_k) - np.exp(a * log_cdf_km1)
        cdf_b = np.exp(b * log_cdf_km1)
    pa = np.nan_to_num(pa)
    cdf_b = np.where(b > 0, np.nan_to_num(cdf_b), 1.0)
    return np.sum(pa * cdf_b, axis=-1)


_GRID = 256


@functools.lru_cache(maxsize=256)
def _containment_grid(total: float, gamma: float, alpha_min: int) -> tuple[np.ndarray, ...]:
    # Quadratic spacing puts most points at small sizes, where cells usually are; the map
    # is smooth and monotone, so linear interpolation between 257 points is accurate
    # (relative error below 1e-5 at every size).
    a = total * (np.arange(_GRID + 1) / _GRID) ** 2
    g = containment_probability(a, total, gamma, alpha_min)
    return np.maximum.accumulate(g), a


def invert_containment(p_hat: np.ndarray, total: float, gamma: float, alpha_min: int) -> np.ndarray:
    """Sizes a in [0, total] with containment_probability(a) = p_hat (monotone interpolation;
    frequencies beyond the largest attainable probability map to ``total``)."""
    g, a = _containment_grid(float(total), float(gamma), int(alpha_min))
    return np.interp(p_hat, g, a)


class CarEst:
    """Estimates cross-party marginals from the parties' FM sketches; results are cached.

    Attributes are named; a marginal may mix attributes of any parties.
    """

    def __init__(
        self,
        sketches: Sequence[SketchSet] | MergedSketches,
        n_hat: float,
        *,
        method: str = "containment",
    ) -> None:
        if method not in METHODS:
            raise ConfigError(f"unknown CarEst method {method!r}; use one of {METHODS}.")
        if not (n_hat > 0 and math.isfinite(n_hat)):
            raise ConfigError(f"n_hat must be a positive number; got {n_hat!r}.")
        self.merged = sketches if isinstance(sketches, MergedSketches) else MergedSketches(sketches)
        self.n_hat = float(n_hat)
        self.method = method
        self.domain = self.merged.domain
        self._cache: dict[tuple[str, ...], np.ndarray] = {}

    def marginal(self, attrs: Sequence[str]) -> np.ndarray:
        """Estimated counts of the marginal over ``attrs`` (axes in the given order)."""
        key = tuple(str(a) for a in attrs)
        if key not in self._cache:
            self._cache[key] = self._estimate(key)
        return self._cache[key].copy()

    def _estimate(self, attrs: tuple[str, ...]) -> np.ndarray:
        if not 1 <= len(attrs) <= MAX_WAYS or len(set(attrs)) != len(attrs):
            raise ConfigError(
                f"CarEst answers marginals of 1..{MAX_WAYS} distinct attributes; got {attrs}."
            )
        idx = np.array([self.domain.index(a) for a in attrs], dtype=np.int64)
        sizes = np.array(self.domain.shape(idx), dtype=np.int64)
        rows = self.merged.offsets[idx]
        t = self.merged.t
        gamma = self.merged.gamma
        k_p = float(self.merged.noise.k_p)
        match self.method:
            case "containment":
                full = self.merged.full[idx].max(axis=0)
                exceed = union_exceed_counts(self.merged.comp_t, rows, sizes, full)
                total = self.n_hat + k_p * float(sizes.sum())
                inside = invert_containment(exceed / t, total, gamma, self.merged.noise.alpha_min)
                return np.maximum(inside - len(attrs) * k_p, 0.0).reshape(tuple(sizes))
            case "harmonic":
                sums = union_table_sums(self.merged.comp_t, rows, sizes, _power_table(gamma))
                union = harmonic_constant(gamma, t) * t / sums
            case _:
                sums = union_table_sums(self.merged.comp_t, rows, sizes, _INV_TABLE)
                union = (1.0 + gamma) ** (t / sums)
        phantoms = k_p * float(np.sum(sizes - 1))
        est = np.maximum(self.n_hat - (union - phantoms), 0.0)
        return est.reshape(tuple(sizes))
