"""A worst-case lower bound on delta for the FM-sketch path (which is not
DP); design notes in docs/design/privacy.md."""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from scipy.special import gammaln

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.fm import check_gamma, fm_noise, max_geometric_value

__all__ = ["fm_delta_lower_bound"]

_UINT8_MAX = 255


def _positive_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral) or int(value) < minimum:
        raise PrivacyBudgetError(f"{name} must be an integer >= {minimum}; got {value!r}.")
    return int(value)


def _finite(value: object, name: str, *, positive: bool) -> float:
    number = (
        float(value)
        if isinstance(value, int | float | np.floating | np.integer) and not isinstance(value, bool)
        else math.nan
    )
    if not (math.isfinite(number) and (number > 0 if positive else number >= 0)):
        bound = "> 0" if positive else ">= 0"
        raise PrivacyBudgetError(f"{name} must be a finite number {bound}; got {value!r}.")
    return number


def _event_masses(
    k_p: int,
    alpha_min: int,
    gamma: float,
    c: int,
    epsilon: float,
    max_value: int,
    max_geometric: int,
) -> tuple[float, float]:
    """(a, b) = (P_D(S), P_D'(S)) of one key, all probabilities handled as logarithms."""
    log_q = -math.log1p(gamma)  # q = 1 / (1 + gamma) = P(G >= k + 1 | G >= k)
    log_1mq = math.log(gamma) + log_q  # 1 - q = P(G = 1)
    m = np.arange(alpha_min, max_value + 1, dtype=np.float64)
    top = m == max_value
    # log F(m) = k_p log(1 - q^m) below the cap, 0 at the cap (phantoms are clipped there).
    log_cdf = np.where(top, 0.0, k_p * np.log1p(-np.exp(m * log_q)))
    # log f(m): f(alpha_min) = F(alpha_min); above it F(m) - F(m-1) = F(m) (1 - F(m-1)/F(m))
    # with log(F(m-1)/F(m)) = k_p log1p(-q^(m-1) (1-q) / (1-q^m)) below the cap, and
    # 1 - F(m-1) at the cap.
    up = m[1:]
    ratio = k_p * np.log1p(-np.exp((up - 1) * log_q + log_1mq) / -np.expm1(up * log_q))
    log_pmf = np.empty_like(m)
    log_pmf[0] = log_cdf[0]
    log_pmf[1:] = np.where(
        top[1:], np.log(-np.expm1(log_cdf[:-1])), log_cdf[1:] + np.log(-np.expm1(ratio))
    )
    with np.errstate(divide="ignore"):
        log_sf = np.where(top, -np.inf, np.log(-np.expm1(log_cdf)))  # log(1 - F(m))
        # G' = min(G, max_geometric): P(G' >= m) = q^(m-1) up to the cap, then 0.
        log_ge = np.where(m <= max_geometric, (m - 1) * log_q, -np.inf)
        log_eq = np.where(m < max_geometric, log_ge + log_1mq, log_ge)
        log_lt = np.log(-np.expm1(log_ge))
    # L > e^eps  <=>  P(G' = m) F^k > (e^eps - P(G' < m)) f^k, and e^eps - P(G' < m) =
    # expm1(eps) + P(G' >= m) > 0. Columns of the (m, k) grid are k = 1..c.
    k = np.arange(1, c + 1, dtype=np.float64)
    log_expm1 = epsilon + math.log(-math.expm1(-epsilon)) if epsilon > 0 else -math.inf
    log_slack = np.logaddexp(log_expm1, log_ge)
    with np.errstate(invalid="ignore"):
        lhs = log_eq[:, None] + k * log_cdf[:, None]
        rhs = log_slack[:, None] + k * log_pmf[:, None]
        in_s = lhs > rhs
        log_binom = gammaln(c + 1.0) - gammaln(k + 1.0) - gammaln(c - k + 1.0)
        rest = np.where(k == c, 0.0, (c - k) * log_sf[:, None])  # (1 - F)^0 = 1, also at the cap
        log_pd_prime = log_binom + k * log_pmf[:, None] + rest
        log_pd = log_binom + rest + np.logaddexp(lhs, log_lt[:, None] + k * log_pmf[:, None])
    a = math.fsum(np.exp(log_pd[in_s]).tolist())
    b = math.fsum(np.exp(log_pd_prime[in_s]).tolist())
    return min(a, 1.0), min(b, 1.0)


