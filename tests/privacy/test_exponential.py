"""The exact exponential mechanism: its distribution, its charge and its input checks.

Each statistical check is a chi-square goodness-of-fit test against probabilities computed
here independently (a float softmax of eps k_i / (2 Delta)), at a false-alarm probability of
1e-6 under a correct sampler (the chi2 quantile at 1e-6; every expected count is >= 200, where
the chi-square approximation is accurate), or a frequency within 6 standard errors (two-sided
normal tail 2e-9). The exact samplers use fixed seeds; the secure sampler cannot be seeded, so
its checks keep that false-alarm probability.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.mechanisms import exponential_mechanism
from vertimrf.privacy.samplers import (
    KeyedSampler,
    NoiseSampler,
    SecureSampler,
    SeededSampler,
    _gumbel_scale,
    _opendp_noisy_max,
)

ALPHA = 1e-6  # false-alarm probability of each chi-square check
Z = 6.0  # standard errors of a frequency check
SCORES = [0, 3, 5, 5, -2]
DELTA, EPS = 2, 1.3


def _probs(scores: list[int], sensitivity: int, epsilon: float) -> np.ndarray:
    logits = epsilon * np.array(scores, dtype=np.float64) / (2 * sensitivity)
    w = np.exp(logits - logits.max())
    return w / w.sum()


def _chi2(draws: list[int], probs: np.ndarray) -> float:
    n = len(draws)
    observed = np.bincount(draws, minlength=len(probs))
    expected = n * probs
    return float(((observed - expected) ** 2 / expected).sum())


def _draws(sampler: NoiseSampler, n: int, scores=SCORES, sensitivity=DELTA, eps=EPS) -> list[int]:
    return [sampler.exponential_mechanism(scores, sensitivity, eps) for _ in range(n)]


def _exact_samplers() -> list[NoiseSampler]:
    return [SeededSampler(2026), KeyedSampler(b"k" * 32, "party-noise", "test", "exponential")]


@pytest.mark.parametrize("sampler", _exact_samplers(), ids=["seeded", "keyed"])
def test_exact_samplers_draw_the_exponential_mechanism(sampler):
    draws = _draws(sampler, 20_000)
    assert _chi2(draws, _probs(SCORES, DELTA, EPS)) < chi2.isf(ALPHA, len(SCORES) - 1)


def test_secure_sampler_draws_the_exponential_mechanism():
    draws = _draws(SecureSampler(), 6_000)
    assert _chi2(draws, _probs(SCORES, DELTA, EPS)) < chi2.isf(ALPHA, len(SCORES) - 1)


def test_the_fit_check_rejects_a_wrong_distribution():
    """The check has power: the draws do not fit the pure-DP-style exp(eps k / Delta) or a
    slightly different epsilon."""
    draws = _draws(SeededSampler(3), 20_000)
    limit = chi2.isf(ALPHA, len(SCORES) - 1)
    assert _chi2(draws, _probs(SCORES, DELTA // 2, EPS)) > limit
    assert _chi2(draws, _probs(SCORES, DELTA, 1.5)) > limit


def test_big_sensitivity_takes_the_big_integer_path_and_keeps_the_distribution():
    big = 1 << 40  # 2 Delta times epsilon's denominator 2**52 exceeds 2**63
    scores = [k * big for k in SCORES]
    draws = _draws(SeededSampler(5), 5_000, scores=scores, sensitivity=DELTA * big)
    assert _chi2(draws, _probs(SCORES, DELTA, EPS)) < chi2.isf(ALPHA, len(SCORES) - 1)


@pytest.mark.parametrize("kind", ["seeded", "keyed", "secure"])
def test_equal_scores_are_uniform(kind):
    sampler = {"seeded": SeededSampler(11), "secure": SecureSampler()}.get(
        kind, KeyedSampler(b"u" * 32, "party-noise", "uniform")
    )
    n, k = (3_000, 6) if kind == "secure" else (12_000, 6)
    draws = _draws(sampler, n, scores=[7] * k, sensitivity=1, eps=0.9)
    assert _chi2(draws, np.full(k, 1 / k)) < chi2.isf(ALPHA, k - 1)


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_a_huge_score_gap_never_picks_the_low_one_and_is_fast(kind):
    sampler = SeededSampler(1) if kind == "seeded" else SecureSampler()
    start = time.perf_counter()
    draws = _draws(sampler, 300, scores=[0, 10**6, 3], sensitivity=1, eps=1.0)
    assert set(draws) <= {1}  # P(0) = exp(-5e5): never
    assert time.perf_counter() - start < 5.0


def test_one_candidate_among_many_far_below_is_fast():
    """Expected proposals K / sum exp(-gamma gap) = K here: 2,000 candidates, one on top."""
    scores = np.zeros(2_000, dtype=np.int64)
    scores[1234] = 10**6
    start = time.perf_counter()
    assert _draws(SeededSampler(4), 20, scores=scores, sensitivity=1, eps=1.0) == [1234] * 20
    assert time.perf_counter() - start < 5.0


def test_big_integer_scores_on_the_exact_path():
    top = 1 << 70
    scores = np.array([top, top - 2, top - 40, -top], dtype=object)
    n = 6_000
    draws = _draws(SeededSampler(8), n, scores=scores, sensitivity=1, eps=1.0)
    assert 3 not in draws  # P(3) = exp(-2**70)
    p0 = 1 / (1 + math.exp(-1) + math.exp(-20))
    assert abs(draws.count(0) / n - p0) <= Z * math.sqrt(p0 * (1 - p0) / n)


def test_secure_sampler_shifts_big_scores_and_refuses_a_range_beyond_int64():
    top = 1 << 70
    assert (
        SecureSampler().exponential_mechanism(np.array([top - 10**6, top], dtype=object), 1, 1.0)
        == 1
    )
    with pytest.raises(ConfigError, match="int64"):
        SecureSampler().exponential_mechanism(np.array([top, 0], dtype=object), 1, 1.0)


def test_seeded_draws_replay():
    assert _draws(SeededSampler(9), 50) == _draws(SeededSampler(9), 50)


def test_integral_float_and_object_scores_are_the_int64_scores():
    as_int = _draws(SeededSampler(6), 40)
    as_float = _draws(SeededSampler(6), 40, scores=np.array(SCORES, dtype=np.float64))
    as_object = _draws(SeededSampler(6), 40, scores=np.array(SCORES, dtype=object))
    assert as_int == as_float == as_object


# ------------------------------------------------------------------------ the charge


class _Spy(SeededSampler):
    """Records the number of ledger releases at every selection it draws."""

    def __init__(self, ledger: PrivacyLedger) -> None:
        super().__init__(0)
        self.ledger = ledger
        self.seen: list[int] = []

    def _exponential(self, scores: np.ndarray, sensitivity: int, epsilon: float) -> int:
        self.seen.append(len(self.ledger.releases))
        return super()._exponential(scores, sensitivity, epsilon)


def _select(ledger: PrivacyLedger, noise: NoiseSampler, epsilon: float = EPS, **kw):
    return exponential_mechanism(
        kw.pop("scores", SCORES),
        sensitivity=kw.pop("sensitivity", DELTA),
        epsilon=epsilon,
        noise=noise,
        ledger=ledger,
        mechanism="select_marginal",
        description="round 1",
        **kw,
    )


def test_the_mechanism_charges_epsilon_squared_over_8_before_it_draws():
    ledger = PrivacyLedger(4.0, 1e-6)
    spy = _Spy(ledger)
    index, release = _select(ledger, spy, party="alice")
    assert 0 <= index < len(SCORES)
    assert spy.seen == [1]
    assert ledger.releases == (release,)
    assert release.rho == EPS**2 / 8
    assert (release.mechanism, release.count, release.party) == ("select_marginal", 1, "alice")
    assert release.params == {
        "epsilon": EPS,
        "sampler": "exponential_mechanism",
        "sensitivity": DELTA,
        "candidates": len(SCORES),
    }
    assert "sampler=exponential_mechanism" in ledger.report()
    assert ledger.to_records()[0]["rho"] == EPS**2 / 8


def test_a_ledger_without_room_raises_and_draws_nothing():
    ledger = PrivacyLedger(rho=EPS**2 / 8 * 0.99)
    spy = _Spy(ledger)
    with pytest.raises(PrivacyBudgetError, match="budget"):
        _select(ledger, spy)
    assert spy.seen == [] and ledger.releases == ()


@pytest.mark.parametrize(("sensitivity", "epsilon"), [(2, 1.3), (1, 0.1), (7, 3.0), (3, 0.7)])
def test_opendp_charges_the_same_for_the_secure_scale(sensitivity, epsilon):
    scale = _gumbel_scale(sensitivity, epsilon)
    exact = Fraction(2 * sensitivity) / Fraction(epsilon)
    assert Fraction(scale) >= exact > Fraction(math.nextafter(scale, 0.0))
    rho = _opendp_noisy_max(scale).map(sensitivity)
    assert math.isclose(rho, epsilon**2 / 8, rel_tol=1e-9)


# ---------------------------------------------------------------------------- inputs


BAD_SCORES = [[], [[1, 2]], [1.5, 2.0], [1.0, math.nan], ["a"], np.array([True, False])]


@pytest.mark.parametrize("scores", BAD_SCORES, ids=range(len(BAD_SCORES)))
def test_bad_scores_raise_one_line_errors(scores):
    ledger = PrivacyLedger()
    with pytest.raises(ConfigError) as err:
        _select(ledger, SeededSampler(0), scores=scores)
    assert "\n" not in str(err.value) and ledger.releases == ()
    with pytest.raises(ConfigError):
        SecureSampler().exponential_mechanism(scores, 1, 1.0)


BAD_PRIVACY = [(0, 1.0), (-1, 1.0), (1.0, 1.0), (True, 1.0), (1, 0.0), (1, -0.5)]
BAD_PRIVACY += [(1, math.nan), (1, math.inf), (1, "1")]


@pytest.mark.parametrize(("sensitivity", "epsilon"), BAD_PRIVACY)
def test_bad_sensitivity_or_epsilon_raise_one_line_errors(sensitivity, epsilon):
    ledger = PrivacyLedger()
    with pytest.raises(PrivacyBudgetError) as err:
        _select(ledger, SeededSampler(0), epsilon, sensitivity=sensitivity)
    assert "\n" not in str(err.value) and ledger.releases == ()
    with pytest.raises(PrivacyBudgetError):
        SeededSampler(0).exponential_mechanism(SCORES, sensitivity, epsilon)


@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan, math.inf])
def test_the_ledger_refuses_a_bad_epsilon(epsilon):
    with pytest.raises(PrivacyBudgetError):
        PrivacyLedger().charge_exponential("select", epsilon)
