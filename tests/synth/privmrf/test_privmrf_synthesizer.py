"""PrivMRF end to end on small tables: accounting, sensitivities, reference-bug fixes, API."""

import math

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, Domain, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError, PrivacyBudgetError
from vertimrf.metrics import tvd
from vertimrf.privacy import PrivacyLedger, epsilon_to_rho
from vertimrf.privacy.gdp import privmrf_budget
from vertimrf.synth.privmrf import PrivMRF
from vertimrf.synth.privmrf.budget_split import (
    COUNT_SENSITIVITY,
    ERROR_QUERY_SENSITIVITY,
    MARGINAL_SENSITIVITY,
    R_SCORE_SENSITIVITY,
)

DOMAIN = Domain(("a", "b", "c", "d", "e", "f"), (2, 3, 4, 2, 3, 2))
QUIET = {"progress": False, "selection": "privmrf"}  # the paper's PrivMRF


def _table(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Correlated columns: each copies the previous one (folded) with probability 0.6."""
    rng = np.random.default_rng(seed)
    cols = [rng.integers(0, DOMAIN.sizes[0], n)]
    for size in DOMAIN.sizes[1:]:
        copy = rng.random(n) < 0.6
        cols.append(np.where(copy, cols[-1] % size, rng.integers(0, size, n)))
    return pd.DataFrame(dict(zip(DOMAIN.names, cols, strict=True)))


@pytest.fixture(scope="module")
def fitted() -> PrivMRF:
    return PrivMRF(1.0, 1e-5, seed=0, **QUIET).fit(_table(), DOMAIN)


def test_ledger_total_equals_the_budget(fitted: PrivMRF) -> None:
    assert abs(fitted.ledger.total_rho - epsilon_to_rho(1.0, 1e-5)) <= 1e-9 * fitted.rho_budget
    assert abs(fitted.ledger.total_epsilon() - 1.0) <= 1e-9
    rep = fitted.report
    assert rep.rho == pytest.approx(fitted.ledger.total_rho, rel=1e-12)
    assert rep.epsilon_zcdp == pytest.approx(1.0, abs=1e-9)
    assert "privmrf.r_scores" in str(rep)


def test_every_release_uses_the_analysed_sensitivity(fitted: PrivMRF) -> None:
    expected = {
        "privmrf.count": COUNT_SENSITIVITY,
        "privmrf.r_scores": R_SCORE_SENSITIVITY,
        "privmrf.marginals": MARGINAL_SENSITIVITY,
        "privmrf.error_queries": ERROR_QUERY_SENSITIVITY,
    }
    # Analysis: count 1, R-score 2 (count form, derived in scores.py), marginals 1 each,
    # L1 error queries 1 each.
    assert expected == {
        "privmrf.count": 1.0,
        "privmrf.r_scores": 2.0,
        "privmrf.marginals": 1.0,
        "privmrf.error_queries": 1.0,
    }
    releases = fitted.ledger.releases
    assert {r.mechanism for r in releases} == set(expected)
    for r in releases:
        # Every release is a discrete Gaussian; the real-valued R-scores and error queries
        # are released on the 1/s grid (s a power of two >= 1), charged for the rounded
        # query's sensitivity ceil(s Delta) and noise parameter s sigma.
        assert r.params["sampler"] == "discrete_gaussian"
        scale = r.params.get("scale", 1)
        assert scale == 1 or r.mechanism in ("privmrf.r_scores", "privmrf.error_queries")
        assert scale >= 1 and scale & (scale - 1) == 0
        sens, sigma = r.params["sensitivity"], r.params["sigma"]
        assert sens == math.ceil(scale * expected[r.mechanism])
        assert r.rho == pytest.approx(r.count * sens**2 / (2 * sigma**2), rel=1e-12)
    by_kind = {k: sum(r.rho for r in releases if r.mechanism == k) for k in expected}
    rho = fitted.rho_budget
    assert by_kind["privmrf.count"] == pytest.approx(0.001 * rho, rel=1e-12)
    assert by_kind["privmrf.r_scores"] == pytest.approx(0.099 * rho, rel=1e-12)
    assert by_kind["privmrf.marginals"] == pytest.approx(0.8 * rho, rel=1e-12)
    assert by_kind["privmrf.error_queries"] == pytest.approx(0.1 * rho, rel=1e-12)
    pairs = [r for r in releases if r.mechanism == "privmrf.r_scores"]
    assert len(pairs) == 1 and pairs[0].count == 15  # C(6, 2) pairs, each released once


def test_no_marginal_is_measured_twice(fitted: PrivMRF) -> None:
    attrs = [m.attrs for m in fitted.measurements]
    assert len(attrs) == len(set(attrs))
    n_charged = sum(r.count for r in fitted.ledger.releases if r.mechanism == "privmrf.marginals")
    assert n_charged == len(attrs)
    sigma = fitted.report.measurement_sigma
    assert all(m.weight == pytest.approx(1 / sigma) for m in fitted.measurements)


def test_graph_model_and_measurements_fit_together(fitted: PrivMRF) -> None:
    g = fitted.graph
    assert nx.is_chordal(g.chordal) and set(g.graph.edges) <= set(g.chordal.edges)
    assert list(g.cliques) == fitted.model.cliques
    assert sorted(tuple(sorted(c)) for c in nx.find_cliques(g.chordal)) == list(g.cliques)
    for m in fitted.measurements:
        assert any(set(m.attrs) <= set(c) for c in g.cliques)
    assert fitted.model.total == fitted.n_hat


def test_sample_and_utility(fitted: PrivMRF) -> None:
    synth = fitted.sample()
    assert list(synth.columns) == list(DOMAIN.names)
    assert len(synth) == round(fitted.n_hat)
    assert len(fitted.sample(17)) == 17
    # 2-way TVD of sampling n rows from the truth alone is about sqrt(cells / n) / 2 ~ 0.03
    # for these 4..12-cell marginals at n = 3000; the DP noise at epsilon = 1 (sigma ~ 20 per
    # cell against ~250-1500 records per cell) adds less. 0.08 leaves room for both.
    assert tvd(_table(), synth, DOMAIN, ways=2) < 0.08


def test_same_seed_same_output() -> None:
    one = PrivMRF(1.0, 1e-5, seed=3, **QUIET).fit(_table(500), DOMAIN).sample()
    two = PrivMRF(1.0, 1e-5, seed=3, **QUIET).fit(_table(500), DOMAIN).sample()
    pd.testing.assert_frame_equal(one, two)


def test_gdp_accounting_reproduces_the_reference_noise() -> None:
    model = PrivMRF(0.8, 1e-5, seed=1, gdp_accounting=True, **QUIET).fit(_table(), DOMAIN)
    x = privmrf_budget(0.8, 1e-5)
    assert x == pytest.approx(4.78237e-2, rel=1e-5)  # the reference table value
    rel = model.ledger.releases
    assert model.ledger.total_rho == pytest.approx(x / 2, rel=1e-12)
    # Reference noise (analysis 1.2, 2.2-2.7): sigma = Delta * sqrt(k / b) for k releases
    # sharing b of x; the count's b = 0.001 x is deducted from the scores' 0.1 x.
    (count,) = [r for r in rel if r.mechanism == "privmrf.count"]
    assert count.params["sigma"] == pytest.approx(math.sqrt(1 / (0.001 * x)))
    (scores,) = [r for r in rel if r.mechanism == "privmrf.r_scores"]
    scale = scores.params["scale"]
    assert scores.params["sigma"] / scale == pytest.approx(2 * math.sqrt(15 / (0.099 * x)))
    n_meas = sum(r.count for r in rel if r.mechanism == "privmrf.marginals")
    meas = [r for r in rel if r.mechanism == "privmrf.marginals"]
    assert all(r.params["sigma"] == pytest.approx(math.sqrt(n_meas / (0.8 * x))) for r in meas)
    # The noise is discrete, so the reference's GDP curve does not apply: the guarantee is
    # the zCDP conversion of the same rho, a larger epsilon, and the report says so.
    assert all(r.params["sampler"] == "discrete_gaussian" for r in rel)
    rep = model.report
    assert rep.epsilon_zcdp > 0.8
    assert "GDP curve needs continuous noise" in str(rep)


@pytest.mark.parametrize("rounds", [0, 1])
def test_zero_or_one_refinement_round(rounds: int) -> None:
    # One round used to divide by zero in the reference (analysis 8, item 20); with none,
    # the error-query share moves to the measurements so the budget is still spent exactly.
    model = PrivMRF(1.0, 1e-5, seed=2, max_rounds=rounds, **QUIET).fit(_table(800), DOMAIN)
    kinds = [r.mechanism for r in model.ledger.releases]
    assert kinds.count("privmrf.error_queries") == rounds
    assert model.ledger.total_rho == pytest.approx(model.rho_budget, rel=1e-12)
    assert model.report.rounds == rounds


def test_single_attribute_table() -> None:
    dom = Domain(("x",), (4,))
    df = pd.DataFrame({"x": np.arange(400) % 4})
    model = PrivMRF(1.0, 1e-5, seed=0, **QUIET).fit(df, dom)
    assert {r.mechanism for r in model.ledger.releases} == {"privmrf.count", "privmrf.marginals"}
    assert model.ledger.total_rho == pytest.approx(model.rho_budget, rel=1e-12)
    assert model.sample(10)["x"].between(0, 3).all()


def test_shared_ledger_and_given_noisy_count() -> None:
    ledger = PrivacyLedger(2.0, 1e-5)
    rho_each = epsilon_to_rho(2.0, 1e-5) / 2
    eps_each = 0.0
    lo, hi = 0.01, 2.0
    for _ in range(200):  # epsilon whose rho is half the ledger's budget
        eps_each = (lo + hi) / 2
        lo, hi = (eps_each, hi) if epsilon_to_rho(eps_each, 1e-5) < rho_each else (lo, eps_each)
    df = _table(600)
    a = PrivMRF(eps_each, 1e-5, seed=0, ledger=ledger, party="alice", **QUIET).fit(df, DOMAIN)
    b = PrivMRF(eps_each, 1e-5, seed=1, ledger=ledger, party="bob", noisy_count=a.n_hat, **QUIET)
    b.fit(df, DOMAIN)
    assert {r.party for r in ledger.releases} == {"alice", "bob"}
    assert not any(r.mechanism == "privmrf.count" and r.party == "bob" for r in ledger.releases)
    assert b.n_hat == a.n_hat
    assert ledger.total_rho == pytest.approx(ledger.budget_rho, rel=1e-9)
    with pytest.raises(PrivacyBudgetError):
        PrivMRF(0.5, 1e-5, seed=0, ledger=ledger, **QUIET).fit(df, DOMAIN)


def test_domain_spec_round_trip() -> None:
    spec = DomainSpec(
        [
            ColumnSpec("colour", "categorical", ("red", "green", "blue")),
            ColumnSpec("size", "categorical", ("S", "M")),
            ColumnSpec("ok", "categorical", (True, False)),
        ]
    )
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "colour": rng.choice(["red", "green", "blue"], 500),
            "size": rng.choice(["S", "M"], 500),
            "ok": rng.choice([True, False], 500),
        }
    )
    for s in (spec, TableEncoder(spec)):
        out = PrivMRF(2.0, 1e-5, seed=0, **QUIET).fit(df, s).sample(50)
        assert list(out.columns) == ["colour", "size", "ok"]
        assert set(out["colour"]) <= {"red", "green", "blue"}


def test_errors_are_explained() -> None:
    with pytest.raises(ConfigError, match="unknown PrivMRF options"):
        PrivMRF(1.0, 1e-5, thetta=3)
    with pytest.raises(ConfigError, match="positive"):
        PrivMRF(1.0, 1e-5, theta=0)
    with pytest.raises(PrivacyBudgetError):
        PrivMRF(-1.0, 1e-5)
    with pytest.raises(ConfigError, match="not fitted"):
        PrivMRF(1.0, 1e-5, **QUIET).sample()
    bad = _table(50)
    bad.loc[0, "c"] = 9
    with pytest.raises(DomainError, match="outside"):
        PrivMRF(1.0, 1e-5, **QUIET).fit(bad, DOMAIN)
