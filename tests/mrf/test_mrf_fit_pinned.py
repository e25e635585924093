"""The fit's output pinned: a small model fitted under one seed against the potentials and
marginals the tree of commit e4799cb (before the calibration and fit passes were reworked)
gave for it, stored in ``data/fit_pinned.npz`` (``pinned_fit()`` run with that tree first
on the path, its three arrays saved as ``theta``, ``counts`` and ``history``).

The rework keeps every sum in its order, so on the same machine the results are the same
bits; the tolerance (1e-9 relative) only leaves room for another CPU or libm rounding a few
ulps differently, compounded over the fit's iterations. A changed algorithm (another step
rule, schedule or loss) moves the potentials by far more and fails.
"""

from pathlib import Path

import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf import MarkovRandomField, Measurement, mirror_descent

PINNED = Path(__file__).with_name("data") / "fit_pinned.npz"
# A trailing 2-value attribute in every clique, as on Adult: the kernels' short runs.
SIZES = [6, 5, 7, 4, 3, 2]
CLIQUES = [(0, 1, 5), (1, 2, 5), (2, 3, 4, 5)]
ITERS = 80


def pinned_fit() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fitted potentials, clique marginals and loss history of the pinned fit: noisy
    marginals (seed 1) of a random model (seed 0), one of them binned, fitted from zero."""
    domain = Domain.from_sizes(SIZES)
    truth = MarkovRandomField(domain, CLIQUES, total=50_000.0)
    truth.potentials = np.random.default_rng(0).normal(size=truth.layout.total_cells)
    rng = np.random.default_rng(1)
    sigma = 30.0
    measured = [*CLIQUES, (0, 5), (1, 2), (3, 4), (2,)]
    meas = [
        Measurement(a, truth.marginal(a) + rng.normal(scale=sigma, size=domain.shape(a)), 1 / sigma)
        for a in measured
    ]
    bins = (np.array([0, 0, 1, 1, 2, 2, 2]), None)
    table = truth.marginal((2, 3))
    binned = np.stack([table[bins[0] == k].sum(axis=0) for k in range(3)])
    meas.append(Measurement((2, 3), binned + rng.normal(scale=sigma, size=(3, 4)), 1 / sigma, bins))
    model = MarkovRandomField(domain, truth.tree, total=truth.total)
    result = mirror_descent(model, meas, iters=ITERS, tol=0.0)
    return model.potentials.values, model.clique_marginals(), result.loss_history


def test_the_fit_gives_the_pinned_output() -> None:
    theta, counts, history = pinned_fit()
    want = np.load(PINNED)
    assert history.size == want["history"].size == ITERS + 1
    np.testing.assert_allclose(history, want["history"], rtol=1e-9)
    np.testing.assert_allclose(theta, want["theta"], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(counts, want["counts"], rtol=1e-9, atol=1e-9)
