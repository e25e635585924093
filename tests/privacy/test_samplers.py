"""Exact discrete samplers: distribution, exact semantics, reproducibility and validation.

Statistical tests compare draws with pmfs computed here independently (normalising
exp(-|x|/s) or exp(-x**2 / (2 sigma**2)) over a wide integer range). Each statistical check is
set at a failure probability of about 1e-7 under a correct sampler: chi-square statistics
against the chi2 quantile at 1e-7, and means/variances/frequencies against 6 standard errors
(two-sided normal tail 2e-9; the CLT is accurate at these sample sizes). The seeded sampler
uses fixed seeds; the secure sampler cannot be seeded, so its checks keep that probability.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy.stats import chi2

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.exact import _exp_neg_floor, _exp_neg_table
from vertimrf.privacy.samplers import (
    NoiseSampler,
    SecureSampler,
    SeededSampler,
    noise_sampler,
)

ALPHA = 1e-7  # per-check failure probability of the chi-square tests
Z = 6.0  # standard errors for mean/variance/frequency checks (two-sided tail ~2e-9)


@pytest.fixture(scope="module")
def secure() -> SecureSampler:
    return SecureSampler()


def _sampler(kind: str, secure: SecureSampler, seed: int = 12345) -> NoiseSampler:
    return secure if kind == "secure" else SeededSampler(seed)


# -------------------------------------------------------------------------------- helpers


def _laplace_pmf(scale: float) -> tuple[np.ndarray, np.ndarray]:
    r = math.ceil(60 * scale) + 10  # tail mass beyond r is below exp(-60)
    xs = np.arange(-r, r + 1)
    w = np.exp(-np.abs(xs) / scale)
    return xs, w / w.sum()


def _gaussian_pmf(sigma: float) -> tuple[np.ndarray, np.ndarray]:
    r = math.ceil(12 * sigma) + 10  # tail mass beyond r is below exp(-72)
    xs = np.arange(-r, r + 1)
    w = np.exp(-(xs.astype(np.float64) ** 2) / (2 * sigma**2))
    return xs, w / w.sum()


def _chi2_stat(draws: np.ndarray, xs: np.ndarray, pmf: np.ndarray) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom, with pooled tails.

    Support points are grouped left to right into bins of expected count >= 20 (so the left
    tail is pooled); the remainder on the right is merged into the last bin.
    """
    n = len(draws)
    upper: list[int] = []
    expected: list[float] = []
    acc = 0.0
    for x, p in zip(xs, pmf, strict=True):
        acc += n * p
        if acc >= 20:
            upper.append(int(x))
            expected.append(acc)
            acc = 0.0
    expected[-1] += acc
    upper[-1] = int(xs[-1])
    idx = np.minimum(np.searchsorted(np.array(upper), draws, side="left"), len(upper) - 1)
    observed = np.bincount(idx, minlength=len(upper))
    exp = np.array(expected)
    return float(((observed - exp) ** 2 / exp).sum()), len(upper) - 1


def _assert_fits(draws: np.ndarray, xs: np.ndarray, pmf: np.ndarray) -> None:
    stat, df = _chi2_stat(draws, xs, pmf)
    assert stat < chi2.isf(ALPHA, df), (stat, df)
    # Mean (0) and second moment: m2 = mean(x^2) has variance (mu4 - mu2^2) / n.
    n = len(draws)
    mu2 = float((pmf * xs.astype(np.float64) ** 2).sum())
    mu4 = float((pmf * xs.astype(np.float64) ** 4).sum())
    x = draws.astype(np.float64)
    assert abs(x.mean()) <= Z * math.sqrt(mu2 / n)
    assert abs((x**2).mean() - mu2) <= Z * math.sqrt((mu4 - mu2**2) / n)


def _freq_ok(hits: int, n: int, p: float) -> bool:
    return abs(hits / n - p) <= Z * math.sqrt(p * (1 - p) / n)


def _frac_exp_neg_2_64(v: int) -> float:
    """frac(exp(-v) * 2**64) by decimal arithmetic (independent of the sampler's series)."""
    with localcontext() as ctx:
        ctx.prec = 80
        x = Decimal(-v).exp() * Decimal(2) ** 64
        return float(x - int(x))


