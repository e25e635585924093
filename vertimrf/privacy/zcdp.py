"""Zero-concentrated DP (zCDP) conversions; design notes in docs/design/privacy.md."""

from __future__ import annotations

import math

from scipy.optimize import brentq, minimize_scalar

from vertimrf.errors import PrivacyBudgetError

# A public delta for examples, the demo and the benchmarks: fixed, never derived from the
# data (delta = 1/n would put the record count into the public config).
DEFAULT_DELTA = 1e-6


def _check_delta(delta: float) -> None:
    if not (0.0 < delta < 1.0):
        raise PrivacyBudgetError(
            f"delta must be in (0, 1); got {delta!r}. Use a small public value such as 1e-6 "
            "(never 1/n, which would reveal the record count)."
        )


def _cks_objective(log_am1: float, rho: float, log_inv_delta: float) -> float:
    a = 1.0 + math.exp(log_am1)
    am1 = a - 1.0
    return a * rho + (log_inv_delta + am1 * math.log1p(-1.0 / a) - math.log(a)) / am1


def rho_to_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP (CKS bound)."""
    _check_delta(delta)
    if rho < 0:
        raise PrivacyBudgetError(f"rho must be >= 0; got {rho!r}.")
    if rho == 0:
        return 0.0
    lid = math.log(1.0 / delta)
    # The optimum order is near 1 + sqrt(log(1/delta)/rho); search log(a-1) around it.
    guess = math.log(math.sqrt(lid / rho))
    res = minimize_scalar(
        _cks_objective,
        bounds=(guess - 12.0, guess + 12.0),
        args=(rho, lid),
        method="bounded",
        options={"xatol": 1e-12},
    )
    return max(0.0, float(res.fun))


def epsilon_to_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose zCDP guarantee implies (epsilon, delta)-DP (inverse of the CKS bound).

    >>> rho = epsilon_to_rho(1.0, 1e-6)
    >>> round_up(rho), rho_to_epsilon(rho, 1e-6) <= 1.0
    ('0.02436', True)
    """
    _check_delta(delta)
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(f"epsilon must be a positive finite number; got {epsilon!r}.")
    hi = epsilon
    while rho_to_epsilon(hi, delta) < epsilon:
        hi *= 2.0
    rho = brentq(lambda r: rho_to_epsilon(r, delta) - epsilon, 0.0, hi, xtol=1e-15, rtol=1e-13)
    # Step down to the safe side of the root so the stated (epsilon, delta) is an upper bound.
    while rho_to_epsilon(rho, delta) > epsilon:
        rho *= 1.0 - 1e-12
    return float(rho)


def pure_to_rho(epsilon: float) -> float:
    """zCDP cost of one epsilon-DP release (Bun and Steinke 2016, Prop. 1.4): rho = eps^2 / 2.

    >>> pure_to_rho(0.5)
    0.125
    """
    return 0.5 * epsilon * epsilon


def exponential_rho(epsilon: float) -> float:
    """zCDP cost of one exponential-mechanism selection at epsilon: rho = eps^2 / 8.

    It has epsilon-bounded range, and an epsilon-bounded-range mechanism is eps^2/8-zCDP
    (Cesar and Rogers 2021; the charge AIM uses).

    >>> exponential_rho(2.0)
    0.5
    """
    return epsilon * epsilon / 8.0


def gaussian_rho(sensitivity: float, sigma: float) -> float:
    """zCDP cost of a Gaussian mechanism with L2 sensitivity Delta and std sigma.

    >>> gaussian_rho(1, 10)
    0.005
    """
    return sensitivity * sensitivity / (2.0 * sigma * sigma)


def gaussian_sigma(sensitivity: float, rho: float) -> float:
    """Gaussian standard deviation that costs exactly ``rho`` for L2 sensitivity Delta."""
    if rho <= 0:
        raise PrivacyBudgetError(f"a Gaussian release needs rho > 0; got {rho!r}.")
    return sensitivity / math.sqrt(2.0 * rho)


def round_up(x: float, digits: int = 4) -> str:
    """``x`` rounded UP to ``digits`` significant digits, as text: a printed privacy loss
    (epsilon, delta, rho) is then never below the true one and carries no more digits.

    A value whose shortest decimal form has at most ``digits`` significant digits (a
    delta of 1e-05 as given, whose double lies a hair above 1e-05) prints as that form.

    >>> round_up(0.123412, 3), round_up(2.0), round_up(1e-05, 2)
    ('0.124', '2', '1e-05')
    """
    if not math.isfinite(x) or x == 0:
        return f"{x:g}"
    if len(repr(abs(x)).split("e")[0].replace(".", "").strip("0")) <= digits:
        return f"{x:.{digits}g}"
    exponent = math.floor(math.log10(abs(x))) - digits + 1
    scale = 10.0**exponent
    value = math.ceil(x / scale) * scale
    if value < x:  # the float product rounded below x
        value = math.nextafter(value, math.inf)
    return f"{value:.{digits}g}"
