"""The engine with the local oracle (``PrivMRF(..., selection="engine")``): it spends
exactly its budget, charges every release before drawing it, measures exact counts, and its
seeded runs repeat."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.synth.engine.latent_table import assert_exact, latent_table
from vertimrf import PrivMRF
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler, randomness
from vertimrf.privacy.split import NOISY_FIRST, first_share
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.options import AUTO_COUNT_SHARE, DEFAULTS
from vertimrf.synth.engine.local import LocalOracle
from vertimrf.synth.engine.plan import cells_per_precision
from vertimrf.synth.engine.run import fit_local
from vertimrf.synth.privmrf import EngineOptions, PrivMRFOptions
from vertimrf.synth.privmrf.noise import FitNoise


class _Watched(NoiseSampler):
    """A seeded sampler that records, at every draw, the ledger's releases so far; with
    ``zero`` every discrete Gaussian draw is 0 (noise off)."""

    def __init__(self, ledger: PrivacyLedger, *, zero: bool = False) -> None:
        self.inner, _ = randomness(0)
        self.ledger, self.zero = ledger, zero
        self.seen: list[int] = []

    def _words(self, n: int) -> np.ndarray:
        return self.inner._words(n)

    def _discrete_laplace(self, scale: float, n: int) -> np.ndarray:
        raise AssertionError("the engine draws no Laplace noise")

    def _discrete_gaussian(self, sigma: float, n: int) -> np.ndarray:
        self.seen.append(len(self.ledger.releases))
        return np.zeros(n, np.int64) if self.zero else self.inner._discrete_gaussian(sigma, n)


def _fit(
    df: pd.DataFrame, spec: DomainSpec, epsilon: float, *, zero: bool = False
) -> tuple[PrivMRF, _Watched]:
    ledger = PrivacyLedger(epsilon, 1e-6)
    sampler = _Watched(ledger, zero=zero)
    fit = PrivMRF(epsilon, 1e-6, noise=sampler, ledger=ledger, selection="engine", seed=0)
    return fit.fit(df, spec), sampler


@pytest.mark.parametrize("epsilon, select", [(0.3, 0.2), (2.0, 0.5), (40.0, 0.5)])
def test_the_engine_spends_exactly_its_budget_and_charges_before_it_draws(epsilon, select):
    df, spec = latent_table()
    fit, sampler = _fit(df, spec, epsilon, zero=False)
    rho = epsilon_to_rho(epsilon, 1e-6)
    assert math.isclose(fit.ledger.total_rho, rho, rel_tol=1e-9)
    assert fit.ledger.total_rho <= rho * (1 + 1e-12)
    assert math.isclose(fit.report.rho, rho, rel_tol=1e-9)
    shares = [r.rho / rho for r in fit.ledger.releases]
    # the adaptive split: at epsilon 0.3 the first release's pairs would be mostly noise
    assert shares == pytest.approx([0.001, select, 0.999 - select], rel=1e-9)
    # the count after its charge; the first release's draws after its charge; then the
    # re-measurement's: each release is on the ledger before any of its noise is drawn
    first = len(list(spec.names)) * (len(spec.names) - 1) // 2
    assert sampler.seen[0] == 1 and sampler.seen[1 : 1 + first] == [2] * first
    assert set(sampler.seen[1 + first :]) == {3}


def test_a_ledger_with_less_than_the_budget_refuses_the_fit_before_any_draw():
    df, spec = latent_table()
    rho = epsilon_to_rho(1.0, 1e-6)
    ledger = PrivacyLedger(rho=rho * (1 - 1e-6), delta=1e-6)
    sampler = _Watched(ledger)
    with pytest.raises(PrivacyBudgetError):
        PrivMRF(1.0, 1e-6, noise=sampler, ledger=ledger, selection="engine").fit(df, spec)
    assert sampler.seen == [] and ledger.total_rho == 0.0


def test_with_noise_off_the_local_oracle_measures_exact_counts():
    """Brute force: every cell of every measured marginal counted row by row."""
    df, spec = latent_table(rows=300)
    fit, _ = _fit(df, spec, 1.0, zero=True)
    assert_exact(df, fit.measurements)
    assert fit.n_hat == pytest.approx(300.0, rel=1e-12)  # every sum exact, the mean rounds


def test_the_oracle_alone_counts_and_charges_one_release_per_call():
    df, spec = latent_table(rows=200)
    ledger = PrivacyLedger()
    noise = FitNoise(ledger, _Watched(ledger, zero=True), None)
    oracle = LocalOracle(df.to_numpy(), spec.domain, noise)
    tables = oracle.measure([(0, 2), (1, 3, 4)], 3.0, "test")
    assert len(ledger.releases) == 1 and ledger.total_rho == pytest.approx(2 / (2 * 9.0))
    want = pd.crosstab(df["c0"], df["c2"]).to_numpy().ravel()
    np.testing.assert_array_equal(tables.values[(0, 2)], want)
    assert tables.values[(1, 3, 4)].sum() == 200 and tables.scale == {(0, 2): 3.0, (1, 3, 4): 3.0}
    assert oracle.all_pairs()[:3] == [(0, 1), (0, 2), (0, 3)] and oracle.canonical((4, 1)) == (1, 4)


def test_seeded_engine_runs_repeat_and_the_engine_is_the_default():
    df, spec = latent_table()
    a = PrivMRF(1.0, 1e-6, seed=3, selection="engine").fit(df, spec).sample(seed=1)
    b = PrivMRF(1.0, 1e-6, seed=3, selection="engine").fit(df, spec).sample(seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert PrivMRF(1.0, 1e-6).selection == "engine"  # the default


def test_the_engine_defaults_and_refusals():
    e = EngineOptions()
    assert (e.count, e.select, e.measure) == (0.001, None, None)
    # method secure's "auto" shares: the same count share, the same adaptive split
    assert DEFAULTS["secure_shares"] == "auto" and e.count == AUTO_COUNT_SHARE
    assert (e.refine_fraction, e.iters) == (
        DEFAULTS["secure_refine_fraction"],
        DEFAULTS["secure_iters"],
    )
    with pytest.raises(ConfigError, match="sum to 1"):
        EngineOptions(select=0.5, measure=0.4)
    with pytest.raises(ConfigError, match="both, or neither"):
        EngineOptions(measure=0.4)
    with pytest.raises(ConfigError, match="below 0.5"):
        EngineOptions(count=0.5)
    with pytest.raises(ConfigError, match="selection must be one of"):
        PrivMRF(1.0, 1e-6, selection="nope")
    with pytest.raises(ConfigError, match="noisy_count"):
        PrivMRF(1.0, 1e-6, selection="engine", noisy_count=100.0)
    with pytest.raises(ConfigError, match="selection='engine' only"):
        PrivMRF(1.0, 1e-6, selection="privmrf", engine=EngineOptions())
    # the model caps: method secure's (one engine), its growth per unit of precision the
    # rule of its ceiling (2,750 under 1e6 as measured, benchmarks/results/engine_caps.md)
    assert (
        (e.cells_per_precision, e.max_clique_cells, e.max_total_cells)
        == (
            cells_per_precision(DEFAULTS["secure_max_total_cells"]),
            DEFAULTS["secure_max_clique_cells"],
            DEFAULTS["secure_max_total_cells"],
        )
        == (11000.0, 8e5, 4e6)
    )
    assert cells_per_precision(1e6) == 2750.0
    for bad in (0.0, -1.0, math.inf, math.nan, True, "1e6"):
        with pytest.raises(ConfigError, match="model caps must be positive"):
            EngineOptions(max_total_cells=bad)
    with pytest.raises(ConfigError, match="EngineOptions' \\(max_total_cells\\)"):
        PrivMRF(1.0, 1e-6, selection="engine", max_total_cells=1e5)


def test_the_engine_searches_under_its_own_caps_not_privmrfs():
    """The model's total cells stay within EngineOptions' cap; PrivMRF's own caps (the
    paper selection's, 1e6 by default) do not bound the engine's model."""
    df, spec = latent_table()
    small = EngineOptions(cells_per_precision=1e9, max_clique_cells=40, max_total_cells=80)
    fit = PrivMRF(4.0, 1e-6, seed=1, selection="engine", engine=small).fit(df, spec)
    assert fit.report.model_size.total_cells <= 80
    big = EngineOptions(cells_per_precision=1e9, max_clique_cells=1e9, max_total_cells=1e9)
    wide = PrivMRF(4.0, 1e-6, seed=1, selection="engine", engine=big).fit(df, spec)
    assert wide.report.model_size.total_cells > 80


def test_fit_local_needs_two_columns():
    ledger = PrivacyLedger()
    noise = FitNoise(ledger, _Watched(ledger), None)
    one = DomainSpec.from_dict({"a": 3}).domain
    with pytest.raises(ConfigError, match="at least 2 columns"):
        fit_local(
            np.zeros((10, 1), np.int64), one, 1.0, EngineOptions(), PrivMRFOptions(), noise,
            np.random.default_rng(0),
        )  # fmt: skip


def test_an_engine_fit_saves_and_loads(tmp_path):
    df, spec = latent_table(rows=500)
    fit = PrivMRF(1.0, 1e-6, seed=2, selection="engine").fit(df, spec)
    back = PrivMRF.load(fit.save(tmp_path / "fit.vmrf"))
    pd.testing.assert_frame_equal(back.sample(100, seed=5), fit.sample(100, seed=5))
    assert back.report.rho == fit.report.rho and back.n_hat == fit.n_hat


def test_the_first_release_gets_half_where_it_is_informative_else_a_fifth():
    """The rule by hand: the mean over pairs of 1/2 cells sigma sqrt(2/pi) / count, with
    sigma the first release's at half of rho, against NOISY_FIRST."""
    sizes, rho = (2, 3, 4), 0.01
    sigma = math.sqrt(3 / (2 * 0.5 * rho))  # 3 pairs, L2 sensitivity 1 each
    noise_per_record = 0.5 * (6 + 8 + 12) * sigma * math.sqrt(2 / math.pi) / 3
    boundary = noise_per_record / NOISY_FIRST  # the count at which the noise is NOISY_FIRST
    assert first_share(sizes, rho, boundary * 1.001) == 0.5
    assert first_share(sizes, rho, boundary * 0.999) == 0.2
    assert first_share(sizes, rho, -5.0) == 0.2  # a noisy count below 1 counts as 1