class _ForcedFirst(SeededSampler):
    """A seeded sampler whose first ``_words`` call returns a constant word (to force ties)."""

    def __init__(self, seed: int, first: int) -> None:
        super().__init__(seed)
        self._first: int | None = first

    def _words(self, n: int) -> np.ndarray:
        if self._first is not None:
            w = np.full(n, self._first, dtype=np.uint64)
            self._first = None
            return w
        return super()._words(n)


# ------------------------------------------------------------------- noise distributions

N_SEEDED, N_SECURE = 60_000, 20_000


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("sigma", [0.5, 3.0, 40.0, 7.3])
def test_discrete_gaussian_matches_pmf(kind, sigma, secure):
    s = _sampler(kind, secure)
    draws = s.discrete_gaussian(sigma, N_SEEDED if kind == "seeded" else N_SECURE)
    assert draws.dtype == np.int64
    _assert_fits(draws, *_gaussian_pmf(sigma))


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("scale", [0.7, 5.0])
def test_discrete_laplace_matches_pmf(kind, scale, secure):
    s = _sampler(kind, secure)
    draws = s.discrete_laplace(scale, N_SEEDED if kind == "seeded" else N_SECURE)
    assert draws.dtype == np.int64
    _assert_fits(draws, *_laplace_pmf(scale))


def test_fit_check_rejects_a_wrong_distribution():
    """The goodness-of-fit check has power: a 5% wrong sigma or 10% wrong scale is rejected."""
    s = SeededSampler(1)
    stat, df = _chi2_stat(s.discrete_gaussian(3.0, N_SEEDED), *_gaussian_pmf(3.15))
    assert stat > chi2.isf(ALPHA, df)
    stat, df = _chi2_stat(s.discrete_laplace(5.0, N_SEEDED), *_laplace_pmf(5.5))
    assert stat > chi2.isf(ALPHA, df)
    with pytest.raises(AssertionError):  # the full check, used by the tests above
        _assert_fits(s.discrete_gaussian(40.0, N_SEEDED), *_gaussian_pmf(42.0))


def test_seeded_noise_with_big_integer_parameters():
    """A sigma with a 52-bit denominator (as from calibration) takes the big-integer path."""
    sigma = 23.570226039551585  # 1 / sqrt(2 * 0.0009)
    draws = SeededSampler(5).discrete_gaussian(sigma, N_SEEDED)
    _assert_fits(draws, *_gaussian_pmf(sigma))
    tiny = SeededSampler(5)
    assert not tiny.discrete_gaussian(1e-300, 50).any()
    assert not tiny.discrete_laplace(1e-300, 50).any()


# -------------------------------------------------------------- exact building blocks


@pytest.mark.parametrize(
    "gamma",
    [
        Fraction(0),
        Fraction(1, 3),
        Fraction(1),
        Fraction(7, 5),
        Fraction(5, 2),
        Fraction(4),
        Fraction(2**70 + 3, 2**69),  # numerator and denominator beyond int64
    ],
)
def test_bernoulli_exp_neg_matches(gamma):
    n = 100_000
    g = Fraction(gamma)
    num = np.full(n, g.numerator, dtype=np.int64 if g.numerator < 2**63 else object)
    hits = int(SeededSampler(3)._bern_exp_neg(num, g.denominator).sum())
    p = math.exp(-float(gamma))
    if gamma == 0:
        assert hits == n
    else:
        assert _freq_ok(hits, n, p), (hits / n, p)


def test_exp_neg_digits_match_decimal():
    table = _exp_neg_table()
    with localcontext() as ctx:
        ctx.prec = 120
        for v in range(1, 65):
            e = Decimal(-v).exp()
            for bits in (64, 128, 192):
                assert _exp_neg_floor(v, bits) == int(e * Decimal(2) ** bits)
            assert int(table[v]) == int(e * Decimal(2) ** 64)


