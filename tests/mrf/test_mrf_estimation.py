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


def test_a_plateau_below_the_expected_loss_stops_at_its_first_checkpoint() -> None:
    """With ``plateau=(level, drop)`` the fit stops at the first checkpoint (every
    ``check_every`` iterations) where the loss is at most ``level`` and fell by less than
    ``drop`` since the last one; found by brute force on the history of the same fit run
    to its cap (the fit is deterministic), and never before a checkpoint."""
    truth = known_model(0)
    rng = np.random.default_rng(5)
    meas = []
    for c in truth.cliques:
        marginal = truth.clique_marginal(c)
        meas.append(Measurement(c, marginal + rng.normal(scale=20.0, size=marginal.shape), 1 / 20))

    def fresh() -> MarkovRandomField:
        return MarkovRandomField(truth.domain, truth.tree, total=truth.total)

    full = mirror_descent(fresh(), meas, iters=400, tol=0.0, check_every=10).loss_history
    level = float(full[40])
    drop = 0.5 * float(full[30] - full[40])
    want = next(
        it for it in range(10, 401, 10) if full[it] <= level and full[it - 10] - full[it] < drop
    )
    result = mirror_descent(fresh(), meas, iters=400, tol=0.0, check_every=10,
                            plateau=(level, drop))  # fmt: skip
    assert result.stop_reason == "plateau" and result.converged
    assert result.iterations == want > 40
    np.testing.assert_array_equal(result.loss_history, full[: want + 1])
    never = mirror_descent(fresh(), meas, iters=400, tol=0.0, check_every=10,
                           plateau=(float(full[-1]) / 2, drop))  # fmt: skip
    assert never.stop_reason == "max_iters"  # the loss never reaches the level


def binned_truth(table: np.ndarray, bins: tuple) -> np.ndarray:
    """Bin sums of a shaped table, one axis at a time, by an explicit loop over its cells."""
    shape = tuple(table.shape[i] if b is None else int(b.max()) + 1 for i, b in enumerate(bins))
    out = np.zeros(shape)
    for cell in np.ndindex(table.shape):
        key = tuple(c if b is None else b[c] for c, b in zip(cell, bins, strict=True))
        out[key] += table[cell]
    return out


def test_binned_measurement_loss_is_the_bin_sums_squared_error() -> None:
    # Exact answer: bin sums by a cell loop, against l2_loss's binned path, with the
    # attributes out of sorted order and one attribute unbinned.
    truth = known_model(0, total=800.0)
    rng = np.random.default_rng(11)
    bins = (np.array([1, 0, 1]), None)
    target = rng.uniform(0, 300, (2, 4))
    m = Measurement((2, 1), target, weight=0.3, bins=bins)
    assert m.shape(truth.domain) == (2, 4) and m.cells(truth.domain) == 8
    table = truth.marginal([2, 1])
    want = 0.5 * 0.09 * float(((binned_truth(table, bins) - target) ** 2).sum())
    assert l2_loss(truth, [m]) == pytest.approx(want, rel=1e-12)
    assert theoretic_loss([m], truth.domain) == 0.5 * 8


def test_identity_bins_fit_exactly_as_unbinned() -> None:
    # Each value its own bin is the same linear query as the full marginal: the same loss at
    # every iteration (gradient and step sizes agree), up to rounding.
    truth = known_model(1)
    rng = np.random.default_rng(5)
    sigma = 30.0
    plain, binned = [], []
    for c in truth.cliques:
        noisy = truth.marginal(c) + rng.normal(scale=sigma, size=truth.domain.shape(c))
        plain.append(Measurement(c, noisy, weight=1 / sigma))
        ids = tuple(np.arange(truth.domain.size([a])) for a in c)
        binned.append(Measurement(c, noisy, weight=1 / sigma, bins=ids))
    runs = []
    for meas in (plain, binned):
        fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
        runs.append(mirror_descent(fit, meas, iters=60, tol=0.0).loss_history)
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-9)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_exact_bin_sums_are_fitted(case: int) -> None:
    # Exact binned targets of a known model: the fit drives the loss to zero, so the fitted
    # model's bin sums equal the truth's (to 1e-3 of the total).
    truth = known_model(case)
    rng = np.random.default_rng(case)
    meas = []
    for c in truth.cliques:
        bins = tuple(
            rng.permutation(np.arange(truth.domain.size([a])) % 2) if i == 0 else None
            for i, a in enumerate(c)
        )
        meas.append(Measurement(c, binned_truth(truth.marginal(c), bins), bins=bins))
    fit = MarkovRandomField(truth.domain, truth.tree, total=truth.total)
    mirror_descent(fit, meas, iters=3000, tol=0.0, target_loss=1e-4)
    for m in meas:
        got = binned_truth(fit.marginal(m.attrs), m.bins)
        assert np.abs(got - m.values).max() <= 1e-3 * truth.total


def test_bad_bin_maps_are_refused() -> None:
    domain = Domain.from_sizes([3, 4])
    with pytest.raises(ConfigError, match="one per attribute"):
        Measurement((0, 1), np.zeros(4), bins=(np.array([0, 1, 0]),))
    with pytest.raises(ConfigError, match="every bin"):
        Measurement((0, 1), np.zeros(12), bins=(np.array([0, 2, 0]), None))
    with pytest.raises(ConfigError, match="no attribute is binned"):
        Measurement((0, 1), np.zeros(12), bins=(None, None))
    with pytest.raises(ConfigError, match="1-D integer"):
        Measurement((0, 1), np.zeros(12), bins=(np.array([0.0, 1.0, 0.0]), None))
    with pytest.raises(DomainError, match="bin map of attribute 0 has 2"):
        Measurement((0, 1), np.zeros(8), bins=(np.array([0, 1]), None)).shape(domain)