def _caps(
    max_value: int, max_geometric: int | None, alpha_min: int, gamma: float
) -> tuple[int, int]:
    """The validated value caps: the phantoms' and the record's (see fm_delta_lower_bound)."""
    max_value = _positive_int(max_value, "max_value (the phantom cap)")
    if max_value > _UINT8_MAX:
        raise PrivacyBudgetError(
            f"max_value must be <= {_UINT8_MAX} (sketch values are uint8); got {max_value}."
        )
    if alpha_min > max_value:
        raise PrivacyBudgetError(
            f"alpha_min ({alpha_min}) is above max_value ({max_value}); no value fits."
        )
    if max_geometric is None:
        max_geometric = min(max_geometric_value(gamma), max_value)
    max_geometric = _positive_int(max_geometric, "max_geometric (the record value's cap)")
    if max_geometric > max_value:
        raise PrivacyBudgetError(
            f"max_geometric ({max_geometric}) must be <= max_value ({max_value}): released "
            "values never exceed max_value."
        )
    return max_value, max_geometric


def fm_delta_lower_bound(
    t: int,
    eps_prime: float,
    k_p: int,
    alpha_min: int,
    gamma: float,
    rare_columns: int,
    epsilon: float,
    *,
    max_value: int = _UINT8_MAX,
    max_geometric: int | None = None,
    check_noise: bool = True,
) -> float:
    """Lower bound on delta at ``epsilon`` of the FM path's t keys of LocEnc sketches.

    The neighbour is a record x that is the only real record in ``rare_columns`` = c of its
    registers; the bound is exact (see the module doc) for the event "some key has an output
    of x's c registers whose likelihood ratio exceeds e^epsilon". ``k_p``, ``alpha_min`` and
    ``gamma`` are the sketch noise; with ``check_noise`` they must equal
    ``fm_noise(eps_prime, gamma)`` (the per-sketch epsilon' only enters through them).
    ``max_value`` caps the phantom draws (the library's uint8 clip, 255) and
    ``max_geometric`` the record's value (None: ``max_geometric_value(gamma)``, 65 at
    gamma = 1, or ``max_value`` if that is smaller).
    """
    t = _positive_int(t, "t (the number of keys)")
    c = _positive_int(rare_columns, "rare_columns (x's registers no other record touches)")
    k_p = _positive_int(k_p, "k_p (the phantom count)")
    alpha_min = _positive_int(alpha_min, "alpha_min (the floor)")
    eps_prime = _finite(eps_prime, "eps_prime (the per-sketch epsilon)", positive=True)
    epsilon = _finite(epsilon, "epsilon", positive=False)
    if isinstance(gamma, bool) or not isinstance(gamma, int | float | np.integer | np.floating):
        raise ConfigError(f"gamma must be a number in (0, 1]; got {gamma!r}.")
    gamma = check_gamma(gamma)
    max_value, max_geometric = _caps(max_value, max_geometric, alpha_min, gamma)
    if check_noise:
        noise = fm_noise(eps_prime, gamma)
        if (noise.k_p, noise.alpha_min) != (k_p, alpha_min):
            raise PrivacyBudgetError(
                f"k_p={k_p}, alpha_min={alpha_min} do not match eps_prime={eps_prime!r} "
                f"(fm_noise gives k_p={noise.k_p}, alpha_min={noise.alpha_min}); pass the "
                "unrounded eps_prime of the run, or check_noise=False for other noise."
            )
    a, b = _event_masses(k_p, alpha_min, gamma, c, epsilon, max_value, max_geometric)
    hit_d = -math.expm1(t * math.log1p(-a)) if a < 1.0 else 1.0  # 1 - (1 - a)^t
    hit_d_prime = -math.expm1(t * math.log1p(-b)) if b < 1.0 else 1.0
    if hit_d <= 0.0:
        return 0.0
    if hit_d_prime <= 0.0:
        return hit_d
    log_allowed = epsilon + math.log(hit_d_prime)  # e^eps * hit_d_prime, without overflow
    if log_allowed >= math.log(hit_d):
        return 0.0
    return hit_d - math.exp(log_allowed)
