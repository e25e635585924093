"""The worst-case lower bound on delta of the FM path (docs/fm-privacy-gap.md).

The brute-force tests enumerate every joint output of x's c registers for tiny phantom
counts and value caps, with the output probabilities summed directly over the shared
geometric value and the phantom draws (not through the L(m, k) formula of the module).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.calibration import sketch_epsilon
from vertimrf.privacy.fm import fm_noise, max_geometric_value
from vertimrf.privacy.fm_gap import fm_delta_lower_bound
from vertimrf.privacy.zcdp import epsilon_to_rho

ADULT = {"t": 2000, "eps_prime": 0.001373, "k_p": 728, "alpha_min": 10, "gamma": 1.0}
# The note prints eps' = 0.000327; the run's unrounded value is the one that gives k_p = 3057
# (the rounded one gives k_p = 3058). It is the default preset's share for NLTCS: 16 columns,
# epsilon 0.8, delta 1/21574, t 16000, 0.56 of rho for the sketches (nothing is binned).
NLTCS_EPS_PRIME = sketch_epsilon(16000, 16, rho=0.56 * epsilon_to_rho(0.8, 1.0 / 21574))
NLTCS = {"t": 16000, "eps_prime": NLTCS_EPS_PRIME, "k_p": 3057, "alpha_min": 12, "gamma": 1.0}


@pytest.mark.parametrize(
    ("params", "epsilon", "c", "expected"),
    [
        (ADULT, 1.6, 2, 6.4e-4),
        (ADULT, 1.6, 3, 0.046),
        (ADULT, 1.6, 15, 0.76),
        (NLTCS, 0.8, 2, 1.0e-3),
        (NLTCS, 0.8, 3, 0.076),
        (NLTCS, 0.8, 16, 0.64),
    ],
)
def test_reference_values_of_the_design_note(params, epsilon, c, expected):
    value = fm_delta_lower_bound(**params, rare_columns=c, epsilon=epsilon)
    assert float(f"{value:.2g}") == expected


def test_reference_noise_parameters_are_consistent():
    adult = fm_noise(ADULT["eps_prime"])
    assert (adult.k_p, adult.alpha_min) == (728, 10)
    nltcs = fm_noise(NLTCS_EPS_PRIME)
    assert round(NLTCS_EPS_PRIME, 6) == 0.000327
    assert (nltcs.k_p, nltcs.alpha_min) == (3057, 12)
    assert fm_noise(0.000327).k_p == 3058  # the note's rounded eps' is not the run's
    with pytest.raises(PrivacyBudgetError, match="fm_noise gives k_p=3058"):
        fm_delta_lower_bound(**{**NLTCS, "eps_prime": 0.000327}, rare_columns=2, epsilon=0.8)


def test_caps_of_the_shipped_mechanism():
    assert max_geometric_value(1.0) == 65
    capped = fm_delta_lower_bound(**ADULT, rare_columns=3, epsilon=1.6)
    explicit = fm_delta_lower_bound(
        **ADULT, rare_columns=3, epsilon=1.6, max_value=255, max_geometric=65
    )
    uncapped = fm_delta_lower_bound(**ADULT, rare_columns=3, epsilon=1.6, max_geometric=255)
    assert capped == explicit
    assert capped == pytest.approx(uncapped, rel=1e-12)  # the cap holds mass 2^-64 per key


def test_one_register_alone_leaks_nothing_at_these_epsilons():
    assert fm_delta_lower_bound(**ADULT, rare_columns=1, epsilon=1.6) == 0.0
    assert fm_delta_lower_bound(**NLTCS, rare_columns=1, epsilon=0.8) == 0.0


def test_bound_grows_with_rare_columns_and_keys():
    by_c = [fm_delta_lower_bound(**ADULT, rare_columns=c, epsilon=1.6) for c in range(2, 16)]
    assert all(x < y for x, y in zip(by_c, by_c[1:], strict=False))
    params = {k: v for k, v in ADULT.items() if k != "t"}
    by_t = [
        fm_delta_lower_bound(t=t, **params, rare_columns=3, epsilon=1.6)
        for t in (1, 10, 100, 1000, 2000, 10000)
    ]
    assert all(x < y for x, y in zip(by_t, by_t[1:], strict=False))
    by_eps = [fm_delta_lower_bound(**ADULT, rare_columns=3, epsilon=e) for e in (0.5, 1, 2, 4)]
    assert all(x > y for x, y in zip(by_eps, by_eps[1:], strict=False))


# --- brute force -------------------------------------------------------------------------


def _capped_geometric(gamma: float, cap: int) -> np.ndarray:
    """pmf of min(G, cap) on 1..cap (index v - 1), G geometric with P(G >= k) = q^(k-1)."""
    q = 1.0 / (1.0 + gamma)
    pmf = np.array([q ** (v - 1) * (1.0 - q) for v in range(1, cap + 1)])
    pmf[-1] = q ** (cap - 1)
    return pmf


def _exact_outputs(k_p, alpha_min, gamma, c, max_value, max_geometric):
    """P_D and P_D' of every output (r_1..r_c) in {alpha_min..max_value}^c, by direct sums."""
    one = _capped_geometric(gamma, max_value)  # one phantom draw, clipped at max_value
    phantom = np.zeros(max_value + 1)  # pmf of the max of k_p draws, by enumerating the draws
    for draws in itertools.product(range(1, max_value + 1), repeat=k_p):
        phantom[max(draws)] += math.prod(one[d - 1] for d in draws)
    record = np.zeros(max_value + 1)
    record[1 : max_geometric + 1] = _capped_geometric(gamma, max_geometric)
    values = range(alpha_min, max_value + 1)
    # trans[g, i] = P(max(g, phantom, alpha_min) = values[i]), g = 0 meaning "no record".
    trans = np.zeros((max_value + 1, len(values)))
    for g in range(max_value + 1):
        for p in range(1, max_value + 1):
            trans[g, max(g, p, alpha_min) - alpha_min] += phantom[p]
    shape = (len(values),) * c
    p_without = np.ones(shape)
    p_with = np.zeros(shape)
    for i in range(c):
        view = [1] * c
        view[i] = len(values)
        p_without = p_without * trans[0].reshape(view)
    for g in range(1, max_value + 1):
        term = np.full(shape, record[g])
        for i in range(c):
            view = [1] * c
            view[i] = len(values)
            term = term * trans[g].reshape(view)
        p_with += term
    return p_with.ravel(), p_without.ravel()