def test_tie_below_exp_neg_reads_more_digits():
    """First word equal to floor(e^-1 2^64): P(U < e^-1 | tie) = frac(e^-1 2^64)."""
    n = 20_000
    s = _ForcedFirst(8, int(_exp_neg_table()[1]))
    hits = int(s._below_exp_neg(np.ones(n, dtype=np.int64)).sum())
    assert _freq_ok(hits, n, _frac_exp_neg_2_64(1))


def test_tie_geometric_reads_more_digits():
    n = 20_000
    # U in [T_2, T_2 + 1) / 2^64: V >= 1 surely, V >= 2 with probability frac(e^-2 2^64).
    v = _ForcedFirst(9, int(_exp_neg_table()[2]))._geometric(n)
    assert set(np.unique(v)) <= {1, 2}
    assert _freq_ok(int((v == 2).sum()), n, _frac_exp_neg_2_64(2))
    # U < 2^-64: V >= 44 surely (e^-44 2^64 > 1), V >= 45 with probability e^-45 2^64.
    v = _ForcedFirst(10, 0)._geometric(n)
    assert v.min() >= 44
    assert _freq_ok(int((v >= 45).sum()), n, math.exp(-45) * 2.0**64)


def test_tie_rational_bernoulli_reads_more_digits():
    n = 20_000
    # 1/3 with a denominator beyond int64: tie word floor(2^64 / 3) leaves P = frac(2^64/3).
    s = _ForcedFirst(11, 2**64 // 3)
    hits = int(s._bern_ratio(np.full(n, 2**70, dtype=object), 3 * 2**70).sum())
    assert _freq_ok(hits, n, 1 / 3)
    # 1/2 is dyadic: after the tie word 2^63, U >= 1/2 for sure.
    s = _ForcedFirst(12, 2**63)
    assert not s._bern_ratio(np.full(50, 2**63, dtype=object), 2**64).any()


# ------------------------------------------------------------------- uniform primitives


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("high", [1, 3, 7, 2**40])
def test_integers_uniform(kind, high, secure):
    n = 60_000
    x = _sampler(kind, secure).integers(high, n)
    assert x.dtype == np.int64 and x.shape == (n,)
    assert x.min() >= 0 and x.max() < high
    if high == 1:
        assert not x.any()
        return
    # Bins: each value for small high; the top 6 bits for 2**40 (64 equal bins).
    bins = x if high < 64 else x >> 34
    k = min(high, 64)
    observed = np.bincount(bins, minlength=k)
    stat = float(((observed - n / k) ** 2 / (n / k)).sum())
    assert stat < chi2.isf(ALPHA, k - 1)


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_integers_full_int64_range(kind, secure):
    x = _sampler(kind, secure).integers(2**63, 1000)
    assert x.dtype == np.int64 and x.min() >= 0
    assert x.max() > 2**62  # fails with probability 2^-1000


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_bernoulli_frequency_and_extremes(kind, secure):
    s = _sampler(kind, secure)
    n = 100_000
    assert not s.bernoulli(0.0, n).any()
    assert s.bernoulli(1.0, n).all()
    b = s.bernoulli(0.3, n)
    assert b.dtype == bool
    assert _freq_ok(int(b.sum()), n, math.floor(0.3 * 2**53) / 2**53)


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_bernoulli_exact_threshold(kind, secure, monkeypatch):
    """P(True) = floor(p 2^53) / 2^53: True iff the top 53 bits of the word are below it."""
    s = SeededSampler(0) if kind == "seeded" else SecureSampler()
    m = math.floor(0.3 * 2**53)
    for word, expected in [((m - 1) << 11, True), ((m << 11) - 1, True), (m << 11, False)]:
        monkeypatch.setattr(s, "_words", lambda n, w=word: np.full(n, w, dtype=np.uint64))
        assert s.bernoulli(0.3, 4).tolist() == [expected] * 4
    monkeypatch.setattr(s, "_words", lambda n: np.zeros(n, dtype=np.uint64))
    assert s.bernoulli(2.0**-53, 3).all()  # floor = 1: only the all-zero prefix is True
    assert not s.bernoulli(2.0**-54, 3).any()  # floor = 0: never more than p


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_random_in_unit_interval(kind, secure, monkeypatch):
    s = _sampler(kind, secure)
    n = 100_000
    u = s.random(n)
    assert u.dtype == np.float64 and u.min() >= 0.0 and u.max() < 1.0
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))  # on the 2^-53 grid
    assert abs(u.mean() - 0.5) <= Z * math.sqrt(1 / 12 / n)
    s2 = SeededSampler(0)
    monkeypatch.setattr(s2, "_words", lambda n: np.full(n, 2**64 - 1, dtype=np.uint64))
    assert s2.random(2).tolist() == [1.0 - 2.0**-53] * 2


