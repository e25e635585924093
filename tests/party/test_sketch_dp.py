"""The DP step of the FM sketch and LocEnc's shard/merge contract."""

import math

import numpy as np
import pytest

from vertimrf.domain import Domain, EncodedTable
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.party.keys import HashKeys
from vertimrf.party.locenc import locenc, sketch_from_registers
from vertimrf.party.phantoms import privatize, sample_max_geometric
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.registers import compute_registers, merge_registers
from vertimrf.privacy import PrivacyLedger
from vertimrf.privacy.fm import fm_noise


@pytest.mark.parametrize(
    ("eps", "k_p", "alpha_min"),
    # Worked values of the analysis (section 4.4): eps' = 1.77e-4 -> 5651, 13 (its eps' was
    # rounded: 1/(e^1.77e-4 - 1) = 5649.2 gives 5650) and 7.08e-4 -> 1413 (1412 here), 11.
    [(1.77e-4, 5650, 13), (7.08e-4, 1412, 11), (1.06e-4, 9434, 14)],
)
def test_fm_noise_follows_the_lemma(eps, k_p, alpha_min):
    noise = fm_noise(eps, 1.0)
    assert noise.k_p == math.ceil(1 / math.expm1(eps)) == k_p
    assert noise.alpha_min == math.ceil(math.log2(1 / (1 - math.exp(-eps)))) == alpha_min


def test_fm_noise_general_gamma_and_errors():
    noise = fm_noise(0.01, 0.5)
    assert noise.alpha_min == math.ceil(math.log(1 / (1 - math.exp(-0.01))) / math.log(1.5))
    with pytest.raises(ConfigError):
        fm_noise(0.01, 1.5)
    with pytest.raises(PrivacyBudgetError):
        fm_noise(1e-80, 1.0)


@pytest.mark.parametrize(("k", "gamma"), [(1, 1.0), (7, 1.0), (1000, 1.0), (40, 0.5)])
def test_phantom_max_matches_exact_cdf(k, gamma):
    """Inverse-CDF draws against P(max <= j) = (1 - q^j)^k: every CDF point within 5 binomial
    standard errors over 200,000 draws."""
    rng = np.random.default_rng(k)
    m = 200_000
    draws = sample_max_geometric(k, gamma, m, rng)
    q = 1 / (1 + gamma)
    for j in range(1, 40):
        p = (1 - q**j) ** k
        emp = np.mean(draws <= j)
        assert abs(emp - p) <= 5 * math.sqrt(p * (1 - p) / m) + 1e-12


def test_phantom_max_matches_brute_force_draws():
    """Same law as the max of k numpy geometric draws (two-sample check on the means)."""
    rng = np.random.default_rng(1)
    ours = sample_max_geometric(5, 1.0, 100_000, rng).astype(float)
    brute = rng.geometric(0.5, (100_000, 5)).max(axis=1).astype(float)
    se = math.sqrt(ours.var() / 1e5 + brute.var() / 1e5)
    assert abs(ours.mean() - brute.mean()) < 5 * se


def test_privatize_applies_phantoms_and_floor():
    rng = np.random.default_rng(0)
    noise = fm_noise(0.001, 1.0)
    vals = rng.integers(0, 30, (50, 20)).astype(np.uint8)
    out = privatize(vals, noise, rng)
    assert out.dtype == np.uint8
    assert (out >= vals).all() and (out >= noise.alpha_min).all()


def test_sharded_encoding_equals_one_pass_and_noise_is_applied_once():
    rng = np.random.default_rng(3)
    dom = Domain.from_sizes([4, 3, 2])
    n, t = 3000, 96
    codes = np.column_stack([rng.integers(0, u, n) for u in dom.sizes]).astype(np.uint8)
    fps = record_fingerprints(np.arange(n))
    keys = HashKeys.from_secret(bytes(range(32)), t)
    shards = [slice(0, 1000), slice(1000, 1700), slice(1700, n)]
    merged = merge_registers(*[compute_registers(codes[s], dom, fps[s], keys) for s in shards])
    led_one, led_shard = PrivacyLedger(), PrivacyLedger()
    one = locenc(
        EncodedTable(codes, dom),
        fps,
        keys,
        eps_prime=0.01,
        rng=np.random.default_rng(9),
        ledger=led_one,
    )
    sharded = sketch_from_registers(
        merged,
        dom,
        keys.fingerprint(),
        eps_prime=0.01,
        rng=np.random.default_rng(9),
        ledger=led_shard,
    )
    np.testing.assert_array_equal(one.values, sharded.values)
    assert one.values.dtype == np.uint8 and one.values.shape == (t, 9)
    for led in (led_one, led_shard):
        assert len(led.releases) == 1 and led.releases[0].count == t * 3
        assert led.total_rho == pytest.approx(t * 3 * 0.01**2 / 2)