CAPS = [(6, 6), (8, 8), (9, 7), (10, 10)]  # (max_value, max_geometric)
EPSILONS = [0.05, 0.3, 1.0, 2.0]


@pytest.mark.parametrize("k_p", [1, 2, 3])
@pytest.mark.parametrize("c", [1, 2, 3])
@pytest.mark.parametrize("gamma", [1.0, 0.5])
@pytest.mark.parametrize("alpha_min", [1, 2, 4])
@pytest.mark.parametrize(("max_value", "max_geometric"), CAPS)
def test_matches_brute_force_enumeration(k_p, c, gamma, alpha_min, max_value, max_geometric):
    p_with, p_without = _exact_outputs(k_p, alpha_min, gamma, c, max_value, max_geometric)
    assert p_with.sum() == pytest.approx(1.0, abs=1e-12)
    assert p_without.sum() == pytest.approx(1.0, abs=1e-12)
    pair_with = np.outer(p_with, p_with).ravel()
    pair_without = np.outer(p_without, p_without).ravel()

    def bound(t: int, epsilon: float) -> float:
        return fm_delta_lower_bound(
            t,
            1.0,  # eps_prime is not used with check_noise=False
            k_p,
            alpha_min,
            gamma,
            c,
            epsilon,
            max_value=max_value,
            max_geometric=max_geometric,
            check_noise=False,
        )

    for epsilon in EPSILONS:
        ratio = math.exp(epsilon)
        gap = p_with - ratio * p_without
        # No output sits on the boundary of S, so S found here and in the module must agree.
        assert np.all(np.abs(gap) > 1e-9 * np.maximum(p_with, p_without))
        in_s = gap > 0
        # t = 1: the event bound is the hockey-stick divergence of the restricted release.
        hockey = float(np.sum(np.maximum(gap, 0.0)))
        assert bound(1, epsilon) == pytest.approx(hockey, abs=1e-12)
        # Any t: the same event S on every key, with a and b summed output by output.
        a, b = p_with[in_s].sum(), p_without[in_s].sum()
        for t in (2, 5, 40):
            expected = max(0.0, (1 - (1 - a) ** t) - ratio * (1 - (1 - b) ** t))
            assert bound(t, epsilon) == pytest.approx(expected, abs=1e-12)
        # t = 2: a valid lower bound on the exact divergence of the two-key product.
        hockey_two = float(np.sum(np.maximum(pair_with - ratio * pair_without, 0.0)))
        two = bound(2, epsilon)
        assert 0.0 <= two <= hockey_two + 1e-12


