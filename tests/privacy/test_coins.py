"""The coins' accounting (``vertimrf.privacy.coins``): exact coin counts and variances, the
cost against a brute-force Rényi curve, against an independent privacy-loss-distribution
computation (Google's dp-accounting), and against a Gaussian of the same variance."""

import functools
import math
from fractions import Fraction

import numpy as np
import pytest
from dp_accounting.pld import privacy_loss_distribution as pld
from scipy.special import logsumexp

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy import PrivacyLedger, rho_to_epsilon
from vertimrf.privacy.coins import CoinNoise, cell_cost, coin_release

DELTA = 1e-6
FAILURE = 1e-12  # charged to delta per cell


def test_the_coins_carry_their_weight_of_the_variance():
    full, half = CoinNoise.for_sigma(44, 1.0), CoinNoise.for_sigma(44, 0.5)
    assert (full.coins, full.split) == (7744, 0.0)
    assert full.viewer_variance == full.release_variance == 44**2
    assert (half.coins, half.split) == (3872, 484.0)
    assert half.viewer_variance == 44**2
    assert half.release_variance == 1.25 * 44**2  # (1.5 - w / 2) sigma^2 at w = 1/2
    assert CoinNoise.for_sigma(0.5, 1.0).coins == 2  # 4 sigma^2 = 1, rounded up to even


@pytest.mark.parametrize(
    ("call", "args"),
    [
        (CoinNoise, (3, 0.0)),  # odd
        (CoinNoise, (0, 0.0)),  # no noise
        (CoinNoise, (-2, 1.0)),
        (CoinNoise.for_sigma, (10, 0.0)),
        (CoinNoise.for_sigma, (10, 1.5)),
        (CoinNoise.for_sigma, (0, 1.0)),
        (cell_cost, (CoinNoise(100, 0.0), 0.0)),
    ],
)
def test_impossible_coin_noise_is_refused(call, args):
    with pytest.raises(PrivacyBudgetError):
        call(*args)


def _exact_conditioned(coins: int, failure: float) -> tuple[int, list[Fraction], list[Fraction]]:
    """Brute force, in exact fractions: the least m with P(Z outside [-m + 1, m]) <=
    ``failure`` for Z the centred Bin(coins, 1/2), and the two conditioned laws on that set
    (Z's and Z + 1's)."""
    half = coins // 2
    pmf = {v: Fraction(math.comb(coins, v + half), 2**coins) for v in range(-half, half + 1)}
    for m in range(1, half + 1):
        outside = 1 - sum(pmf[v] for v in range(-m + 1, m + 1))
        if outside <= failure:
            break
    support = range(-m + 1, m + 1)
    p = [pmf[v] for v in support]
    q = [pmf[v - 1] for v in support]
    return m, [x / sum(p) for x in p], [x / sum(q) for x in q]


def _log_fraction(x: Fraction) -> float:
    return math.log(x.numerator) - math.log(x.denominator)


def _exact_renyi(p: list[Fraction], q: list[Fraction], alpha: int) -> float:
    total = sum(a**alpha / b ** (alpha - 1) for a, b in zip(p, q, strict=True))
    return _log_fraction(total) / (alpha - 1)


@pytest.mark.parametrize("coins", [16, 40])
def test_the_cost_bounds_the_exact_renyi_curve_of_small_coin_counts(coins):
    """Every integer order's exact D_alpha / alpha is at most rho, and rho is within 0.1% of
    the largest of them and of a dense float grid of orders (the bound is tight)."""
    failure = 1e-4
    cost = cell_cost(CoinNoise(coins, 0.0), failure)
    _, p, q = _exact_conditioned(coins, failure)
    exact = [_exact_renyi(p, q, a) / a for a in range(2, 80)]
    assert max(exact) <= cost.rho
    log_p = np.log([float(x) for x in p])
    ratio = log_p - np.log([float(x) for x in q])
    dense = [
        logsumexp(log_p + (a - 1) * ratio) / (a - 1) / a for a in 1 + np.geomspace(1e-3, 1e4, 5_000)
    ]
    assert cost.rho <= max(max(dense), max(exact)) * 1.001


@pytest.mark.parametrize("coins", [16, 40, 400])
def test_the_failure_charged_is_the_exact_mass_outside_the_least_set(coins):
    failure = 1e-4
    m, _, _ = _exact_conditioned(coins, failure)
    half = coins // 2
    outside = sum(math.comb(coins, k) for k in range(coins + 1) if not -m < k - half <= m)
    assert cell_cost(CoinNoise(coins, 0.0), failure).failure == pytest.approx(
        outside / 2**coins, rel=1e-9
    )


@functools.lru_cache
def _viewer_pmf_reference(noise: CoinNoise) -> dict[int, float]:
    """The noise a viewer faces, in plain Python: the centred coins' pmf from binomial
    coefficients, convolved twice with a discrete Gaussian's pmf cut at 40 standard
    deviations (mass beyond: far below double precision)."""
    half = noise.coins // 2
    out = {v: math.comb(noise.coins, v + half) / 2**noise.coins for v in range(-half, half + 1)}
    if noise.split:
        cut = int(40 * math.sqrt(noise.split)) + 1
        weights = {k: math.exp(-k * k / (2 * noise.split)) for k in range(-cut, cut + 1)}
        total = math.fsum(weights.values())
        for _ in range(2):
            conv: dict[int, float] = {}
            for v, pv in out.items():
                for k, wk in weights.items():
                    conv[v + k] = conv.get(v + k, 0.0) + pv * wk / total
            out = conv
    return out


