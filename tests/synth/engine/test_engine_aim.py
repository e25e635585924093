"""The aim-like preset (``PrivMRF(..., selection="aim")``): it spends exactly its budget,
charges every release before drawing it, scores and measures exact counts, keeps to its
workload and model cap, and grows its model without changing the distribution."""

from __future__ import annotations

import math
from fractions import Fraction

import networkx as nx
import numpy as np
import pandas as pd
import pytest

from tests.synth.engine.latent_table import SIZES, assert_exact, latent_table
from vertimrf import PrivMRF
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.synth.engine.aim import _Graph, _regrow, fit_aim
from vertimrf.synth.engine.local import SCORE_SCALE, LocalOracle
from vertimrf.synth.privmrf import AIMOptions, PrivMRFOptions
from vertimrf.synth.privmrf.noise import FitNoise

DELTA = 1e-6


class _Watched(SeededSampler):
    """A seeded sampler that records the ledger's length at every draw; with ``zero`` every
    discrete Gaussian draw is 0 (noise off)."""

    def __init__(self, ledger: PrivacyLedger, *, zero: bool = False) -> None:
        super().__init__(0)
        self.ledger, self.zero = ledger, zero
        self.seen: list[tuple[str, int]] = []

    def discrete_gaussian(self, sigma, size):
        self.seen.append(("gaussian", len(self.ledger.releases)))
        drawn = super().discrete_gaussian(sigma, size)
        return np.zeros_like(drawn) if self.zero else drawn

    def exponential_mechanism(self, scores, sensitivity, epsilon):
        self.seen.append(("exponential", len(self.ledger.releases)))
        return super().exponential_mechanism(scores, sensitivity, epsilon)


def _fit(epsilon: float, *, zero: bool = False, rows: int = 2000, **aim):
    df, spec = latent_table(rows)
    ledger = PrivacyLedger(epsilon, DELTA)
    sampler = _Watched(ledger, zero=zero)
    noise = FitNoise(ledger, sampler, None)
    rho = epsilon_to_rho(epsilon, DELTA)
    codes = df.to_numpy().astype(np.int64)
    fit, rounds = fit_aim(codes, spec.domain, rho, AIMOptions(**aim), PrivMRFOptions(), noise)
    return df, fit, rounds, ledger, sampler


@pytest.mark.parametrize("epsilon", [0.3, 2.0, 40.0])
def test_aim_spends_exactly_its_budget_and_charges_before_it_draws(epsilon):
    _, fit, rounds, ledger, sampler = _fit(epsilon, iters=50)
    rho = epsilon_to_rho(epsilon, DELTA)
    assert math.isclose(ledger.total_rho, rho, rel_tol=1e-9)
    assert ledger.total_rho <= rho * (1 + 1e-9)
    d = len(SIZES)
    # the 1-way marginals after their one charge, then per round the selection after its
    # charge and the measurement after its own
    assert sampler.seen[:d] == [("gaussian", 1)] * d
    rest = sampler.seen[d:]
    assert [k for k, _ in rest] == ["exponential", "gaussian"] * len(rounds)
    assert [n for _, n in rest] == list(range(2, 2 + 2 * len(rounds)))
    assert [r.mechanism for r in ledger.releases] == ["engine.marginals"] + [
        "engine.select",
        "engine.marginals",
    ] * len(rounds)


def test_the_rounds_follow_aim_s_schedule():
    """First rounds at rho / T each (alpha of it measuring); sigma only halves between
    rounds (epsilon doubles with it); the last round spends what is left."""
    epsilon = 1.0
    _, fit, rounds, ledger, _ = _fit(epsilon, iters=50)
    rho = epsilon_to_rho(epsilon, DELTA)
    t = 16 * len(SIZES)
    assert rounds[0].sigma == pytest.approx(math.sqrt(t / (2 * 0.9 * rho)))
    assert rounds[0].epsilon == pytest.approx(math.sqrt(8 * 0.1 * rho / t))
    for a, b in zip(rounds[:-2], rounds[1:-1], strict=True):
        assert b.sigma in (a.sigma, a.sigma / 2)
        assert b.epsilon == pytest.approx(a.epsilon * a.sigma / b.sigma)
    last = ledger.releases[-2:]
    assert last[0].rho == pytest.approx(0.1 / 0.9 * last[1].rho)
    assert 1 < len(rounds) <= t


