"""x(epsilon, delta) against the PrivMRF reference table and an independent accountant."""

import math

import pytest
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.gdp import (
    gaussian_delta,
    gdp_epsilon,
    gdp_mu,
    log_gaussian_delta,
    privmrf_budget,
)

# Every value of the reference table (method analysis section 1.2), delta = 1e-5.
PRIVMRF_TABLE = {
    0.05: 2.99630e-4,
    0.06: 4.17107e-4,
    0.07: 5.52018e-4,
    0.08: 7.03963e-4,
    0.09: 8.72589e-4,
    0.095: 9.63067e-4,
    0.098: 1.01930e-3,
    0.10: 1.05761e-3,
    0.12: 1.47577e-3,
    0.14: 1.95666e-3,
    0.16: 2.49880e-3,
    0.18: 3.10091e-3,
    0.20: 3.76188e-3,
    0.24: 5.25654e-3,
    0.28: 6.97593e-3,
    0.32: 8.91426e-3,
    0.36: 1.10665e-2,
    0.40: 1.34283e-2,
    0.48: 1.87647e-2,
    0.56: 2.48952e-2,
    0.64: 3.17957e-2,
    0.72: 3.94449e-2,
    0.80: 4.78237e-2,
    0.96: 6.67015e-2,
    1.12: 8.83054e-2,
    1.28: 1.12527e-1,
    1.44: 1.39272e-1,
    1.60: 1.68452e-1,
    1.92: 2.33809e-1,
    2.24: 0.30804,
    2.56: 0.39064,
    2.88: 0.48120,
    3.04: 0.52934,
    3.2: 0.57932,
}


@pytest.mark.parametrize(("epsilon", "x_table"), sorted(PRIVMRF_TABLE.items()))
def test_matches_reference_table(epsilon: float, x_table: float) -> None:
    # The table has 5-6 significant digits, so 1e-4 relative error is the digits given.
    assert privmrf_budget(epsilon, 1e-5) == pytest.approx(x_table, rel=1e-4)


@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.8, 1.6, 3.2, 8.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 1e-3])
def test_independent_accountant_agrees(epsilon: float, delta: float) -> None:
    # dp_accounting computes the analytic-Gaussian epsilon for sigma = 1/mu independently.
    mu = gdp_mu(epsilon, delta)
    assert get_epsilon_gaussian(1.0 / mu, delta, tol=1e-13) == pytest.approx(epsilon, rel=1e-8)
    assert gdp_epsilon(mu, delta) == pytest.approx(epsilon, rel=1e-8)


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@pytest.mark.parametrize("epsilon", [0.05, 0.8, 3.2])
def test_root_satisfies_the_delta_formula(epsilon: float) -> None:
    mu = gdp_mu(epsilon, 1e-5)
    # Direct evaluation of Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) with erfc.
    direct = _phi(mu / 2 - epsilon / mu) - math.exp(epsilon) * _phi(-mu / 2 - epsilon / mu)
    assert direct == pytest.approx(1e-5, rel=1e-7)
    assert gaussian_delta(mu, epsilon) <= 1e-5
    assert gaussian_delta(mu * (1 + 1e-6), epsilon) > 1e-5


def test_log_space_stays_finite_where_delta_underflows() -> None:
    assert math.isfinite(log_gaussian_delta(0.5, 200.0))
    mu = gdp_mu(1.0, 1e-300)
    assert log_gaussian_delta(mu, 1.0) == pytest.approx(math.log(1e-300), rel=1e-9)


def test_monotone_in_epsilon_and_delta() -> None:
    assert privmrf_budget(0.5, 1e-5) < privmrf_budget(0.6, 1e-5)
    assert privmrf_budget(0.5, 1e-6) < privmrf_budget(0.5, 1e-5)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.0, 1e-5), (-1.0, 1e-5), (1.0, 0.0), (1.0, 1.0)])
def test_invalid_parameters_raise(epsilon: float, delta: float) -> None:
    with pytest.raises(PrivacyBudgetError):
        privmrf_budget(epsilon, delta)
