"""The block-sum projection kernels against their plain numpy references."""

import itertools

import numba
import numpy as np
import pytest

from tests.naive import reference_broadcast_add, reference_sum_out
from vertimrf.domain import Domain
from vertimrf.kernels import bp
from vertimrf.mrf.cliques import (
    CliqueLayout,
    SharedSumOutPlan,
    SumOutPlan,
    sum_onto_many,
    sumout_steps,
)

# Small shapes take the serial path; the large ones cross PAR_MIN_CELLS_CHEAP in their first
# step (parallel tasks), with summed blocks at the front, the back and in the middle.
SHAPES = [
    (1,),
    (7,),
    (2, 3),
    (3, 1, 4),
    (2, 3, 4, 5),
    (2,) * 12,
    (41, 16, 16, 16),
    (7, 300, 40),
    (2, 3, 100000),
    (100000, 3, 2),
    (3, 400000),
    (64, 130, 128),
]


def subsets(d: int, rng: np.random.Generator, limit: int = 40) -> list[tuple[int, ...]]:
    every = [s for k in range(d + 1) for s in itertools.combinations(range(d), k)]
    if len(every) <= limit:
        return every
    return [every[i] for i in rng.choice(len(every), limit, replace=False)]


def case(shape: tuple[int, ...], seed: int):
    """A layout with a decoy clique first (non-zero offset), the clique of ``shape``, and a
    projection plan onto some of its subsets (attributes shifted by one for the decoy)."""
    rng = np.random.default_rng(seed)
    domain = Domain.from_sizes([3, *shape])
    clique = tuple(range(1, len(shape) + 1))
    layout = CliqueLayout(domain, [(0,), clique])
    subs = subsets(len(shape), rng)
    plan = SumOutPlan(layout, [(1, tuple(a + 1 for a in s)) for s in subs])
    x = rng.normal(size=layout.total_cells) * 30
    return layout, plan, subs, x, rng


@pytest.mark.parametrize("shape", SHAPES)
def test_project_and_expand_match_numpy(shape: tuple[int, ...]) -> None:
    layout, plan, subs, x, rng = case(shape, seed=len(shape))
    table = x[layout.slice(1)].reshape(shape)
    out = plan.project(x, np.full(plan.out_size, np.nan))
    vec = rng.normal(size=plan.out_size)
    got = plan.expand_add(x.copy(), vec, -0.7)
    want = x.copy()
    want_table = want[layout.slice(1)].reshape(shape)
    for p, s in enumerate(subs):
        slot = slice(plan.out_ptr[p], plan.out_ptr[p + 1])
        ref = reference_sum_out(table, s)
        np.testing.assert_allclose(out[slot], ref, rtol=1e-12, atol=1e-9 * np.prod(shape))
        alone = sum_onto_many(table, [[i in s for i in range(len(shape))]])[0]
        np.testing.assert_allclose(alone.ravel(), ref, rtol=1e-12, atol=1e-9 * np.prod(shape))
        reference_broadcast_add(want_table, s, vec[slot], -0.7)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-9)
    assert np.array_equal(got[layout.slice(0)], x[layout.slice(0)])  # the decoy is untouched
    # overwrite: the clique's old values are not read, as if it were zeroed first
    zeroed = x.copy()
    zeroed[layout.slice(1)] = 0.0
    over = plan.expand_add(x.copy(), vec, -0.7, overwrite=True)
    assert np.array_equal(over, plan.expand_add(zeroed, vec, -0.7))


def test_inf_and_nan_propagate_like_plain_sums() -> None:
    table = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    table[0, 1, 2] = -np.inf
    table[1, 2, 3] = np.nan
    for keep in itertools.product([False, True], repeat=3):
        kept = tuple(i for i in range(3) if keep[i])
        got = sum_onto_many(table, [keep])[0].ravel()
        np.testing.assert_array_equal(got, reference_sum_out(table, kept))


def test_steps_sum_largest_block_first() -> None:
    # blocks: keep 2 | sum 16 | keep 2 | sum 8 | keep 2 | sum 64
    keep = [True] + [False] * 4 + [True] + [False] * 3 + [True] + [False] * 6
    assert sumout_steps((2,) * 16, keep) == [(1024, 64, 1), (2, 16, 32), (4, 8, 2)]
    assert sumout_steps((3, 4), [True, True]) == []
    assert sumout_steps((3, 4), [False, False]) == [(1, 12, 1)]


def test_results_do_not_depend_on_thread_count() -> None:
    layout, plan, _, x, rng = case((64, 130, 128), seed=1)
    assert layout.sizes[1] > bp.PAR_MIN_CELLS_CHEAP
    vec = rng.normal(size=plan.out_size)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            out = plan.project(x, np.empty(plan.out_size))
            results.append((out, plan.expand_add(x.copy(), vec)))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("share", [1, 4, 16])
@pytest.mark.parametrize("seed", range(4))
def test_shared_plan_matches_direct_projections(share: int, seed: int) -> None:
    """Projections through shared intermediate tables equal the direct block sums, over
    several cliques (binary and mixed sizes), with repeated and whole-clique subsets."""
    rng = np.random.default_rng(seed)
    sizes = [2] * 10 + [3, 5, 4, 7]
    domain = Domain.from_sizes(sizes)
    layout = CliqueLayout(domain, [tuple(range(10)), (8, 9, 10, 11, 12, 13), (0, 13)])
    pairs = []
    for _ in range(30):
        c = int(rng.integers(len(layout)))
        clique = layout.cliques[c]
        k = int(rng.integers(1, len(clique) + 1))
        pairs.append((c, tuple(sorted(rng.choice(clique, k, replace=False).tolist()))))
    pairs += [pairs[0], (0, layout.cliques[0])]
    shared = SharedSumOutPlan(layout, pairs, share=share)
    direct = SumOutPlan(layout, pairs)
    assert np.array_equal(shared.out_ptr, direct.out_ptr)
    x = rng.normal(size=layout.total_cells)
    np.testing.assert_allclose(
        shared.project(x, np.empty(shared.out_size)),
        direct.project(x, np.empty(direct.out_size)),
        rtol=1e-12,
        atol=1e-11,
    )
    vec = rng.normal(size=shared.out_size)
    np.testing.assert_allclose(
        shared.expand_add(x.copy(), vec, 0.3), direct.expand_add(x.copy(), vec, 0.3), atol=1e-12
    )
