"""The engine with the local oracle (``PrivMRF(..., selection="engine")``): it spends
exactly its budget, charges every release before drawing it, measures exact counts, and its
seeded runs repeat."""

from __future__ import annotations

import math
from itertools import product

import numpy as np
import pandas as pd
import pytest

from vertimrf import PrivMRF
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler, randomness
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.options import DEFAULTS
from vertimrf.synth.engine.local import LocalOracle
from vertimrf.synth.engine.run import fit_local
from vertimrf.synth.privmrf import EngineOptions, PrivMRFOptions
from vertimrf.synth.privmrf.noise import FitNoise

SIZES = (2, 3, 4, 2, 5)


def _table(rows: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, DomainSpec]:
    """Correlated columns: each a noisy function of one latent code."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 6, rows)
    cols = {
        f"c{j}": np.where(rng.random(rows) < 0.7, (latent + j) % u, rng.integers(0, u, rows))
        for j, u in enumerate(SIZES)
    }
    return pd.DataFrame(cols), DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(SIZES)})


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


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 40.0])
def test_the_engine_spends_exactly_its_budget_and_charges_before_it_draws(epsilon):
    df, spec = _table()
    fit, sampler = _fit(df, spec, epsilon, zero=False)
    rho = epsilon_to_rho(epsilon, 1e-6)
    assert math.isclose(fit.ledger.total_rho, rho, rel_tol=1e-9)
    assert fit.ledger.total_rho <= rho * (1 + 1e-12)
    assert math.isclose(fit.report().rho, rho, rel_tol=1e-9)
    shares = [r.rho / rho for r in fit.ledger.releases]
    assert shares == pytest.approx([0.001, 0.5, 0.499], rel=1e-9)
    # the count after its charge; the first release's draws after its charge; then the
    # re-measurement's: each release is on the ledger before any of its noise is drawn
    first = len(list(spec.names)) * (len(spec.names) - 1) // 2
    assert sampler.seen[0] == 1 and sampler.seen[1 : 1 + first] == [2] * first
    assert set(sampler.seen[1 + first :]) == {3}


def test_a_ledger_with_less_than_the_budget_refuses_the_fit_before_any_draw():
    df, spec = _table()
    rho = epsilon_to_rho(1.0, 1e-6)
    ledger = PrivacyLedger(rho=rho * (1 - 1e-6), delta=1e-6)
    sampler = _Watched(ledger)
    with pytest.raises(PrivacyBudgetError):
        PrivMRF(1.0, 1e-6, noise=sampler, ledger=ledger, selection="engine").fit(df, spec)
    assert sampler.seen == [] and ledger.total_rho == 0.0


def test_with_noise_off_the_local_oracle_measures_exact_counts():
    """Brute force: every cell of every measured marginal counted row by row."""
    df, spec = _table(rows=300)
    fit, _ = _fit(df, spec, 1.0, zero=True)
    codes = df.to_numpy()
    for m in fit.measurements:
        exact = np.zeros([SIZES[a] for a in m.attrs])
        for cell in product(*(range(SIZES[a]) for a in m.attrs)):
            exact[cell] = np.all(codes[:, list(m.attrs)] == cell, axis=1).sum()
        np.testing.assert_array_equal(m.values.reshape(exact.shape), exact)
    assert fit.n_hat == 300.0  # the count and every table's sum, all exact


def test_the_oracle_alone_counts_and_charges_one_release_per_call():
    df, spec = _table(rows=200)
    ledger = PrivacyLedger()
    noise = FitNoise(ledger, _Watched(ledger, zero=True), None)
    oracle = LocalOracle(df.to_numpy(), spec.domain, noise)
    tables = oracle.measure([(0, 2), (1, 3, 4)], 3.0, "test")
    assert len(ledger.releases) == 1 and ledger.total_rho == pytest.approx(2 / (2 * 9.0))
    want = pd.crosstab(df["c0"], df["c2"]).to_numpy().ravel()
    np.testing.assert_array_equal(tables.values[(0, 2)], want)
    assert tables.values[(1, 3, 4)].sum() == 200 and tables.scale == {(0, 2): 3.0, (1, 3, 4): 3.0}
    assert oracle.all_pairs()[:3] == [(0, 1), (0, 2), (0, 3)] and oracle.canonical((4, 1)) == (1, 4)


def test_seeded_engine_runs_repeat_and_the_default_is_privmrf():
    df, spec = _table()
    a = PrivMRF(1.0, 1e-6, seed=3, selection="engine").fit(df, spec).sample(seed=1)
    b = PrivMRF(1.0, 1e-6, seed=3, selection="engine").fit(df, spec).sample(seed=1)
    pd.testing.assert_frame_equal(a, b)
    assert PrivMRF(1.0, 1e-6).selection == "privmrf"


def test_the_engine_defaults_are_method_secure_s_and_bad_options_are_refused():
    e = EngineOptions()
    assert {"count": e.count, "select": e.select, "measure": e.measure} == DEFAULTS["secure_shares"]
    assert (e.refine_fraction, e.iters) == (
        DEFAULTS["secure_refine_fraction"],
        DEFAULTS["secure_iters"],
    )
    with pytest.raises(ConfigError, match="sum to 1"):
        EngineOptions(measure=0.4)
    with pytest.raises(ConfigError, match="selection must be one of"):
        PrivMRF(1.0, 1e-6, selection="aim")
    with pytest.raises(ConfigError, match="noisy_count"):
        PrivMRF(1.0, 1e-6, selection="engine", noisy_count=100.0)
    with pytest.raises(ConfigError, match="selection='engine' only"):
        PrivMRF(1.0, 1e-6, engine=EngineOptions())


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
    df, spec = _table(rows=500)
    fit = PrivMRF(1.0, 1e-6, seed=2, selection="engine").fit(df, spec)
    back = PrivMRF.load(fit.save(tmp_path / "fit.vmrf"))
    pd.testing.assert_frame_equal(back.sample(100, seed=5), fit.sample(100, seed=5))
    assert back.report().rho == fit.report().rho and back.n_hat == fit.n_hat
