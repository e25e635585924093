"""The PrivMRF budget split and the noise calibration."""

import pytest

from tests.privacy.privmrf_table import PRIVMRF_TABLE
from vertimrf.errors import ConfigError
from vertimrf.privacy import epsilon_to_rho, gaussian_rho
from vertimrf.synth.privmrf.budget_split import BudgetSplit, sigma_for_share, total_rho


def test_default_split_deducts_the_count_share() -> None:
    split = BudgetSplit()
    # Analysis 2.2: 10% scores (incl. the count, 1% of that share), 80% measurements, 10% L1.
    assert split.scores + split.count == pytest.approx(0.1)
    assert split.count == pytest.approx(0.01 * 0.1)
    assert (split.measurements, split.error_queries) == (0.8, 0.1)
    assert split.scores + split.count + split.measurements + split.error_queries == 1.0


@pytest.mark.parametrize(
    "kwargs",
    [{"scores": 0.2}, {"count": -0.1, "scores": 0.2}, {"measurements": 0.0, "scores": 0.9}],
)
def test_invalid_splits_raise(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        BudgetSplit(**kwargs)


def test_total_rho_modes() -> None:
    assert total_rho(0.8, 1e-5) == epsilon_to_rho(0.8, 1e-5)


@pytest.mark.parametrize(("epsilon", "x_table"), sorted(PRIVMRF_TABLE.items()))
def test_gdp_accounting_spends_the_reference_budget(epsilon: float, x_table: float) -> None:
    # The reference's budget x(epsilon) at delta = 1e-5 (analysis 1.2); mu-GDP is rho = mu^2/2.
    assert total_rho(epsilon, 1e-5, gdp_accounting=True) == pytest.approx(x_table / 2, rel=1e-4)


@pytest.mark.parametrize(("count", "sens"), [(1, 1.0), (120, 2.0), (37, 1.0)])
def test_sigma_for_share_spends_exactly_the_share(count: int, sens: float) -> None:
    sigma = sigma_for_share(0.01, count, sens)
    assert count * gaussian_rho(sens, sigma) == pytest.approx(0.01, rel=1e-14)


def test_paper_sigmas_match_the_reference_formula() -> None:
    # Reference: sigma = Delta * sqrt(k / b) for k releases sharing b of x (analysis 1.2).
    x = 4.78237e-2
    rho = total_rho(0.8, 1e-5, gdp_accounting=True)
    assert sigma_for_share(0.8 * rho, 28, 1.0) == pytest.approx((28 / (0.8 * x)) ** 0.5, rel=1e-5)
