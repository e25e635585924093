"""The record count the engine fits at: the mean of N >= 0 given the noisy estimate under a
flat prior, against numerical integration of that posterior (scipy.integrate.quad)."""

from __future__ import annotations

import math

import pytest
from scipy.integrate import quad

from vertimrf.synth.engine.scores import record_total


def _posterior_mean(m: float, s: float) -> float:
    density = lambda n: math.exp(-0.5 * ((n - m) / s) ** 2)  # noqa: E731
    top = max(m, 0.0) + 40 * s
    return quad(lambda n: n * density(n), 0, top)[0] / quad(density, 0, top)[0]


@pytest.mark.parametrize("z", [-6.0, -3.0, -1.0, 0.0, 0.5, 2.0, 5.0])
def test_the_count_is_the_posterior_mean_of_a_nonnegative_count(z):
    s = 50.0  # a count alone, of inverse variance 1 / s^2
    got = record_total(z * s, 1.0 / s**2)
    assert got == pytest.approx(max(1.0, _posterior_mean(z * s, s)), rel=1e-7)


def test_far_above_zero_the_count_is_the_weighted_mean_itself():
    assert record_total(5_000.0, 1.0 / 50.0**2) == 5_000.0  # z = 100: no correction at all
    assert record_total(-1e6, 1.0) == 1.0  # far below 0: the floor of one record