def test_with_noise_off_it_measures_exact_counts():
    """Brute force: every cell of every measured marginal counted row by row."""
    df, fit, _, _, _ = _fit(1.0, zero=True, rows=300, iters=20)
    assert_exact(df, fit.measurements)
    assert fit.n_hat == 300.0


def test_it_selects_only_inside_its_workload_and_keeps_to_its_model_cap():
    _, fit, rounds, _, _ = _fit(5.0, iters=20, workload=(("c0", "c1", "c2"),))
    assert all(set(r.marginal) <= {0, 1, 2} for r in rounds)
    _, fit, rounds, _, _ = _fit(5.0, iters=20, max_cells=40)
    assert fit.tree.size.total_cells <= 40


def test_the_selection_scores_exactly_as_aim_does():
    """A spy on the mechanism: each score is w_r (round(16 L1) - round(16 sqrt(2/pi)
    sigma n_r)) with exact integers; the sensitivity is 16 times the largest weight."""
    df, spec = latent_table(rows=400)
    got = {}

    class Spy(FitNoise):
        def select(self, mechanism, scores, sensitivity, epsilon, what):
            got.update(scores=list(scores), sensitivity=sensitivity, epsilon=epsilon)
            return 1

    codes = df.to_numpy().astype(np.int64)
    oracle = LocalOracle(codes, spec.domain, Spy(PrivacyLedger(), SeededSampler(0), None))
    rng = np.random.default_rng(3)
    ms = [(0,), (1, 3), (0, 2, 4)]
    estimates = {m: rng.random(math.prod(SIZES[a] for a in m)) * 50 for m in ms}
    weights = {(0,): 4, (1, 3): 7, (0, 2, 4): 2}
    pick = oracle.select(estimates, weights, 2.5, 0.3, "test")
    assert pick == (1, 3) and got["sensitivity"] == SCORE_SCALE * 7 and got["epsilon"] == 0.3
    for m, score in zip(ms, got["scores"], strict=True):
        truth = pd.DataFrame(codes[:, list(m)]).value_counts()
        counts = np.zeros([SIZES[a] for a in m])
        for cell, c in truth.items():
            counts[cell] = c
        l1 = sum(
            abs(Fraction(float(e)) - int(c))
            for e, c in zip(estimates[m], counts.ravel(), strict=True)
        )
        bias = round(SCORE_SCALE * math.sqrt(2 / math.pi) * 2.5 * counts.size)
        assert score == weights[m] * (round(SCORE_SCALE * l1) - bias)


def test_a_grown_model_keeps_its_distribution():
    """Brute force over the whole domain: the model regrown on a larger tree gives every
    cell the probability it had."""
    domain = Domain.from_sizes(SIZES)
    rng = np.random.default_rng(5)
    small = MarkovRandomField(domain, [(0, 1), (1, 2), (3,), (4,)], total=10.0)
    small.set_potentials(rng.normal(size=small.layout.total_cells))
    graph = _Graph(domain)
    for m in [(0, 1), (1, 2), (1, 2, 4)]:
        graph.add(m)
    big = _regrow(small, graph.tree(domain))
    assert len(big.cliques) < len(small.cliques)
    every = tuple(range(len(SIZES)))
    np.testing.assert_allclose(big.marginal(every), small.marginal(every), rtol=1e-10)


