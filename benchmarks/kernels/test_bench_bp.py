"""Clique belief propagation: one two-pass log-space calibration of a junction tree against
the plain numpy calibration on the same schedule (cells/s: the clique tables' cells)."""

import numpy as np
import pytest
from kernel_references import ADULT_CLIQUES, ADULT_SIZES

from vertimrf.domain import Domain
from vertimrf.mrf import MarkovRandomField
from vertimrf.mrf.reference import NumpyCalibrator

# A chain of 4-way cliques over 8 attributes of u values, each sharing two with the next:
# u = 16 gives 3 x 65,536 cells, u = 32 gives 3 x 1,048,576.
CLIQUES = [(0, 1, 2, 3), (2, 3, 4, 5), (4, 5, 6, 7)]
MODELS = {
    "u16": ([16] * 8, CLIQUES),
    "u32": ([32] * 8, CLIQUES),
    "adult1m": (ADULT_SIZES, ADULT_CLIQUES),
}


@pytest.mark.benchmark(group="belief propagation")
@pytest.mark.parametrize("name", ["u16", pytest.param("u32", marks=pytest.mark.large), "adult1m"])
def test_calibrate(pair, name: str) -> None:
    sizes, cliques = MODELS[name]
    model = MarkovRandomField(Domain.from_sizes(sizes), cliques)
    tree, plan = model.tree, model.plan
    cells = model.layout.total_cells
    theta = np.random.default_rng(len(sizes)).normal(size=cells) * 3
    beliefs, probs = np.empty(cells), np.empty(cells)
    pshift, up = np.empty(len(model.layout)), np.empty(int(plan.eptr[-1]))
    reference = NumpyCalibrator(model.layout, tree.message_order, tree.separators, tree.root)

    def check(got: tuple[np.ndarray, float], want: tuple[np.ndarray, float]) -> None:
        # log-space: an absolute error of 1e-9 is a relative one on the probabilities
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=1e-9)
        assert abs(got[1] - want[1]) <= 1e-9

    pair(
        kernel=lambda: (beliefs, plan.run(theta, beliefs, probs, pshift, up)),
        reference=lambda: reference.calibrate(theta),
        check=check,
        items=cells,
        unit="cells/s",
        reference_name="numpy (vertimrf.mrf.reference)",
    )
