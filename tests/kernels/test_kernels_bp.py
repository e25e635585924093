"""Each BP kernel against its plain numpy reference, on random inputs of several shapes."""

import itertools

import numba
import numpy as np
import pytest

from tests.mrf.random_models import random_model
from tests.naive import expand_add_table, project_table
from vertimrf.domain import Domain
from vertimrf.kernels import bp
from vertimrf.mrf.cliques import CliqueLayout, ProjectionSet
from vertimrf.mrf.reference import NumpyCalibrator

# Small shapes run serially; the large ones cross PAR_MIN_CELLS (log-sum-exp) or also
# PAR_MIN_CELLS_CHEAP (sums, adds) and exercise the task cuts (subset-only cuts, rest cuts with
# partial results, long runs cut to GRAIN).
SHAPES = [
    (1,),
    (7,),
    (2, 3),
    (3, 1, 4),
    (2, 3, 4, 5),
    (41, 16, 16, 16),
    (7, 300, 40),
    (1000, 300),
    (2, 3, 100000),
    (100000, 3, 2),
    (3, 200000),
    (600000,),
    (7, 300, 400),
    (1100, 1000),
    (64, 130, 128),
    # short runs inside the subset (a 2-value last axis next to an axis summed out), as the
    # engine's cliques on Adult have them; the second crosses PAR_MIN_CELLS_CHEAP
    (16, 14, 6, 16, 2),
    (130, 64, 64, 2),
]


def _project_all(x: np.ndarray, ps: ProjectionSet, out: np.ndarray, use_log: bool) -> None:
    """Every projection of the set, each into its slot of out."""
    *arrays, optr = ps.arrays()
    for p in range(len(ps)):
        bp.project(x, p, *arrays, out, optr[p], use_log, np.nan)


def _expand_all(x: np.ndarray, ps: ProjectionSet, vec: np.ndarray, scale: float) -> None:
    """Add every projection's slot of vec (times scale) back into its clique of x."""
    *arrays, optr = ps.arrays()
    for p in range(len(ps)):
        bp.expand_add(x, p, *arrays, vec, optr[p], scale)


def all_subsets(d: int) -> list[tuple[int, ...]]:
    return [s for k in range(d + 1) for s in itertools.combinations(range(d), k)]


def table_case(shape: tuple[int, ...], seed: int) -> tuple[CliqueLayout, np.ndarray]:
    """Layout with a decoy clique first (non-zero offset) and the clique of ``shape``."""
    domain = Domain.from_sizes([3, *shape])
    layout = CliqueLayout(domain, [(0,), tuple(range(1, len(shape) + 1))])
    x = np.random.default_rng(seed).normal(size=layout.total_cells) * 30
    return layout, x


def test_fexp_matches_numpy_exp() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate(
        [
            rng.uniform(-708, 709, 200_000),
            rng.normal(size=10_000) * 1e-3,
            [0.0, -0.0, 1e-300, -1e-300, 709.0, -708.0, 0.5 * np.log(2)],
        ]
    )
    out = np.empty_like(x)
    bp.exp_shifted(x, 0.0, 1.0, out, np.array([0]), np.array([x.size]))
    want = np.exp(x)
    assert np.max(np.abs(out - want) / want) < 5e-16
    special = np.array([-np.inf, np.nan, -708.5, -1000.0, 710.0, np.inf])
    got = np.empty_like(special)
    bp.exp_shifted(special, 0.0, 1.0, got, np.array([0]), np.array([special.size]))
    assert got[0] == 0.0 and np.isnan(got[1]) and got[2] == 0.0 and got[3] == 0.0
    assert np.isposinf(got[4]) and np.isposinf(got[5])