def test_the_graph_counts_the_cells_of_the_junction_tree_it_would_build():
    domain = Domain.from_sizes(SIZES)
    graph = _Graph(domain)
    graph.add((0, 1))
    graph.add((2, 3))
    for m in [(0,), (0, 1), (1, 2), (0, 2, 4), (1, 3, 4)]:
        g = nx.Graph()
        g.add_nodes_from(range(len(SIZES)))
        g.add_edges_from([(0, 1), (2, 3)] + [(a, b) for a in m for b in m if a < b])
        tree = JunctionTree.build(domain, g, heuristic="static_min_degree")
        assert graph.cells(m) == tree.size.total_cells
    assert graph.holds((0, 1)) and not graph.holds((1, 2))


def test_seeded_aim_runs_repeat_and_save(tmp_path):
    df, spec = latent_table(rows=500)
    opts = AIMOptions(iters=50)
    a = PrivMRF(1.0, DELTA, seed=3, selection="aim", aim=opts).fit(df, spec)
    b = PrivMRF(1.0, DELTA, seed=3, selection="aim", aim=opts).fit(df, spec)
    pd.testing.assert_frame_equal(a.sample(seed=1), b.sample(seed=1))
    # the report sums the rounds' releases by mechanism and noise: a line per noise level
    text = str(a.report)
    lines = [x for x in text.splitlines() if x.startswith("engine.")]
    levels = {
        (r.mechanism, r.params.get("sigma"), r.params.get("epsilon")) for r in a.ledger.releases
    }
    assert len(lines) == len(levels) < len(a.ledger.releases)
    assert "epsilon=" in text and "nan" not in text
    back = PrivMRF.load(a.save(tmp_path / "fit.vmrf"))
    pd.testing.assert_frame_equal(back.sample(100, seed=5), a.sample(100, seed=5))


def test_bad_aim_options_are_refused():
    for bad, message in [
        ({"alpha": 1.0}, "alpha"),
        ({"rounds_per_attribute": 0}, "rounds_per_attribute"),
        ({"max_cells": 0.5}, "max_cells"),
        ({"iters": 0}, "iters"),
    ]:
        with pytest.raises(ConfigError, match=message):
            AIMOptions(**bad)
    with pytest.raises(ConfigError, match="selection='aim' only"):
        PrivMRF(1.0, DELTA, aim=AIMOptions())
    with pytest.raises(ConfigError, match="noisy_count"):
        PrivMRF(1.0, DELTA, selection="aim", noisy_count=100.0)
    df, spec = latent_table(rows=100)
    with pytest.raises(ConfigError, match="does not have"):
        PrivMRF(1.0, DELTA, selection="aim", aim=AIMOptions(workload=(("zz",),))).fit(df, spec)


def test_an_unseeded_aim_fit_draws_from_the_secure_sampler_and_spends_its_budget():
    df, spec = latent_table(rows=300)
    fit = PrivMRF(1.0, DELTA, selection="aim", aim=AIMOptions(iters=10)).fit(df, spec)
    assert not fit.report.seeded
    assert math.isclose(fit.ledger.total_rho, epsilon_to_rho(1.0, DELTA), rel_tol=1e-9)
    assert {r.mechanism for r in fit.ledger.releases} == {"engine.marginals", "engine.select"}


def test_each_round_says_one_line_of_public_facts():
    df, spec = latent_table(rows=500)
    lines: list[str] = []
    ledger = PrivacyLedger()
    noise = FitNoise(ledger, SeededSampler(0), None)
    codes = df.to_numpy().astype(np.int64)
    rho = epsilon_to_rho(1.0, DELTA)
    _, rounds = fit_aim(
        codes, spec.domain, rho, AIMOptions(iters=20), PrivMRFOptions(), noise, lines.append
    )
    assert len(lines) == len(rounds)
    for k, (line, r) in enumerate(zip(lines, rounds, strict=True), start=1):
        columns = ", ".join(f"c{a}" for a in r.marginal)
        assert line.startswith(f"round {k}: ({columns}), sigma {r.sigma:.4g}, ")
