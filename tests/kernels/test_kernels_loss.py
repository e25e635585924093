"""The fused mirror-descent loss kernel against its numpy reference."""

import numpy as np
import pytest

from tests.naive import reference_dot_diff, reference_scaled_loss, reference_weighted_squares
from vertimrf.kernels.loss import dot_diff, scaled_loss, weighted_squares


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 200_001])
def test_scaled_loss_matches_numpy(n: int) -> None:
    rng = np.random.default_rng(n)
    factor = rng.uniform(0.5, 3.0, size=4)
    home = rng.integers(0, 4, size=n)
    mu = rng.uniform(0, 100, size=n)
    y = rng.normal(50, 20, size=n)
    w2 = rng.uniform(0.01, 1.0, size=n)
    want_mu = mu.copy()
    want = reference_scaled_loss(want_mu, factor, home, y, w2)
    got = scaled_loss(mu, factor, home, y, w2)
    np.testing.assert_allclose(mu, want_mu, rtol=0, atol=0)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-300)


def test_scaled_loss_propagates_nan_and_inf() -> None:
    home = np.zeros(3, dtype=np.int64)
    y = np.zeros(3)
    w2 = np.ones(3)
    assert np.isnan(scaled_loss(np.array([1.0, np.nan, 2.0]), np.ones(1), home, y, w2))
    assert scaled_loss(np.array([1.0, np.inf, 2.0]), np.ones(1), home, y, w2) == np.inf


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 10_962, 200_001])
def test_the_fits_reductions_match_numpy(n: int) -> None:
    rng = np.random.default_rng(n + 1)
    g, a, b = rng.normal(0, 5, n), rng.uniform(0, 100, n), rng.uniform(0, 100, n)
    w = rng.uniform(0.01, 1.0, n)
    # the sums' terms are of mixed sign: compare at the scale of their absolute sum
    scale = float(np.sum(np.abs(g * (a - b)))) + 1e-300
    assert abs(dot_diff(g, a, b) - reference_dot_diff(g, a, b)) <= 1e-12 * scale
    assert weighted_squares(w, a - b) == pytest.approx(
        reference_weighted_squares(w, a - b), rel=1e-12, abs=1e-300
    )


def test_the_fits_reductions_propagate_nan_and_inf() -> None:
    one = np.ones(3)
    assert np.isnan(dot_diff(one, np.array([1.0, np.nan, 2.0]), one))
    assert dot_diff(one, np.array([1.0, np.inf, 2.0]), one) == np.inf
    assert np.isnan(weighted_squares(one, np.array([1.0, np.nan, 2.0])))
    assert weighted_squares(one, np.array([1.0, -np.inf, 2.0])) == np.inf
