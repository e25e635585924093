"""theta-usefulness limits and noise levels against the analysis's worked numbers (2.12)."""

import math

import pytest

from vertimrf.synth.privmrf.budget_split import BudgetSplit, sigma_for_share, total_rho
from vertimrf.synth.privmrf.usefulness import graph_phase_max_cells, refinement_max_cells

# dataset, epsilon, n, d, x, sigma_n, graph max_dom, sigma_marg (|S| = d), refinement max_dom
WORKED = [
    ("nltcs", 0.8, 21574, 16, 0.04782, 144.6, 131, 27.1, 167),
    ("nltcs", 3.2, 21574, 16, 0.5793, 41.5, 456, 7.8, 580),
    ("adult", 0.8, 45222, 15, 0.04782, 144.6, 284, 26.6, 356),
]


@pytest.mark.parametrize(("name", "eps", "n", "d", "x", "s_n", "g_max", "s_m", "r_max"), WORKED)
def test_worked_numbers(name, eps, n, d, x, s_n, g_max, s_m, r_max) -> None:
    # The reference's shares (x-units): count 0.001 x, measurements 0.8 x; rho = x / 2.
    rho = total_rho(eps, 1e-5, gdp_accounting=True)
    assert 2 * rho == pytest.approx(x, rel=1e-3)
    split = BudgetSplit()
    assert sigma_for_share(split.count * rho, 1, 1.0) == pytest.approx(s_n, rel=2e-3)
    sigma_est = math.sqrt(1.8 * d / (2 * split.measurements * rho))
    assert graph_phase_max_cells(n, sigma_est, 6.0) == pytest.approx(g_max, abs=1)
    k = int(0.8 * d)
    sigma = sigma_for_share(split.measurements * rho, d + k, 1.0)
    assert sigma == pytest.approx(s_m, abs=0.06)
    assert refinement_max_cells(n, sigma, 6.0) == pytest.approx(r_max, abs=1)


def test_limits_by_hand() -> None:
    assert graph_phase_max_cells(1200.0, 10.0, 6.0) == pytest.approx(20.0)
    assert refinement_max_cells(1200.0, 10.0, 6.0) == pytest.approx(20.0 / math.sqrt(2 / math.pi))
