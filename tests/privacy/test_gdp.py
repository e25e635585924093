"""x(epsilon, delta) against the PrivMRF reference table and an independent accountant."""

import math

import pytest
from dp_accounting.gaussian_mechanism import get_epsilon_gaussian

from tests.privacy.privmrf_table import PRIVMRF_TABLE
from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.gdp import gdp_mu, log_gaussian_delta, privmrf_budget


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


def _phi(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


@pytest.mark.parametrize("epsilon", [0.05, 0.8, 3.2])
def test_root_satisfies_the_delta_formula(epsilon: float) -> None:
    mu = gdp_mu(epsilon, 1e-5)
    # Direct evaluation of Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) with erfc.
    direct = _phi(mu / 2 - epsilon / mu) - math.exp(epsilon) * _phi(-mu / 2 - epsilon / mu)
    assert direct == pytest.approx(1e-5, rel=1e-7)
    assert log_gaussian_delta(mu, epsilon) <= math.log(1e-5)
    assert log_gaussian_delta(mu * (1 + 1e-6), epsilon) > math.log(1e-5)


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
