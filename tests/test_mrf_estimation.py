"""Mirror descent: exact recovery of a known model, monotone loss on noisy data, the API rules."""

import numpy as np
import pytest

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError
from vertimrf.mrf import (
    MarkovRandomField,
    Measurement,
    l2_loss,
    mirror_descent,
    theoretic_loss,
)

CASES = [
    ([3, 4, 3, 5, 2], [(0, 1, 2), (2, 3), (3, 4)]),
    ([2, 2, 3, 2, 4, 3], [(0, 1), (1, 2), (2, 0), (2, 3), (4, 5)]),
    ([5, 4, 6, 3], [(0, 1), (1, 2), (2, 3), (3, 0)]),
]


def known_model(case: int, total: float = 10_000.0) -> MarkovRandomField:
    sizes, edges = CASES[case]
    model = MarkovRandomField(Domain.from_sizes(sizes), edges, total=total)
    model.potentials = np.random.default_rng(case).normal(size=model.layout.total_cells)
    return model


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    return 0.5 * float(np.abs(a / a.sum() - b / b.sum()).sum())


@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_clique_marginals_are_recovered(case: int) -> None:
    truth = known_model(case)
    meas = [Measurement(c, truth.clique_marginal(c)) for c in truth.cliques]
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    result = mirror_descent(fit, meas, iters=3000, tol=0.0, target_loss=1e-6)
    assert result.loss_history[-1] < 1e-3 * result.loss_history[0]
    for c in truth.cliques:
        assert tvd(fit.clique_marginal(c), truth.clique_marginal(c)) <= 1e-3
    # the clique marginals pin down the whole model, so queries across cliques agree too
    d = len(truth.domain)
    assert tvd(fit.marginal([0, d - 1]), truth.marginal([0, d - 1])) <= 2e-3


@pytest.mark.parametrize("case", range(len(CASES)))
def test_noisy_fit_never_raises_the_loss(case: int) -> None:
    truth = known_model(case)
    rng = np.random.default_rng(100 + case)
    sigma = 50.0
    meas = []
    for c in truth.cliques:
        for attrs in (c, c[:1], c[-2:]):
            noisy = truth.marginal(attrs) + rng.normal(scale=sigma, size=truth.domain.shape(attrs))
            meas.append(Measurement(attrs, noisy, weight=1 / sigma))
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    initial = l2_loss(fit, meas)
    result = mirror_descent(fit, meas, iters=300)
    hist = result.loss_history
    assert hist[0] == pytest.approx(initial)
    assert np.all(hist <= hist[0]) and np.all(np.diff(hist) <= 0.0)
    assert l2_loss(fit, meas) == pytest.approx(hist[-1], rel=1e-9)
    assert hist[-1] < 0.5 * hist[0]
    assert result.calibrations >= result.iterations


def test_l2_loss_is_the_weighted_squared_error() -> None:
    truth = known_model(0, total=500.0)
    rng = np.random.default_rng(7)
    meas = [
        Measurement((0, 2), rng.uniform(0, 50, (3, 3)), weight=0.5),
        Measurement((3,), rng.uniform(0, 99, 5), weight=2.0),
    ]
    want = 0.5 * sum(m.weight**2 * np.sum((truth.marginal(m.attrs) - m.values) ** 2) for m in meas)
    assert l2_loss(truth, meas) == pytest.approx(want, rel=1e-12)


def test_measurement_order_and_flat_values() -> None:
    domain = Domain.from_sizes([2, 3, 4])
    model = MarkovRandomField(domain, [(0, 1, 2)], total=24.0)
    model.potentials = np.random.default_rng(1).normal(size=24)
    target = np.random.default_rng(2).uniform(size=(4, 2))
    a = Measurement((2, 0), target)
    b = Measurement((0, 2), target.T)
    c = Measurement((2, 0), target.ravel())
    assert np.array_equal(a.sorted_values(domain), b.sorted_values(domain))
    assert np.array_equal(a.sorted_values(domain), c.sorted_values(domain))
    assert l2_loss(model, [a]) == pytest.approx(l2_loss(model, [b]))
    with pytest.raises(DomainError, match="shape"):
        Measurement((0, 2), np.zeros(7)).sorted_values(domain)
    with pytest.raises(ConfigError, match="distinct"):
        Measurement((0, 0), np.zeros(4))
    with pytest.raises(ConfigError, match="weight"):
        Measurement((0,), np.zeros(2), weight=0.0)
    with pytest.raises(ConfigError, match="NaN"):
        Measurement((0,), [np.nan, 1.0])


def test_measurement_outside_every_clique_is_refused() -> None:
    truth = known_model(0)
    bad = Measurement((0, 4), np.ones((3, 2)))
    with pytest.raises(ConfigError, match=r"\(0, 4\) is not inside any clique"):
        mirror_descent(truth, [bad], iters=5)
    with pytest.raises(ConfigError, match="at least one"):
        mirror_descent(truth, [], iters=5)


def test_warm_start_from_the_truth_stops_at_once() -> None:
    truth = known_model(1)
    meas = [Measurement(c, truth.clique_marginal(c)) for c in truth.cliques]
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    result = mirror_descent(fit, meas, iters=500, warm_start=truth.potentials, target_loss=1e-12)
    assert result.iterations <= 1 and result.converged
    assert result.stop_reason in ("exact", "target_loss", "stalled")
    np.testing.assert_allclose(fit.potentials.values, truth.potentials.values, atol=1e-6)


def test_callback_and_stopping_rules() -> None:
    truth = known_model(2)
    rng = np.random.default_rng(3)
    sigma = 20.0
    meas = [
        Measurement(
            c,
            truth.clique_marginal(c) + rng.normal(scale=sigma, size=truth.domain.shape(c)),
            weight=1 / sigma,
        )
        for c in truth.cliques
    ]
    seen = []

    def stop_at_five(progress) -> bool:
        seen.append(progress.iteration)
        assert progress.loss > 0 and progress.step_size > 0
        return progress.iteration == 5

    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    result = mirror_descent(fit, meas, iters=100, callback=stop_at_five)
    assert seen == [1, 2, 3, 4, 5] and result.iterations == 5
    assert result.stop_reason == "callback" and not result.converged
    target = 1.5 * theoretic_loss(meas, truth.domain)
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    result = mirror_descent(fit, meas, iters=3000, target_loss=target)
    assert result.stop_reason == "target_loss" and result.loss <= target
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    result = mirror_descent(fit, meas, iters=100_000, tol=1e-3, check_every=20)
    assert result.stop_reason == "tol" and result.converged and result.iterations < 100_000
    capped = mirror_descent(
        MarkovRandomField(truth.domain, truth.tree, total=truth.total), meas, iters=7, tol=0.0
    )
    assert capped.iterations == 7 and capped.stop_reason == "max_iters"
    assert len(capped.loss_history) == 8