# ------------------------------------------------------------ reproducibility and types


def _all_draws(s: NoiseSampler) -> list[np.ndarray]:
    return [
        s.discrete_laplace(2.5, 200),
        s.discrete_gaussian(30.3, 200),
        s.integers(10, 200),
        s.bernoulli(0.4, 200),
        s.random(200),
    ]


def test_seeded_is_reproducible_and_seed_dependent():
    a, b = _all_draws(SeededSampler(42)), _all_draws(SeededSampler(42))
    c = _all_draws(SeededSampler(43))
    g = _all_draws(SeededSampler(np.random.default_rng(42)))
    for x, y, z, w in zip(a, b, c, g, strict=True):
        assert np.array_equal(x, y) and np.array_equal(x, w)
        assert not np.array_equal(x, z)


def test_secure_draws_differ_between_instances():
    a, b = _all_draws(SecureSampler()), _all_draws(SecureSampler())
    for x, y in zip(a, b, strict=True):
        assert not np.array_equal(x, y)


def test_noise_sampler_factory():
    assert isinstance(noise_sampler(None), SecureSampler)
    assert noise_sampler(None).seeded is False
    assert isinstance(noise_sampler(3), SeededSampler) and noise_sampler(3).seeded is True
    assert isinstance(noise_sampler(np.random.default_rng(3)), SeededSampler)


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("size", [0, (0,), (3, 0), (2, 3), ()])
def test_shapes_including_empty(kind, size, secure):
    s = _sampler(kind, secure)
    shape = (size,) if isinstance(size, int) else size
    for arr, dtype in [
        (s.discrete_laplace(1.5, size), np.int64),
        (s.discrete_gaussian(1.5, size), np.int64),
        (s.integers(5, size), np.int64),
        (s.bernoulli(0.5, size), np.bool_),
        (s.random(size), np.float64),
    ]:
        assert arr.shape == shape and arr.dtype == dtype


# ------------------------------------------------------------------------- validation

BAD_SCALES = [0, -1.0, float("nan"), float("inf"), 2.0**41, "a", None, True]


@pytest.mark.parametrize("kind", ["seeded", "secure"])
@pytest.mark.parametrize("bad", BAD_SCALES)
def test_bad_noise_parameters_raise(kind, bad, secure):
    s = _sampler(kind, secure)
    with pytest.raises(PrivacyBudgetError, match="scale"):
        s.discrete_laplace(bad, 3)
    with pytest.raises(PrivacyBudgetError, match="sigma"):
        s.discrete_gaussian(bad, 3)


@pytest.mark.parametrize("kind", ["seeded", "secure"])
def test_bad_other_arguments_raise(kind, secure):
    s = _sampler(kind, secure)
    for size in [-1, 2.5, (3, -1), "3", None, True]:
        with pytest.raises(ConfigError, match="size"):
            s.discrete_laplace(1.0, size)
        with pytest.raises(ConfigError, match="size"):
            s.random(size)
    for high in [0, -3, 2**63 + 1, 2.0, True, None]:
        with pytest.raises(ConfigError, match="high"):
            s.integers(high, 3)
    for p in [-0.1, 1.1, float("nan"), "x", None, True]:
        with pytest.raises(ConfigError, match="p must be"):
            s.bernoulli(p, 3)


@pytest.mark.parametrize("seed", [-1, 1.5, "x", True])
def test_bad_seed_raises(seed):
    with pytest.raises(ConfigError, match="seed"):
        SeededSampler(seed)
    with pytest.raises(ConfigError, match="seed"):
        noise_sampler(seed)
