"""Privacy accounting: zCDP conversions, calibration formulas and the ledger."""

import math

import numpy as np
import pytest

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy import (
    PrivacyLedger,
    Release,
    epsilon_to_rho,
    gaussian_sigma,
    pure_to_rho,
    rho_to_epsilon,
    sketch_epsilon,
)

CASES = [(1e-4, 1e-5), (0.01, 1e-5), (0.0245, 1 / 21574), (0.5, 1e-6), (3.0, 1e-9)]


def _cks_grid(rho: float, delta: float) -> float:
    """Brute-force CKS bound: the infimum over a dense grid of orders a > 1."""
    a = 1.0 + np.logspace(-6, 6, 400_001)
    vals = a * rho + (np.log(1 / delta) + (a - 1) * np.log1p(-1 / a) - np.log(a)) / (a - 1)
    return float(vals.min())


@pytest.mark.parametrize(("rho", "delta"), CASES)
def test_rho_to_epsilon_matches_grid_infimum(rho, delta):
    eps = rho_to_epsilon(rho, delta)
    grid = _cks_grid(rho, delta)
    assert eps <= grid + 1e-12
    assert eps == pytest.approx(grid, rel=1e-6)


@pytest.mark.parametrize(("rho", "delta"), CASES)
def test_rho_to_epsilon_matches_dp_accounting(rho, delta):
    """Independent computation: Google's RDP accountant on a Gaussian with the same rho."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant

    orders = list(1.0 + np.logspace(-4, 5, 6000))
    acc = rdp_privacy_accountant.RdpAccountant(orders=orders)
    acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(1 / (2 * rho))))
    theirs = acc.get_epsilon(delta)
    ours = rho_to_epsilon(rho, delta)
    # Their order grid is discrete, so their value is an upper bound close to ours.
    assert ours <= theirs + 1e-9
    assert theirs == pytest.approx(ours, rel=2e-4)


def test_cks_is_tighter_than_classic_bound():
    for rho, delta in CASES:
        assert rho_to_epsilon(rho, delta) < rho + 2 * math.sqrt(rho * math.log(1 / delta))


@pytest.mark.parametrize("eps", [0.05, 0.4, 0.8, 1.6, 3.2, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1 / 45222])
def test_epsilon_to_rho_is_the_inverse_and_safe(eps, delta):
    rho = epsilon_to_rho(eps, delta)
    back = rho_to_epsilon(rho, delta)
    assert back <= eps
    assert back == pytest.approx(eps, rel=1e-9)


def test_mechanism_costs():
    assert pure_to_rho(0.3) == pytest.approx(0.045)
    assert gaussian_sigma(2.0, 0.5) == pytest.approx(2.0)


def test_paper_sketch_formula_is_exact():
    eps_enc, t, d, delta = 0.4, 2000, 16, 1 / 21574
    expected = eps_enc / (4 * math.sqrt(t * d * math.log(1 / delta)))
    assert sketch_epsilon(t, d, epsilon=eps_enc, delta=delta, accounting="theorem2") == expected
    # Analysis table, NLTCS at epsilon 0.8: eps' = 1.77e-4.
    assert expected == pytest.approx(1.77e-4, rel=5e-3)


def test_zcdp_sketch_epsilon_spends_exactly_the_share():
    t, d, rho = 2000, 15, 0.01
    e = sketch_epsilon(t, d, rho=rho)
    assert t * d * pure_to_rho(e) == pytest.approx(rho, rel=1e-12)
    # Same (eps_enc, delta) share: zCDP gives a far larger eps' than the paper formula.
    delta = 1 / 21574
    zc = sketch_epsilon(2000, 16, rho=epsilon_to_rho(0.288, delta))
    pa = sketch_epsilon(2000, 16, epsilon=0.288, delta=delta, accounting="theorem2")
    assert 2.5 < zc / pa < 4.5


def test_ledger_totals_refusals_and_report():
    led = PrivacyLedger(epsilon=1.0, delta=1e-6)
    led.charge_pure("laplace", 0.05, party="A", description="noisy n")
    led.charge_gaussian("gaussian", 1.0, 30.0, count=4, party="B", description="marginals")
    expect = 0.05**2 / 2 + 4 / (2 * 900)
    assert led.total_rho == pytest.approx(expect, rel=1e-12)
    assert led.total_epsilon() == pytest.approx(rho_to_epsilon(expect, 1e-6))
    before = led.total_rho
    with pytest.raises(PrivacyBudgetError, match="budget"):
        led.charge_pure("fm_sketch", 10.0)
    assert led.total_rho == before  # a refused charge is not recorded
    text = led.report()
    assert "laplace" in text and "noisy n" in text and "marginals" in text
    assert "total (epsilon, delta)" in text
    rebuilt = PrivacyLedger()
    rebuilt.extend(Release(**r) for r in led.to_records())
    assert rebuilt.total_rho == led.total_rho


def test_ledger_spends_whole_budget_within_tolerance():
    led = PrivacyLedger(epsilon=0.8, delta=1e-5)
    shares = [0.1, 0.8, 0.1]
    for s in shares:
        led.charge_gaussian("gaussian", 1.0, gaussian_sigma(1.0, s * led.budget_rho))
    assert led.total_epsilon() == pytest.approx(0.8, abs=1e-9)
    assert led.total_epsilon() <= 0.8 + 1e-12


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_bad_privacy_parameters_raise(bad):
    with pytest.raises(PrivacyBudgetError):
        epsilon_to_rho(bad, 1e-5)
    with pytest.raises(PrivacyBudgetError):
        PrivacyLedger().charge_pure("laplace", bad)
