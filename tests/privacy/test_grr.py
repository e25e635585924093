"""GRR perturbation and its closed-form unbiased marginal estimate."""

import itertools
import math

import numpy as np
import pytest

from vertimrf.domain import Domain, EncodedTable
from vertimrf.party.grr import grr_perturb
from vertimrf.privacy import PrivacyLedger
from vertimrf.privacy.calibration import grr_probabilities
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.server.grr import grr_marginal


def _explicit_inverse_estimate(perturbed, domain, eps, attrs):
    """Brute force: build the full (prod u)^2 transition matrix and solve."""
    shape = domain.shape(attrs)
    cells = list(itertools.product(*[range(s) for s in shape]))
    F = np.empty((len(cells), len(cells)))
    for i, x in enumerate(cells):
        for k, y in enumerate(cells):
            prob = 1.0
            for a, xv, yv in zip(attrs, x, y, strict=True):
                p, q = grr_probabilities(eps, domain.sizes[a])
                prob *= p if xv == yv else q
            F[k, i] = prob
    hist = np.zeros(len(cells))
    for row in perturbed[:, attrs]:
        hist[cells.index(tuple(row))] += 1
    return np.linalg.solve(F, hist).reshape(shape)


def test_closed_form_equals_explicit_matrix_inverse():
    rng = np.random.default_rng(3)
    dom = Domain.from_sizes([2, 3, 4])
    codes = np.column_stack([rng.integers(0, u, 500) for u in dom.sizes])
    pert = grr_perturb(
        EncodedTable(codes, dom), 1.3, noise=SeededSampler(rng), ledger=PrivacyLedger()
    ).codes
    for attrs in ([0], [2], [0, 1], [1, 2], [0, 1, 2]):
        np.testing.assert_allclose(
            grr_marginal(pert, dom, 1.3, attrs),
            _explicit_inverse_estimate(pert, dom, 1.3, attrs),
            rtol=1e-9,
            atol=1e-7,
        )


def test_keep_probability_and_uniform_other_values():
    rng = np.random.default_rng(0)
    dom = Domain.from_sizes([5])
    n, eps = 200_000, 1.0
    codes = np.full((n, 1), 2)
    pert = grr_perturb(
        EncodedTable(codes, dom), eps, noise=SeededSampler(rng), ledger=PrivacyLedger()
    ).codes
    p, q = grr_probabilities(eps, 5)
    freq = np.bincount(pert[:, 0], minlength=5) / n
    # Binomial frequencies: 5 standard errors is a bound exceeded with prob < 1e-6 per cell.
    for v, target in enumerate([q, q, p, q, q]):
        assert abs(freq[v] - target) < 5 * math.sqrt(target * (1 - target) / n)


def test_grr_marginal_is_unbiased():
    """Mean over 400 seeds within 4 standard errors of the exact marginal (CLT bound)."""
    base = np.random.default_rng(11)
    dom = Domain.from_sizes([2, 3, 4])
    n = 3000
    codes = np.column_stack([base.integers(0, u, n) for u in dom.sizes])
    codes[:, 1] = np.where(base.random(n) < 0.6, codes[:, 0], codes[:, 1])
    attrs = [0, 1, 2]
    exact = np.zeros(dom.shape(attrs))
    np.add.at(exact, tuple(codes[:, a] for a in attrs), 1)
    draws = np.stack(
        [
            grr_marginal(
                grr_perturb(
                    EncodedTable(codes, dom), 1.0, noise=SeededSampler(s), ledger=PrivacyLedger()
                ).codes,
                dom,
                1.0,
                attrs,
            )
            for s in range(400)
        ]
    )
    se = draws.std(axis=0, ddof=1) / math.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - exact) <= 4 * se)


def test_grr_charges_ledger_per_attribute():
    led = PrivacyLedger()
    dom = Domain.from_sizes([2, 3])
    grr_perturb(
        EncodedTable(np.zeros((10, 2), dtype=np.int64), dom),
        0.5,
        noise=SeededSampler(0),
        ledger=led,
    )
    assert led.total_rho == pytest.approx(2 * 0.5**2 / 2)
    assert led.releases[0].mechanism == "grr" and led.releases[0].count == 2
