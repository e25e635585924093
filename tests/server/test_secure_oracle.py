"""The secure server's oracle (:mod:`vertimrf.server.secure.oracle`): where the protocol's
caps do not bind, the engine chooses with it exactly what it chooses with the local oracle
on the same first release; where they bind, it measures parts that fit."""

from __future__ import annotations

import numpy as np

from tests.secure_runs import split
from vertimrf.encoding import TableEncoder
from vertimrf.mrf.cliques import histogram
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import randomness
from vertimrf.server.secure import SecureServer
from vertimrf.server.secure.selection import engine_plan, oracle
from vertimrf.synth.engine.local import LocalOracle
from vertimrf.synth.engine.select import choose
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.privmrf.noise import FitNoise

SIZES = [[3, 4, 5], [6, 2, 3]]


def _correlated(n: int, seed: int) -> tuple[object, np.ndarray]:
    """The config of a two-party split and codes in which every column follows one latent."""
    cfg, spec, frame, _ = split(SIZES, n, seed, epsilon=2.0)
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 12, n)
    for j, (name, u) in enumerate(zip(spec.names, spec.domain.sizes, strict=True)):
        keep = rng.random(n) < 0.8
        frame[name] = np.where(keep, (latent + j) % u, frame[name])
    return cfg, TableEncoder(spec).table(frame).codes


def test_where_the_caps_do_not_bind_both_oracles_choose_the_same():
    cfg, codes = _correlated(4000, 0)
    server = SecureServer(cfg, seed=0)
    plan = engine_plan(server.session)
    rng = np.random.default_rng(1)
    sigma = plan.sigma_select
    pairs = server.plan.all_pairs()
    sizes = cfg.spec.domain.sizes
    noisy = {m: histogram(codes, m, sizes).ravel() for m in pairs}
    first = Tables(
        {m: v + rng.normal(0, sigma, v.size) for m, v in noisy.items()},
        dict.fromkeys(pairs, sigma),
    )
    secure = choose(first, 4000.0, plan, oracle(server.session), np.random.default_rng(2))
    ledger = PrivacyLedger()
    local_oracle = LocalOracle(codes, cfg.spec.domain, FitNoise(ledger, randomness(0)[0], None))
    local = choose(first, 4000.0, plan, local_oracle, np.random.default_rng(2))
    assert secure.marginals == local.marginals and secure.tree.cliques == local.tree.cliques
    owner = server.plan.owner
    assert any(len(m) > 2 and len({owner[a] for a in m}) == 2 for m in secure.marginals)
    assert ledger.total_rho == 0.0  # choosing measures nothing


def test_one_engine_one_set_of_model_caps():
    """Method secure's server plans its model under the caps the local engine uses by
    default: the same ceilings and the same growth per unit of precision."""
    from vertimrf.synth.privmrf import EngineOptions

    cfg, _ = _correlated(400, 0)
    plan = engine_plan(SecureServer(cfg, seed=0).session)
    engine = EngineOptions()
    assert (
        plan.cells_per_precision,
        plan.options.max_clique_cells,
        plan.options.max_total_cells,
    ) == (engine.cells_per_precision, engine.max_clique_cells, engine.max_total_cells)


def test_a_config_made_before_the_engines_caps_plans_as_it_did():
    """A config of vertimrf 0.1.0 holds the former ceilings (2e5, 1e6): its server grows the
    model by 2,750 cells per unit of precision, as it did when the config was made."""
    from pathlib import Path

    from vertimrf.protocol import load_config

    cfg = load_config(Path(__file__).parents[1] / "protocol" / "data" / "config_v0_secure.json")
    plan = engine_plan(SecureServer(cfg, seed=0).session)
    assert (plan.options.max_clique_cells, plan.options.max_total_cells) == (2e5, 1e6)
    assert plan.cells_per_precision == 2750.0