@pytest.mark.parametrize("shape", SHAPES)
def test_project_and_expand_match_numpy(shape: tuple[int, ...]) -> None:
    layout, x = table_case(shape, seed=len(shape) * 7 + shape[0])
    x[np.random.default_rng(1).random(x.size) < 0.1] = -np.inf
    clique = layout.cliques[1]
    subsets = [tuple(clique[i] for i in s) for s in all_subsets(len(clique))]
    ps = ProjectionSet(layout, [(1, s) for s in subsets])
    table = x[layout.slice(1)].reshape(layout.shapes[1])
    for use_log in (True, False):
        values = x if use_log else np.where(np.isfinite(x), x, 0.0)
        out = np.full(ps.out_size, np.nan)
        _project_all(values, ps, out, use_log)
        ref_table = table if use_log else values[layout.slice(1)].reshape(layout.shapes[1])
        for i, s in enumerate(subsets):
            want = project_table(ref_table, clique, s, use_log)
            got = out[ps.out_ptr[i] : ps.out_ptr[i + 1]]
            assert np.array_equal(np.isneginf(got), np.isneginf(want))
            fin = np.isfinite(want)
            scale = max(1.0, float(np.max(np.abs(want[fin]), initial=0.0)))
            assert np.max(np.abs(got[fin] - want[fin]), initial=0.0) <= 1e-12 * scale
    vec = np.random.default_rng(2).normal(size=ps.out_size)
    got = x.copy()
    _expand_all(got, ps, vec, 0.5)
    want = x.copy()
    view = want[layout.slice(1)].reshape(layout.shapes[1])
    for i, s in enumerate(subsets):
        expand_add_table(view, clique, s, vec[ps.out_ptr[i] : ps.out_ptr[i + 1]], 0.5)
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=1e-12, atol=1e-12)
    assert np.array_equal(got[layout.slice(0)], x[layout.slice(0)])


