"""The cost of cross-party noise carried by coins (a centred binomial that no viewer knows,
plus split discrete Gaussians) in approximate zCDP; design notes in docs/design/privacy.md."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln, logsumexp

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.ledger import Release

# The rigorous sup over alpha is found within this relative gap of its lower bound.
_RELATIVE_GAP = 1e-4
# Float error margin on the computed rho (the sums are of positive terms, relative error
# far below this).
_FLOAT_MARGIN = 1e-6
# A split component is conditioned on |G| <= L with L from this tail; its mass beyond is
# charged to the failure probability.
_SPLIT_TAIL = 1e-30


@dataclass(frozen=True)
class CoinNoise:
    """One cross cell's noise: ``coins`` fair coins, XOR-shared so that no viewer knows them
    (their centred sum), plus three discrete Gaussians N_Z(0, ``split``), one from each
    party of the pair and one from the server, each known to its maker."""

    coins: int
    split: float

    def __post_init__(self) -> None:
        if self.coins < 0 or self.coins % 2 or self.split < 0 or not (self.coins or self.split):
            raise PrivacyBudgetError(
                f"coin noise needs an even number of coins >= 0 and a split variance >= 0, "
                f"not both zero; got {self.coins} coins and split {self.split!r}."
            )

    @classmethod
    def for_sigma(cls, sigma: float, weight: float) -> CoinNoise:
        """The noise that lets every viewer face ``sigma`` ** 2: coins carrying the fraction
        ``weight`` in (0, 1] of it (4 w sigma^2 coins, rounded up to even) and three split
        components of (1 - w) sigma^2 / 2."""
        if not (sigma > 0 and math.isfinite(sigma)) or not (0.0 < weight <= 1.0):
            raise PrivacyBudgetError(
                f"coins need sigma > 0 and a weight in (0, 1]; got {sigma!r} and {weight!r}."
            )
        coins = 2 * math.ceil(2.0 * weight * sigma * sigma - 1e-9)
        return cls(coins, (1.0 - weight) * sigma * sigma / 2.0)

    @property
    def viewer_variance(self) -> float:
        """The variance each viewer faces: the coins and the two components it did not draw."""
        return self.coins / 4.0 + 2.0 * self.split

    @property
    def release_variance(self) -> float:
        """The variance the released count carries: the coins and all three components."""
        return self.coins / 4.0 + 3.0 * self.split


@dataclass(frozen=True)
class CellCost:
    """Approximate zCDP of one cell at sensitivity 1: ``rho``, except on an event of
    probability ``failure``, against every viewer."""

    rho: float
    failure: float


def _split_pmf(split: float) -> tuple[np.ndarray, float]:
    """The sum of two N_Z(0, ``split``), each conditioned on |G| <= L: its pmf on
    -2L..2L, and the probability that either exceeds L (a bound)."""
    if split == 0:
        return np.ones(1), 0.0
    limit = math.ceil(math.sqrt(2.0 * split * math.log(1.0 / _SPLIT_TAIL))) + 1
    k = np.arange(-limit, limit + 1, dtype=np.float64)
    one = np.exp(-(k * k) / (2.0 * split))
    one /= one.sum()
    # Mass beyond L over the whole normaliser (>= 1, the k = 0 term): at most the geometric
    # bound on both tails, exp(-L^2 / 2s) / (1 - exp(-L / s)).
    beyond = 2.0 * math.exp(-limit * limit / (2.0 * split)) / -math.expm1(-limit / split)
    return np.convolve(one, one), 2.0 * beyond


def _viewer_log_pmf(noise: CoinNoise) -> tuple[np.ndarray, float]:
    """The noise a viewer faces (the centred coins plus two split components, each split
    conditioned as in :func:`_split_pmf`): its log pmf on a support symmetric about 0 (its
    middle index), and the split part's failure probability."""
    k = np.arange(noise.coins + 1, dtype=np.float64)
    n = float(noise.coins)
    log_binom = gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1) - n * math.log(2.0)
    split, failure = _split_pmf(noise.split)
    if len(split) == 1:
        return log_binom, failure
    pmf = np.convolve(np.exp(log_binom), split)  # positive terms: relatively accurate
    with np.errstate(divide="ignore"):
        return np.log(pmf), failure


def _renyi(log_p: np.ndarray, log_ratio: np.ndarray, alpha: float) -> float:
    """D_alpha(P || Q) from P's log pmf and log(P/Q) on a common support."""
    return float(logsumexp(log_p + (alpha - 1.0) * log_ratio)) / (alpha - 1.0)


def _chord_max(a: float, b: float, g_a: float, g_b: float) -> float:
    """The largest value on [a, b] of c(x) / (x (x - 1)), c the chord of g through (a, g_a)
    and (b, g_b): a bound on D_x / x = g(x) / (x (x - 1)) there, g being convex."""
    slope = (g_b - g_a) / (b - a)
    c0 = g_a - slope * a
    best = max(g_a / (a * (a - 1.0)), g_b / (b * (b - 1.0)))
    # Stationary points: slope x^2 + 2 c0 x - c0 = 0.
    if slope != 0.0:
        disc = c0 * c0 + slope * c0
        if disc >= 0.0:
            for x in ((-c0 + math.sqrt(disc)) / slope, (-c0 - math.sqrt(disc)) / slope):
                if a < x < b:
                    best = max(best, (c0 + slope * x) / (x * (x - 1.0)))
    return best


