"""Calibrated marginals and arbitrary marginal() queries against a brute-force joint table."""

import networkx as nx
import numpy as np
import pytest

from tests.mrf.random_models import assert_log_close, joint_of, random_model, random_spec
from tests.naive import brute_force_log_marginal
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError
from vertimrf.mrf import JunctionTree, MarkovRandomField
from vertimrf.mrf.inference import logsumexp

N_MODELS = 60


def test_random_models_cover_the_required_cases() -> None:
    """The exactness suite must include chordal, non-chordal and disconnected graphs."""
    chordal = non_chordal = disconnected = 0
    for seed in range(N_MODELS):
        domain, edges, _ = random_spec(seed)
        graph = nx.Graph(edges)
        graph.add_nodes_from(range(len(domain)))
        chordal += nx.is_chordal(graph)
        non_chordal += not nx.is_chordal(graph)
        disconnected += nx.number_connected_components(graph) > 1
    assert min(chordal, non_chordal, disconnected) >= 10


@pytest.mark.parametrize("seed", range(N_MODELS))
def test_clique_marginals_and_queries_match_brute_force(seed: int) -> None:
    model = random_model(seed)
    joint = joint_of(model)
    assert model.log_partition == pytest.approx(float(logsumexp(joint)), rel=1e-12, abs=1e-9)
    for c in model.cliques:
        want = brute_force_log_marginal(joint, c)
        assert_log_close(model.clique_log_marginal(c), want)
        counts = model.clique_marginal(c)
        np.testing.assert_allclose(counts, np.exp(want), rtol=1e-9, atol=0)
    rng = np.random.default_rng(1000 + seed)
    d = len(model.domain)
    for _ in range(8):
        k = int(rng.integers(1, min(4, d) + 1))
        attrs = [int(a) for a in rng.choice(d, size=k, replace=False)]
        assert_log_close(model.log_marginal(attrs), brute_force_log_marginal(joint, attrs))


@pytest.mark.parametrize("seed", range(10))
def test_structural_zeros_match_brute_force(seed: int) -> None:
    """-inf potentials (zero cells) stay exact: no NaN, zeros where brute force has zeros."""
    model = random_model(500 + seed, scale=5.0, neg_inf=0.15)
    joint = joint_of(model)
    if not np.isfinite(logsumexp(joint)):
        with pytest.raises(ConfigError, match="zero probability"):
            model.calibrate()
        return
    for c in model.cliques:
        assert_log_close(model.clique_log_marginal(c), brute_force_log_marginal(joint, c))
    for attrs in ([0, len(model.domain) - 1], [1], [2, 0, 1]):
        assert_log_close(model.log_marginal(attrs), brute_force_log_marginal(joint, attrs))


def test_marginal_axes_follow_given_order_and_sum_to_total() -> None:
    domain = Domain.from_sizes([2, 3, 4, 5])
    model = MarkovRandomField(domain, [(0, 1), (1, 2), (2, 3)], total=250.0)
    model.potentials = np.random.default_rng(0).normal(size=model.layout.total_cells)
    m = model.marginal([3, 0])
    assert m.shape == (5, 2)
    np.testing.assert_allclose(m, model.marginal([0, 3]).T, rtol=1e-12)
    assert m.sum() == pytest.approx(250.0)
    assert model.clique_marginal((1, 2)).sum() == pytest.approx(250.0)


def test_disconnected_model_is_a_product_of_components() -> None:
    domain = Domain.from_sizes([3, 4, 2, 5])
    model = MarkovRandomField(domain, [(0, 1), (2, 3)])
    model.potentials = np.random.default_rng(1).normal(size=model.layout.total_cells) * 3
    joint = model.marginal([0, 1, 2, 3])
    outer = np.einsum("ab,cd->abcd", model.marginal([0, 1]), model.marginal([2, 3]))
    np.testing.assert_allclose(joint, outer, rtol=1e-12)


def test_uniform_model_and_lazy_recalibration() -> None:
    domain = Domain.from_sizes([2, 3, 4])
    model = MarkovRandomField(domain, [(0, 1), (1, 2)], total=24.0)
    np.testing.assert_allclose(model.marginal([0, 2]), np.full((2, 4), 3.0))
    assert model.log_partition == pytest.approx(np.log(24.0))
    model.potentials[(0, 1)] = np.log([[1, 1, 1], [3, 3, 3]])
    np.testing.assert_allclose(model.marginal([0]), [6.0, 18.0])


def test_bad_queries_and_potentials_raise_clear_errors() -> None:
    domain = Domain.from_sizes([2, 3, 4])
    model = MarkovRandomField(domain, [(0, 1), (1, 2)])
    with pytest.raises(DomainError, match="distinct attribute"):
        model.marginal([0, 0])
    with pytest.raises(DomainError, match="0..2"):
        model.marginal([3])
    with pytest.raises(ConfigError, match="not a maximal clique"):
        model.clique_marginal((0, 2))
    with pytest.raises(ConfigError, match="NaN"):
        model.potentials = np.full(model.layout.total_cells, np.nan)
    with pytest.raises(ConfigError, match="zero probability"):
        MarkovRandomField(
            domain, [(0, 1), (1, 2)], np.full(model.layout.total_cells, -np.inf)
        ).calibrate()
    with pytest.raises(ConfigError, match="total"):
        MarkovRandomField(domain, [(0, 1)], total=0.0)


def test_potentials_from_factors_and_tree_reuse() -> None:
    domain = Domain.from_sizes([2, 3, 4])
    tree = JunctionTree.build(domain, [(0, 1), (1, 2)])
    rng = np.random.default_rng(3)
    f01 = rng.normal(size=(2, 3))
    f21 = rng.normal(size=(4, 3))
    f1 = rng.normal(size=3)
    model = MarkovRandomField(domain, tree, {(0, 1): f01, (2, 1): f21, (1,): f1})
    joint = f01[:, :, None] + f21.T[None, :, :] + f1[None, :, None]
    want = brute_force_log_marginal(joint, [0, 2])
    assert_log_close(model.log_marginal([0, 2]), want, tol=1e-12)
    with pytest.raises(ConfigError, match="not contained"):
        MarkovRandomField(domain, tree, {(0, 2): np.zeros((2, 4))})


def test_query_with_more_attributes_than_einsum_labels() -> None:
    """A 60-attribute query (mostly size-1 attributes) takes the log-space fallback path."""
    sizes = [2, 3, 2] + [1] * 54 + [2, 3, 2]
    domain = Domain.from_sizes(sizes)
    model = MarkovRandomField(domain, [(i, i + 1) for i in range(59)])
    model.potentials = np.random.default_rng(9).normal(size=model.layout.total_cells) * 4
    attrs = list(range(59, -1, -1))
    assert_log_close(model.log_marginal(attrs), brute_force_log_marginal(joint_of(model), attrs))
