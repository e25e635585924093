"""Gaussian differential privacy (GDP): the exact (epsilon, delta) curve of a
Gaussian mechanism; design notes in docs/design/privacy.md."""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import log_ndtr

from vertimrf.errors import PrivacyBudgetError

_XTOL = 1e-15


def _check_epsilon(epsilon: float) -> None:
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"epsilon must be a positive finite number; got {epsilon!r}.")


def _check_delta(delta: float) -> None:
    if not (0.0 < delta < 1.0):
        raise PrivacyBudgetError(
            f"delta must be in (0, 1); got {delta!r}. A common choice is 1e-5."
        )


def log_gaussian_delta(mu: float, epsilon: float) -> float:
    """log of the smallest delta for which mu-GDP is (epsilon, delta)-DP.

    Computed as log Phi(a) + log(1 - exp(epsilon + log Phi(b) - log Phi(a))) with
    a = mu/2 - epsilon/mu and b = -mu/2 - epsilon/mu, so it stays finite where delta
    underflows.
    """
    if not (mu > 0 and math.isfinite(mu)):
        raise PrivacyBudgetError(f"mu must be a positive finite number; got {mu!r}.")
    if not (epsilon >= 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"epsilon must be a finite number >= 0; got {epsilon!r}.")
    log_pa = float(log_ndtr(mu / 2.0 - epsilon / mu))
    log_pb = float(log_ndtr(-mu / 2.0 - epsilon / mu))
    log_ratio = epsilon + log_pb - log_pa
    if log_ratio >= 0.0:
        # Only reachable through rounding when delta is below double precision relative to Phi(a).
        return -math.inf
    return log_pa + math.log(-math.expm1(log_ratio))


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP is (epsilon, delta)-DP (root of the Balle-Wang condition)."""
    _check_epsilon(epsilon)
    _check_delta(delta)
    target = math.log(delta)

    def gap(log_mu: float) -> float:
        return log_gaussian_delta(math.exp(log_mu), epsilon) - target

    # delta(mu) increases in mu; bracket the root on log(mu) by doubling outwards.
    lo, hi = -1.0, 1.0
    while gap(lo) > 0.0:
        lo -= 2.0 * abs(lo)
    while gap(hi) < 0.0:
        hi += 2.0 * abs(hi)
    log_mu = brentq(gap, lo, hi, xtol=_XTOL, rtol=4 * 2.0**-52, maxiter=500)
    mu = math.exp(log_mu)
    # Step to the safe side so that the returned mu never exceeds the stated delta.
    while log_gaussian_delta(mu, epsilon) > target:
        mu *= 1.0 - 1e-14
    return mu


def privmrf_budget(epsilon: float, delta: float) -> float:
    """PrivMRF's budget x(epsilon, delta): mu**2 for the largest admissible mu (Cai et al.)."""
    return gdp_mu(epsilon, delta) ** 2
