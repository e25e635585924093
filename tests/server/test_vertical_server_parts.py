"""Budget split, t='auto', GraphCom and the cross-party estimates."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from tests.helpers import release_all, small_adult
from vertimrf.datasets import load_dataset
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.privacy.zcdp import epsilon_to_rho, pure_to_rho
from vertimrf.protocol import choose_t, from_preset
from vertimrf.protocol.autot import CANDIDATES, predicted_error
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.server.carest import CarEst
from vertimrf.server.estimates import CrossEstimates
from vertimrf.server.graphcom import dependence_score, join_graphs


def _config(**kw):
    df, spec = load_dataset("adult")
    names = list(spec.names)
    return from_preset(
        "default",
        epsilon=1.6,
        delta=1 / len(df),
        spec=spec,
        parties=[names[:8], names[8:]],
        **{"method": "fm", "allow_non_dp": True, **kw},
    )


@pytest.mark.parametrize("kw", [{}, {"local_mrf": False}, {"binned": ()}, {"method": "fo"}])
def test_budget_parts_add_up_to_the_total(kw):
    cfg = _config(**kw)
    b = ProtocolBudget.from_config(cfg)
    d = len(cfg.spec)
    n_binned = len(cfg.binned_columns())
    parts = b.rho_locmrf_party * len(cfg.parties) + b.rho_locenc + b.rho_count + b.rho_binning
    assert parts == pytest.approx(b.rho_total * sum(cfg.options.shares.values()), rel=1e-12)
    assert b.rho_total == pytest.approx(epsilon_to_rho(cfg.epsilon, cfg.delta), rel=1e-12)
    # Each mechanism's parameter costs exactly its share in zCDP.
    if cfg.method == "fm":
        want = cfg.options.t * d * pure_to_rho(b.eps_prime)
        assert want == pytest.approx(b.rho_locenc, rel=1e-12)
    else:
        assert b.eps_prime == 0
    assert d * pure_to_rho(b.grr_epsilon) == pytest.approx(b.rho_locenc, rel=1e-12)
    assert pure_to_rho(b.count_epsilon) == pytest.approx(b.rho_count, rel=1e-12)
    if n_binned:
        assert n_binned * pure_to_rho(b.binning_epsilon) == pytest.approx(b.rho_binning)
    else:
        assert b.rho_binning == 0


def test_auto_t_is_feasible_and_minimises_the_predicted_error():
    cfg = _config()
    n = 45222
    t = choose_t(cfg, n, seconds=10.0, max_sketch_bytes=500_000)
    assert isinstance(t, int) and t in CANDIDATES
    widest = max(
        sum(
            min(c.size, cfg.options.bins) if c.size > cfg.options.bins else c.size
            for c in cfg.spec.columns
            if c.name in p.columns
        )
        for p in cfg.parties
    )
    assert t * widest <= 500_000 and n * t / 2.9e8 <= 10.0
    feasible = [s for s in CANDIDATES if s * widest <= 500_000 and n * s / 2.9e8 <= 10.0]
    errs = {s: predicted_error(cfg, s, n) for s in feasible}
    assert errs[t] == min(errs.values())
    # A tiny time budget forces the smallest candidate; the config's own t does not matter;
    # t="auto" resolves once, at config time, with the public max_rows as the hint.
    assert choose_t(cfg, n, seconds=1e-6) == CANDIDATES[0]
    assert choose_t(_config(t=3000), n) == t
    assert _config(t="auto", max_rows=n).options.t == t
    with pytest.raises(ConfigError):
        choose_t(cfg, float("nan"))


def test_dependence_score_exact_values():
    assert dependence_score(np.outer([1, 3], [2, 2])) == pytest.approx(0.0, abs=1e-15)
    # Perfect dependence of two fair binary attributes: P = diag(1/2), product = 1/4 each.
    assert dependence_score(np.diag([5.0, 5.0])) == pytest.approx(0.5)


def test_join_graphs_respects_tau_and_the_edge_cap():
    dom = Domain.from_sizes([4, 4, 4, 4, 4, 4])
    local = [(0, 1), (2, 3)]
    cross = [(a, b) for a in (0, 1) for b in (2, 3, 4, 5)]
    rng = np.random.default_rng(0)
    tables = {p: rng.random((4, 4)) for p in cross}
    res = join_graphs(
        dom,
        local,
        cross,
        lambda i, j: tables[(i, j)],
        tau=64,
        max_model_cells=10_000,
        edge_fraction=0.5,
    )
    assert len(res.added) <= math.ceil(0.5 * len(cross))
    assert res.size.max_clique_cells <= 64 and nx.is_chordal(res.chordal)
    # Edges are tried in decreasing score: every kept or dropped edge outranks the rest.
    order = sorted(res.scores, key=lambda p: -res.scores[p])
    tried = list(res.added) + list(res.rejected)
    assert sorted(tried, key=order.index) == order[: len(tried)]
    # A dropped edge on its own (with the local edges) already breaks tau = 64 (3 attributes
    # of 4 values make 64 cells, so any dropped edge must close a 4-clique).
    assert all(p not in res.graph.edges for p in res.rejected)
    # Local edges are kept.
    assert all(res.graph.has_edge(*e) for e in local)


def test_fo_estimates_recover_the_truth_at_high_epsilon():
    """With eps = 40 per attribute GRR keeps nearly every value; estimated 2-way counts are
    within 3% of n of the truth (the noisy-count padding is O(1/eps) rows)."""
    df, spec = small_adult(3000, 6)
    parties = [["0", "1", "2"], ["3", "4", "5"]]
    cfg, _, messages = release_all(df, spec, parties, seed=0, method="fo", epsilon=400.0, binned=())
    est = CrossEstimates(messages, cfg, messages[0].noisy_count)
    table = est.target((0, 3))
    truth = np.zeros_like(table)
    np.add.at(truth, (df["0"].to_numpy(), df["3"].to_numpy()), 1)
    assert np.abs(table - truth).max() < 0.03 * len(df)
    assert table.sum() == pytest.approx(messages[0].noisy_count)


def test_carest_results_are_computed_once(monkeypatch):
    df, spec = small_adult(1500, 6)
    cfg, _, messages = release_all(df, spec, [["0", "1", "2"], ["3", "4", "5"]], seed=0)
    est = CrossEstimates(messages, cfg, messages[0].noisy_count)
    calls = []
    original = CarEst._estimate
    monkeypatch.setattr(CarEst, "_estimate", lambda self, a: calls.append(a) or original(self, a))
    first = est.target((0, 3))
    np.testing.assert_array_equal(est.target((0, 3)), first)
    est.binned((0, 3))
    assert calls == [("0", "3")]


def test_privmrf_spends_an_explicit_rho():
    df, spec = small_adult(1500, 4)
    from vertimrf import PrivMRF

    fit = PrivMRF(1.0, 1e-5, rho=0.004, seed=0, progress=False).fit(df, spec)
    assert fit.ledger.total_rho == pytest.approx(0.004, rel=1e-9)
    with pytest.raises(ConfigError):
        PrivMRF(1.0, 1e-5, rho=-1.0)
