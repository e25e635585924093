"""How many extra pairs the engine re-measures (:meth:`EnginePlan.extras`): all of
``refine_fraction * d`` from a first-release precision n_hat / sigma^2 of
FULL_EXTRAS_PRECISION, in proportion below it; the extras kept are the first of the same
order, so a thin table re-measures a prefix of what a precise one would."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.secure_runs import split
from vertimrf.domain import Domain
from vertimrf.encoding import TableEncoder
from vertimrf.mrf.cliques import histogram
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import randomness
from vertimrf.server.secure import SecureServer
from vertimrf.server.secure.selection import engine_plan
from vertimrf.synth.engine import plan as engine
from vertimrf.synth.engine.local import LocalOracle
from vertimrf.synth.engine.plan import EnginePlan
from vertimrf.synth.engine.select import choose
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.options import PrivMRFOptions


def _plan(d: int, refine: float, rho: float) -> EnginePlan:
    domain = Domain(tuple(f"c{i}" for i in range(d)), (3,) * d)
    return EnginePlan(domain, 10.0, rho, refine, 100, PrivMRFOptions(), 1.0)


@pytest.mark.parametrize(
    ("n_hat", "want"),
    [(0.0, 0), (0.41, 3), (1.0, 8), (1.99, 15), (2.0, 16), (4.0, 16), (1e6, 16)],
)
def test_the_count_of_extras_is_exact(n_hat, want):
    # d = 10, refine_fraction 1.6: 16 extras in all; planned = 26 marginals, and rho 13 makes
    # the precision n_hat * 2 * 13 / 26 = n_hat, so the count is int(16 * min(1, n_hat / 2)).
    plan = _plan(10, 1.6, 13.0)
    assert plan.precision(n_hat) == pytest.approx(n_hat, rel=1e-15)
    assert engine.FULL_EXTRAS_PRECISION == 2.0
    assert plan.extras(n_hat) == want


def test_the_benchmark_points_keep_every_extra():
    """The least precise of the measured points (NLTCS at epsilon 0.4: n_hat about 21,600,
    16 columns, rho_measure 0.00218 under method secure's plan) keeps all its extras, and
    Adult at epsilon 0.4 (45,300 records, 15 columns, 0.00349) too: their selections are
    the ones the benchmarks report. Births14 at 3 parties (614, 13, 0.0113) keeps 4 of 20."""
    assert _plan(16, 1.6, 0.0021781305436862197).extras(21602.8) == 25
    assert _plan(15, 1.6, 0.003487627864539658).extras(45293.1) == 24
    assert _plan(13, 1.6, 0.011294719459931733).extras(614.42) == 4


def _choose(first: Tables, n_hat: float, plan: EnginePlan, oracle: LocalOracle) -> list:
    return choose(first, n_hat, plan, oracle, np.random.default_rng(2)).marginals


def test_a_thin_table_re_measures_the_first_extras_of_a_precise_ones_choice(monkeypatch):
    """One first release chosen from three times: with FULL_EXTRAS_PRECISION infinite (no
    extras), near 0 (every extra) and the default. At this table's low precision the
    default keeps the initial set and the first ``plan.extras(n_hat)`` extras, in order."""
    n = 400
    cfg, spec, frame, _ = split([[3, 4, 5], [6, 2, 3]], n, 0, epsilon=1.0)
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 6, n)
    for j, (name, u) in enumerate(zip(spec.names, spec.domain.sizes, strict=True)):
        frame[name] = (latent + j) % u
    codes = TableEncoder(spec).table(frame).codes
    plan = engine_plan(SecureServer(cfg, seed=0).session)
    sizes = cfg.spec.domain.sizes
    pairs = [(a, b) for a in range(len(sizes)) for b in range(a + 1, len(sizes))]
    noisy = {m: histogram(codes, m, sizes).ravel() for m in pairs}
    first = Tables(
        {m: v + rng.normal(0, plan.sigma_select, v.size) for m, v in noisy.items()},
        dict.fromkeys(pairs, plan.sigma_select),
    )
    oracle = LocalOracle(codes, cfg.spec.domain, FitNoise(PrivacyLedger(), randomness(0)[0], None))
    keep = plan.extras(float(n))
    assert 1 <= keep < int(plan.refine_fraction * len(sizes))  # the premise: a thin table
    thin = _choose(first, float(n), plan, oracle)
    monkeypatch.setattr(engine, "FULL_EXTRAS_PRECISION", math.inf)
    none = _choose(first, float(n), plan, oracle)
    monkeypatch.setattr(engine, "FULL_EXTRAS_PRECISION", 1e-12)
    every = _choose(first, float(n), plan, oracle)
    assert len(every) - len(none) > keep  # more extras were eligible than the thin run keeps
    assert every[: len(none)] == none
    assert thin == every[: len(none) + keep]
