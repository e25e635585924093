"""CarEst's max-merges: per cell of a marginal, the union sketch (the maximum of its attributes'
complement sketches over t repetitions), then the containment count (the repetitions in which
the sketch of all records beats the union: the default estimator) or a table sum over the
repetitions (the harmonic one) (cells/s)."""

import numpy as np
import pytest
from kernel_references import union_sketches

from vertimrf.kernels.carest import union_exceed_counts, union_table_sums

T = 2000
# (marginal's domain sizes, cells the reference is timed on): a 2-way marginal the size of
# Adult's largest cross pair, and a 3-way marginal of 100 x 100 x 100 = 1M cells.
SHAPES = [
    pytest.param((41, 16), None, id="41x16"),
    pytest.param((100, 100, 100), 20_000, marks=pytest.mark.large, id="100x100x100"),
]


def _sketches(sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Complement sketches (rows, t) uint8 with the marginal's attributes from row 3, their
    first rows and sizes, and the sketch of all records."""
    rng = np.random.default_rng(sum(sizes))
    comp_t = rng.integers(0, 40, (sum(sizes) + 3, T)).astype(np.uint8)
    rows = np.cumsum([3, *sizes[:-1]]).astype(np.int64)
    full = rng.integers(0, 45, T).astype(np.uint8)
    return comp_t, rows, np.array(sizes, dtype=np.int64), full


def _cells(sizes: tuple[int, ...], reference_cells: int | None) -> tuple[int, np.ndarray]:
    total = int(np.prod(sizes))
    return total, np.arange(total if reference_cells is None else reference_cells)


@pytest.mark.benchmark(group="CarEst: containment counts")
@pytest.mark.parametrize(("sizes", "reference_cells"), SHAPES)
def test_union_exceed_counts(pair, sizes, reference_cells) -> None:
    comp_t, rows, sz, full = _sketches(sizes)
    total, cells = _cells(sizes, reference_cells)

    def check(got: np.ndarray, want: np.ndarray) -> None:
        np.testing.assert_array_equal(got[: cells.size], want)

    pair(
        kernel=lambda: union_exceed_counts(comp_t, rows, sz, full),
        reference=lambda: (full > union_sketches(comp_t, rows, sz, cells)).sum(axis=1),
        check=check,
        items=total,
        unit="cells/s",
        reference_name="numpy maximum",
        reference_fraction=cells.size / total,
    )


@pytest.mark.benchmark(group="CarEst: table sums")
@pytest.mark.parametrize(("sizes", "reference_cells"), SHAPES)
def test_union_table_sums(pair, sizes, reference_cells) -> None:
    comp_t, rows, sz, _ = _sketches(sizes)
    total, cells = _cells(sizes, reference_cells)
    table = 2.0 ** -np.arange(256)

    def check(got: np.ndarray, want: np.ndarray) -> None:
        # the kernel adds the t terms in order, numpy pairwise: equal to rounding
        np.testing.assert_allclose(got[: cells.size], want, rtol=1e-12)

    pair(
        kernel=lambda: union_table_sums(comp_t, rows, sz, table),
        reference=lambda: table[union_sketches(comp_t, rows, sz, cells)].sum(axis=1),
        check=check,
        items=total,
        unit="cells/s",
        reference_name="numpy maximum",
        reference_fraction=cells.size / total,
    )