def _sup_over_alpha(log_p: np.ndarray, log_ratio: np.ndarray) -> float:
    """An upper bound on sup over alpha > 1 of D_alpha / alpha, within _RELATIVE_GAP of the
    largest value seen. g(alpha) = (alpha - 1) D_alpha is convex (a cumulant generating
    function), so on [a, b] the chord bounds it; on (1, a0], D_alpha / alpha <= D_a0; past
    the last point b, D_alpha / alpha <= D_inf / b."""
    d_inf = float(np.max(log_ratio))
    a0 = 1.0 + 1e-4
    grid = [a0 * 1.25**i for i in range(60)]
    g = {a: (a - 1.0) * _renyi(log_p, log_ratio, a) for a in grid}
    seen = max(g[a] / (a * (a - 1.0)) for a in grid)
    while d_inf / grid[-1] > seen:  # past the last order, D_inf / b must not be the bound
        grid.append(grid[-1] * 1.25)
        g[grid[-1]] = (grid[-1] - 1.0) * _renyi(log_p, log_ratio, grid[-1])
        seen = max(seen, g[grid[-1]] / (grid[-1] * (grid[-1] - 1.0)))
    bound = max(g[a0] / (a0 - 1.0), d_inf / grid[-1])
    intervals = list(zip(grid[:-1], grid[1:], strict=True))
    while intervals:
        a, b = intervals.pop()
        upper = _chord_max(a, b, g[a], g[b])
        if upper <= seen * (1.0 + _RELATIVE_GAP):
            bound = max(bound, upper)
            continue
        mid = math.sqrt(a * b)
        g[mid] = (mid - 1.0) * _renyi(log_p, log_ratio, mid)
        seen = max(seen, g[mid] / (mid * (mid - 1.0)))
        intervals += [(a, mid), (mid, b)]
    return bound


@functools.lru_cache(maxsize=64)
def cell_cost(noise: CoinNoise, failure: float) -> CellCost:
    """The approximate zCDP of one count released with ``noise``, against each viewer, with
    at most ``failure`` charged to delta (docs/accounting.md, "Coins").

    The viewer's noise Z is symmetric. On a neighbour the count moves by 1; both outputs are
    conditioned on one set S = [-m + 1, m], the least m with P(Z outside S) <= ``failure``
    (less the split components' tails), and rho bounds sup D_alpha / alpha of the two
    conditioned laws."""
    if not (0.0 < failure < 1.0):
        raise PrivacyBudgetError(f"the failure probability must be in (0, 1); got {failure!r}.")
    log_pmf, split_failure = _viewer_log_pmf(noise)
    room = failure - split_failure
    if room <= 0:
        raise PrivacyBudgetError(f"failure {failure!r} is below the split tails' {split_failure}.")
    # Outside S = [-m + 1, m]: Z <= -m or Z >= m + 1, and by symmetry P(Z <= -m) =
    # P(Z >= m). Z + 1 is outside S with the same probability.
    half = len(log_pmf) // 2  # the index of value 0
    above = np.append(np.exp(np.logaddexp.accumulate(log_pmf[::-1])[::-1]), 0.0)
    outside = above[half + 1 : -1] + above[half + 2 :]  # P(Z outside S) at m = 1, 2, ...
    # Non-increasing in m: the least m within ``room``, at most half.
    m = min(half, 1 + int(np.searchsorted(-outside, -room)))
    lo, hi = half - m + 1, half + m  # indices of S's ends
    log_p = log_pmf[lo : hi + 1]
    log_q = log_pmf[lo - 1 : hi]  # Q(z) = P(z - 1)
    log_p = log_p - logsumexp(log_p)
    log_q = log_q - logsumexp(log_q)
    rho = _sup_over_alpha(log_p, log_p - log_q) * (1.0 + _FLOAT_MARGIN)
    return CellCost(rho, float(outside[m - 1]) + split_failure)


def coin_release(
    mechanism: str,
    noise: CoinNoise,
    failure: float,
    *,
    count: int = 1,
    party: str | None = None,
    description: str = "",
    **params: Any,
) -> Release:
    """The entry of ``count`` counts of sensitivity 1 (a batch of marginals: one cell each
    moves by 1) released with ``noise``, each cell charged ``failure`` at most, not yet
    charged."""
    if count < 1:
        raise PrivacyBudgetError(f"{mechanism}: count must be >= 1; got {count}.")
    cost = cell_cost(noise, failure)
    params = {
        "coins": noise.coins,
        "split_variance": noise.split,
        "viewer_variance": noise.viewer_variance,
        "release_variance": noise.release_variance,
        "failure_delta": count * cost.failure,
        **params,
    }
    return Release(mechanism, description, count * cost.rho, count, party, params)