@pytest.mark.parametrize("n", [5, 70_000, 300_001])
def test_exp_shifted_and_axpy_on_ranges(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.normal(size=n) * 10
    y = rng.normal(size=n)
    starts = np.array([0, n // 3], dtype=np.int64)
    ends = np.array([n // 5, n], dtype=np.int64)
    mask = np.zeros(n, dtype=bool)
    for a, b in zip(starts, ends, strict=True):
        mask[a:b] = True
    out = np.full(n, -7.0)
    bp.exp_shifted(x, 3.0, 2.5, out, starts, ends)
    np.testing.assert_allclose(out[mask], 2.5 * np.exp(x[mask] - 3.0), rtol=1e-15)
    assert np.all(out[~mask] == -7.0)
    out = np.full(n, -7.0)
    bp.axpy(out, x, -0.25, y, starts, ends)
    np.testing.assert_allclose(out[mask], x[mask] - 0.25 * y[mask], rtol=1e-15)
    assert np.all(out[~mask] == -7.0)


def calibrate_both(model, theta):
    """Kernel calibration (beliefs, log Z) against the numpy one; also checks the probabilities."""
    plan = model.plan
    beliefs = np.empty_like(theta)
    probs = np.empty_like(theta)
    pshift = np.empty(len(model.layout))
    logz = plan.run(theta, beliefs, probs, pshift, np.empty(int(plan.eptr[-1])))
    ref = NumpyCalibrator(model.layout, model.tree.message_order, model.tree.separators)
    ref_beliefs, ref_logz = ref.calibrate(theta)
    if np.isfinite(ref_logz):
        counts = probs * np.exp(np.repeat(pshift, model.layout.sizes) - logz)
        want = np.exp(ref_beliefs - ref_logz)
        np.testing.assert_allclose(counts, want, rtol=1e-12, atol=1e-300)
        for c in range(len(model.layout)):  # shifted so no exp overflows or all underflow
            assert bp.LOOSE <= np.max(probs[model.layout.slice(c)]) <= 1.0
    return (beliefs, logz), (ref_beliefs, ref_logz)


@pytest.mark.parametrize("seed", range(12))
def test_calibrate_kernel_matches_numpy_calibration(seed: int) -> None:
    model = random_model(seed, neg_inf=0.05 if seed % 2 else 0.0)
    theta = model.potentials.values
    (beliefs, logz), (ref_beliefs, ref_logz) = calibrate_both(model, theta)
    assert np.array_equal(np.isneginf(beliefs), np.isneginf(ref_beliefs))
    fin = np.isfinite(ref_beliefs)
    np.testing.assert_allclose(beliefs[fin], ref_beliefs[fin], rtol=1e-12, atol=1e-9)
    if np.isfinite(ref_logz):
        assert logz == pytest.approx(ref_logz, rel=1e-12)


def test_calibrate_kernel_on_large_cliques_matches_numpy() -> None:
    """A tree whose big cliques take the parallel paths, against the numpy calibration."""
    from vertimrf.mrf import MarkovRandomField

    domain = Domain.from_sizes([16, 7, 16, 16, 16, 41, 2, 13])
    model = MarkovRandomField(domain, [(0, 2, 3, 5, 7), (0, 3, 4), (4, 1), (5, 6)])
    assert model.tree.size.max_clique_cells > bp.PAR_MIN_CELLS_CHEAP
    theta = np.random.default_rng(4).normal(size=model.layout.total_cells) * 5
    (beliefs, logz), (ref_beliefs, ref_logz) = calibrate_both(model, theta)
    np.testing.assert_allclose(beliefs, ref_beliefs, rtol=1e-12, atol=1e-10)
    assert logz == pytest.approx(ref_logz, rel=1e-13)


def test_results_do_not_depend_on_thread_count() -> None:
    """Task cuts depend only on sizes, so 1 and 2 threads give bit-identical beliefs."""
    from vertimrf.mrf import MarkovRandomField

    domain = Domain.from_sizes([64, 130, 128, 3])
    model = MarkovRandomField(domain, [(0, 1, 2), (2, 3)])
    assert model.tree.size.max_clique_cells > bp.PAR_MIN_CELLS_CHEAP  # every path in parallel
    theta = np.random.default_rng(5).normal(size=model.layout.total_cells) * 10
    before = numba.get_num_threads()
    try:
        results = []
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            beliefs = np.empty_like(theta)
            probs = np.empty_like(theta)
            logz = model.plan.run(
                theta,
                beliefs,
                probs,
                np.empty(len(model.layout)),
                np.empty(int(model.plan.eptr[-1])),
            )
            results.append((beliefs, logz, probs))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][2], results[1][2])
    assert results[0][1] == results[1][1]


@pytest.mark.parametrize("shape", [(4, 6), (50, 3, 700)])
def test_log_projection_recovers_groups_far_below_the_shift(shape) -> None:
    """Groups ~1000 below the clique max underflow the shifted sum and are recomputed exactly."""
    layout, x = table_case(shape, seed=3)
    table = x[layout.slice(1)].reshape(layout.shapes[1])
    table[1] -= 1000.0  # every cell with first coordinate 1
    table[2, ..., 0] = -np.inf
    clique = layout.cliques[1]
    subsets = [tuple(clique[i] for i in s) for s in all_subsets(len(clique)) if 0 in s]
    ps = ProjectionSet(layout, [(1, s) for s in subsets])
    out = np.empty(ps.out_size)
    _project_all(x, ps, out, True)
    for i, s in enumerate(subsets):
        want = project_table(table, clique, s, True)
        got = out[ps.out_ptr[i] : ps.out_ptr[i + 1]]
        assert np.array_equal(np.isneginf(got), np.isneginf(want))
        fin = np.isfinite(want)
        np.testing.assert_allclose(got[fin], want[fin], rtol=1e-13, atol=1e-12)


def test_calibration_with_huge_potential_ranges_matches_numpy() -> None:
    """Potentials spanning +-2000 push the tracked shifts far from some groups' max."""
    from vertimrf.mrf import MarkovRandomField

    domain = Domain.from_sizes([5, 4, 6, 3, 4])
    model = MarkovRandomField(domain, [(0, 1, 2), (2, 3), (3, 4), (1, 2, 4)])
    theta = np.random.default_rng(8).uniform(-2000, 2000, model.layout.total_cells)
    (beliefs, logz), (ref_beliefs, ref_logz) = calibrate_both(model, theta)
    np.testing.assert_allclose(beliefs, ref_beliefs, rtol=1e-13)
    assert logz == pytest.approx(ref_logz, rel=1e-14)


@pytest.mark.parametrize("n", [0, 3, 70_000, 1_100_000])
def test_range_max_matches_numpy(n: int) -> None:
    x = np.random.default_rng(n).normal(size=n + 10)
    x[np.random.default_rng(1).random(x.size) < 0.3] = -np.inf
    assert bp.range_max(x, 5, 5 + n) == (np.max(x[5 : 5 + n]) if n else -np.inf)