# (sigma, weight, marginals in the batch): sigma from the secure method's usual range.
SETTINGS = [(20, 1.0, 10), (44, 1.0, 100), (30, 0.5, 50)]


@pytest.mark.parametrize(("sigma", "weight", "count"), SETTINGS)
def test_the_ledgers_epsilon_bounds_an_independent_privacy_loss_distribution(sigma, weight, count):
    """The ledger's epsilon for a batch of marginals with coins is a true bound: at least
    dp-accounting's pessimistic PLD of the same noise (the unconditioned law, its edges
    included), composed over the batch; and at most 10% above it, the zCDP conversion's
    slack for a Gaussian (7-8% at these settings)."""
    noise = CoinNoise.for_sigma(sigma, weight)
    pmf = _viewer_pmf_reference(noise)
    lower = {v: math.log(x) for v, x in pmf.items() if x > 1e-300}
    upper = {v + 1: x for v, x in lower.items()}
    loss = pld.from_two_probability_mass_functions(lower, upper).self_compose(count)
    ledger = PrivacyLedger()
    ledger.charge(coin_release("cross marginals", noise, FAILURE, count=count))
    assert loss.get_epsilon_for_delta(DELTA) <= ledger.total_epsilon(DELTA)
    assert ledger.total_epsilon(DELTA) <= 1.10 * loss.get_epsilon_for_delta(DELTA)


@pytest.mark.parametrize(("sigma", "weight", "count"), SETTINGS)
def test_the_ledgers_epsilon_is_a_gaussians_of_the_same_variance_within_one_percent(
    sigma, weight, count
):
    """Against the discrete Gaussian charge at sigma (rho = count / 2 sigma^2), the ledger's
    epsilon for coins at the same viewer variance is within 1%: the coins cost what the
    noise they replace costs (the Rényi curves agree to 0.01-0.7% at these sigmas)."""
    ledger = PrivacyLedger()
    ledger.charge(coin_release("x", CoinNoise.for_sigma(sigma, weight), FAILURE, count=count))
    gaussian = rho_to_epsilon(count / (2.0 * sigma**2), DELTA)
    assert gaussian <= ledger.total_epsilon(DELTA) <= 1.01 * gaussian


@pytest.mark.parametrize(("sigma", "weight", "count"), SETTINGS)
def test_the_ledgers_epsilon_matches_an_independent_renyi_computation_within_one_percent(
    sigma, weight, count
):
    """The viewer's law in plain Python, conditioned on the set the failure allows: rho
    bounds its D_alpha / alpha at orders 1.01 to 1000 within 0.5%, and the ledger's epsilon
    is within 1% of the one converted (the same CKS formula) from this curve itself."""
    noise = CoinNoise.for_sigma(sigma, weight)
    cost = cell_cost(noise, FAILURE)
    pmf = _viewer_pmf_reference(noise)
    m = 1
    while pmf.get(m, 0.0) + 2 * math.fsum(x for v, x in pmf.items() if v > m) > FAILURE:
        m += 1  # outside [-m + 1, m]: P(Z >= m) + P(Z >= m + 1), by symmetry
    support = range(-m + 1, m + 1)
    p = np.array([pmf[v] for v in support])
    q = np.array([pmf[v - 1] for v in support])
    p, q = p / p.sum(), q / q.sum()
    orders = np.geomspace(1.01, 1000, 400)
    renyi = [math.log(math.fsum(p * (p / q) ** (a - 1))) / (a - 1) for a in orders]
    assert max(d / a for d, a in zip(renyi, orders, strict=True)) <= cost.rho
    assert cost.rho <= 1.005 * max(d / a for d, a in zip(renyi, orders, strict=True))
    assert cost.failure <= FAILURE
    left = DELTA - count * cost.failure
    independent = min(
        count * d + (math.log(1 / left) + (a - 1) * math.log1p(-1 / a) - math.log(a)) / (a - 1)
        for d, a in zip(renyi, orders, strict=True)
    )
    ledger = PrivacyLedger()
    ledger.charge(coin_release("x", noise, FAILURE, count=count))
    assert ledger.total_epsilon(DELTA) == pytest.approx(independent, rel=0.01)


def test_a_coin_release_is_charged_with_its_failure_probability():
    noise = CoinNoise.for_sigma(44, 0.5)
    release = coin_release("cross marginals", noise, FAILURE, count=7, party="A")
    cost = cell_cost(noise, FAILURE)
    assert release.rho == pytest.approx(7 * cost.rho, rel=1e-12)
    assert release.params["failure_delta"] == pytest.approx(7 * cost.failure, rel=1e-12)
    assert release.params["viewer_variance"] == 44**2
    ledger = PrivacyLedger()
    ledger.charge(release)
    assert ledger.failure_delta == release.params["failure_delta"]
    with pytest.raises(PrivacyBudgetError):
        coin_release("x", noise, FAILURE, count=0)