def test_brute_force_shows_a_leak_for_two_registers():
    # With k_p = 2 phantoms one register is about 0.4-DP, so alone it leaks nothing at
    # epsilon = 1; two registers sharing G do.
    kwargs = {"max_value": 10, "max_geometric": 10, "check_noise": False}
    assert fm_delta_lower_bound(1, 0.7, 2, 1, 1.0, 1, 1.0, **kwargs) == 0.0
    assert fm_delta_lower_bound(1, 0.7, 2, 1, 1.0, 2, 1.0, **kwargs) > 1e-3


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"t": 0}, PrivacyBudgetError, "t"),
        ({"t": 2.5}, PrivacyBudgetError, "t"),
        ({"t": True}, PrivacyBudgetError, "t"),
        ({"rare_columns": 0}, PrivacyBudgetError, "rare_columns"),
        ({"k_p": 0}, PrivacyBudgetError, "k_p"),
        ({"alpha_min": 0}, PrivacyBudgetError, "alpha_min"),
        ({"eps_prime": 0.0}, PrivacyBudgetError, "eps_prime"),
        ({"eps_prime": math.inf}, PrivacyBudgetError, "eps_prime"),
        ({"epsilon": -0.1}, PrivacyBudgetError, "epsilon"),
        ({"epsilon": math.nan}, PrivacyBudgetError, "epsilon"),
        ({"gamma": 0.0}, ConfigError, "gamma"),
        ({"gamma": 1.5}, ConfigError, "gamma"),
        ({"gamma": "1"}, ConfigError, "gamma"),
        ({"max_value": 256}, PrivacyBudgetError, "uint8"),
        ({"k_p": 700}, PrivacyBudgetError, "fm_noise"),
        ({"max_value": 9}, PrivacyBudgetError, "alpha_min"),
        ({"max_geometric": 0}, PrivacyBudgetError, "max_geometric"),
        ({"max_geometric": 256}, PrivacyBudgetError, "max_value"),
    ],
)
def test_bad_inputs_are_refused(change, error, match):
    kwargs = {**ADULT, "rare_columns": 2, "epsilon": 1.6, **change}
    with pytest.raises(error, match=match):
        fm_delta_lower_bound(**kwargs)


def test_edge_cases():
    # Every register is the floor whatever x does: nothing leaks.
    kwargs = {"max_value": 7, "max_geometric": 7, "check_noise": False}
    assert fm_delta_lower_bound(10, 1.0, 2, 7, 1.0, 3, 0.5, **kwargs) == 0.0
    # A huge epsilon neither overflows nor leaves anything in S.
    assert fm_delta_lower_bound(**ADULT, rare_columns=15, epsilon=1e4) == 0.0
    assert fm_delta_lower_bound(**ADULT, rare_columns=15, epsilon=40.0) > 0.0


def test_zero_epsilon_gives_a_total_variation_bound():
    value = fm_delta_lower_bound(**ADULT, rare_columns=15, epsilon=0.0)
    assert fm_delta_lower_bound(**ADULT, rare_columns=15, epsilon=1.6) < value <= 1.0
