"""The secure product's local share products modulo 2**64 (multiply-adds/s): ``a.T @ b`` of
two tall share matrices, and ``a.T @ Y`` for a one-hot Y given by its active columns (one
add of a row of ``a`` per active entry)."""

import numpy as np
import pytest
from kernel_references import onehot_scatter_numpy

from vertimrf.kernels.secure import matmul_tn_u64, onehot_scatter_u64, row_dots_u64

ROWS = [pytest.param(10_000, id="10k"), pytest.param(1_000_000, marks=pytest.mark.large, id="1M")]
KA, KB = 32, 32  # share columns on each side
G, WIDTH = 4, 48  # active columns per row of the one-hot operand, and its width


def _shares(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return rng.integers(0, 2**64, (n, k), dtype=np.uint64)


@pytest.mark.benchmark(group="secure product: a.T @ b")
@pytest.mark.parametrize("n", ROWS)
def test_matmul_tn(pair, n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = _shares(rng, n, KA), _shares(rng, n, KB)
    part = min(n, 100_000)  # numpy's integer matmul is timed on at most 100k rows
    pair(
        kernel=lambda: matmul_tn_u64(a, b),
        reference=lambda: a[:part].T @ b[:part],
        check=lambda got, want: np.testing.assert_array_equal(
            matmul_tn_u64(a[:part], b[:part]) if part < n else got, want
        ),
        items=n * KA * KB,
        unit="multiply-adds/s",
        reference_name="numpy uint64 matmul",
        reference_fraction=part / n,
    )


@pytest.mark.benchmark(group="secure product: one-hot scatter")
@pytest.mark.parametrize("n", ROWS)
def test_onehot_scatter(pair, n: int) -> None:
    rng = np.random.default_rng(n + 1)
    a = _shares(rng, n, KA)
    cols = rng.integers(-1, WIDTH, (n, G), dtype=np.int64)
    active = int((cols >= 0).sum())
    part = min(n, 100_000)
    part_active = int((cols[:part] >= 0).sum())
    pair(
        kernel=lambda: onehot_scatter_u64(a, cols, WIDTH),
        reference=lambda: onehot_scatter_numpy(a[:part], cols[:part], WIDTH),
        check=lambda got, want: np.testing.assert_array_equal(
            onehot_scatter_u64(a[:part], cols[:part], WIDTH) if part < n else got, want
        ),
        items=active * KA,
        unit="multiply-adds/s",
        reference_name="numpy add.at",
        reference_fraction=part_active / active,
    )


@pytest.mark.benchmark(group="secure product: coins, row dots")
def test_row_dots(pair) -> None:
    """Coins: each cell's inner product of a row of mask words with a row of bits (the
    coins' cross term), against numpy's multiply and sum."""
    rng = np.random.default_rng(5)
    words = rng.integers(0, 2**32, (2_000, 2_048), dtype=np.uint32)
    bits = rng.integers(0, 2, (2_000, 2_048), dtype=np.uint8)
    pair(
        kernel=lambda: row_dots_u64(words, bits),
        reference=lambda: (words.astype(np.uint64) * bits).sum(axis=1, dtype=np.uint64),
        check=np.testing.assert_array_equal,
        items=words.size,
        unit="multiply-adds/s",
        reference_name="numpy multiply and sum",
    )
