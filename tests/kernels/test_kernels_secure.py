"""The share-product kernels against their exact Python-integer references, on the ring
words of both rings: uint64 (Z_{2^64}) and uint32 (Z_{2^32})."""

from collections.abc import Callable

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.naive import matmul_tn_u64_ref, onehot_scatter_u64_ref, row_dots_u64_ref
from vertimrf.kernels import secure

TOP = 2**64
MASK32 = np.uint64(2**32 - 1)

# The ring words the kernels get: a SecurePlan's ``word``. Party and server pass both operands
# of matmul_tn_u64, and the rows onehot_scatter_u64 adds, in that one word (masks expanded with
# word=plan.word, blobs opened with word=plan.word, hstacks of those), never a mix of the two.
WORDS = [np.uint64, np.uint32]

# (n, ka, kb): empty and single-column operands, column counts that are not multiples of the
# row tile or of the per-thread cut, several streamed record blocks with a partial last one,
# and a wide b whose record blocks are only MIN_ROWS long.
SHAPES = [
    (0, 3, 4),
    (0, 0, 0),
    (5, 0, 3),
    (5, 3, 0),
    (1, 1, 1),
    (7, 1, 1),
    (3, 5, 2),
    (300, 13, 9),
    (2500, 17, 7),
    (1100, 33, 31),
    (37, 6, 3000),
]


def shares(rng: np.random.Generator, n: int, k: int, word: type = np.uint64) -> np.ndarray:
    """Uniform ``word`` values with about half the entries within 16 of 2**bits (the word's
    wrap-around: products and sums of them overflow the word)."""
    top = 2 ** (8 * np.dtype(word).itemsize)
    x = rng.integers(0, top, size=(n, k), dtype=word, endpoint=False)
    near = rng.integers(top - 16, top, size=(n, k), dtype=word, endpoint=False)
    return np.where(rng.random((n, k)) < 0.5, near, x)


def check_product(got: np.ndarray, reference: Callable[[int], np.ndarray], word: type) -> None:
    """``got`` is uint64 and equals ``reference(64)``, the exact product modulo 2^64 (each
    word is widened to uint64 before it is multiplied or added); for uint32 words its low 32
    bits equal ``reference(32)``, the product in Z_{2^32}: what the party and server code keep
    after reducing with ``SecurePlan.ring_mask``."""
    assert got.dtype == np.uint64
    assert np.array_equal(got, reference(64))
    if word is np.uint32:
        assert np.array_equal(got & MASK32, reference(32))


def active_columns(rng: np.random.Generator, n: int, g: int, kb: int) -> np.ndarray:
    """Column indices in [-1, kb) (repeats allowed), with every fourth row all -1."""
    cols = rng.integers(-1, kb, size=(n, g), dtype=np.int64)
    cols[::4] = -1
    return cols


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_matmul_tn_matches_reference(shape: tuple[int, int, int], word: type) -> None:
    n, ka, kb = shape
    rng = np.random.default_rng(n + 7 * ka + 13 * kb)
    a, b = shares(rng, n, ka, word), shares(rng, n, kb, word)
    got = secure.matmul_tn_u64(a, b)
    assert got.shape == (ka, kb)
    check_product(got, lambda bits: matmul_tn_u64_ref(a, b, bits), word)


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("g", [1, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_onehot_scatter_matches_reference(shape: tuple[int, int, int], g: int, word: type) -> None:
    n, ka, kb = shape
    rng = np.random.default_rng(n + 7 * ka + 13 * kb + g)
    a, cols = shares(rng, n, ka, word), active_columns(rng, n, g, kb)
    got = secure.onehot_scatter_u64(a, cols, kb)
    assert got.shape == (ka, kb)
    check_product(got, lambda bits: onehot_scatter_u64_ref(a, cols, kb, bits), word)


def test_onehot_scatter_of_padding_rows_is_zero() -> None:
    rng = np.random.default_rng(3)
    a = shares(rng, 50, 9)
    got = secure.onehot_scatter_u64(a, np.full((50, 4), -1, np.int64), 6)
    assert np.array_equal(got, np.zeros((9, 6), np.uint64))


@pytest.mark.parametrize("seed", range(3))
def test_onehot_scatter_equals_product_with_explicit_one_hot(seed: int) -> None:
    """One-hot encodings of g attributes (disjoint column blocks), with padding rows, give
    the same product through the scatter as through the dense one-hot matrix."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 12, size=4)
    offsets = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    kb, n, ka = int(sizes.sum()), 1500, 19
    cols = rng.integers(0, sizes, size=(n, sizes.size)) + offsets
    cols[rng.random(n) < 0.1] = -1
    y = np.zeros((n, kb), np.uint64)
    rows, j = np.nonzero(cols >= 0)
    y[rows, cols[rows, j]] = 1
    a = shares(rng, n, ka)
    assert np.array_equal(secure.onehot_scatter_u64(a, cols, kb), secure.matmul_tn_u64(a, y))


def test_results_do_not_depend_on_thread_count() -> None:
    rng = np.random.default_rng(11)
    a, b = shares(rng, 3000, 41), shares(rng, 3000, 23)
    cols = active_columns(rng, 3000, 3, 23)
    before = numba.get_num_threads()
    results = []
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            results.append((secure.matmul_tn_u64(a, b), secure.onehot_scatter_u64(a, cols, 23)))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(results[0][0], results[1][0])
    assert np.array_equal(results[0][1], results[1][1])


def words(word: type) -> st.SearchStrategy[int]:
    """Any value of ``word``, often one of the 16 largest (sums and products wrap)."""
    top = 2 ** (8 * np.dtype(word).itemsize)
    return st.integers(0, top - 1) | st.integers(top - 16, top - 1)


@st.composite
def matmul_case(draw: st.DrawFn, word: type) -> tuple[np.ndarray, np.ndarray]:
    n, ka, kb = draw(st.integers(0, 40)), draw(st.integers(0, 12)), draw(st.integers(0, 12))
    a = draw(hnp.arrays(word, (n, ka), elements=words(word)))
    b = draw(hnp.arrays(word, (n, kb), elements=words(word)))
    return a, b


@st.composite
def scatter_case(draw: st.DrawFn, word: type) -> tuple[np.ndarray, np.ndarray, int]:
    n, ka, kb, g = (
        draw(st.integers(0, 40)),
        draw(st.integers(0, 12)),
        draw(st.integers(0, 12)),
        draw(st.integers(0, 4)),
    )
    a = draw(hnp.arrays(word, (n, ka), elements=words(word)))
    cols = draw(hnp.arrays(np.int64, (n, g), elements=st.integers(-1, kb - 1)))
    return a, cols, kb


@pytest.mark.parametrize("word", WORDS)
@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.data())
def test_matmul_tn_property(word: type, data: st.DataObject) -> None:
    a, b = data.draw(matmul_case(word))
    check_product(secure.matmul_tn_u64(a, b), lambda bits: matmul_tn_u64_ref(a, b, bits), word)


@pytest.mark.parametrize("word", WORDS)
@settings(max_examples=100, deadline=None, derandomize=True)
@given(data=st.data())
def test_onehot_scatter_property(word: type, data: st.DataObject) -> None:
    a, cols, kb = data.draw(scatter_case(word))
    got = secure.onehot_scatter_u64(a, cols, kb)
    check_product(got, lambda bits: onehot_scatter_u64_ref(a, cols, kb, bits), word)


@pytest.mark.parametrize(
    "pair", [(np.uint64, np.uint64), (np.uint32, np.uint8), (np.uint64, np.uint8)]
)
@pytest.mark.parametrize("shape", [(0, 5), (1, 1), (7, 64), (33, 130), (200, 3)])
def test_row_dots_match_reference(shape: tuple[int, int], pair: tuple[type, type]) -> None:
    """Each row's inner product, mod 2^64, on random words (x at its type's full range, y
    either full words or bits), against Python integers."""
    rng = np.random.default_rng(shape[0] * 131 + shape[1])
    x = rng.integers(0, np.iinfo(pair[0]).max, shape, dtype=pair[0], endpoint=True)
    top = 1 if pair[1] is np.uint8 else np.iinfo(pair[1]).max
    y = rng.integers(0, top, shape, dtype=pair[1], endpoint=True)
    got = secure.row_dots_u64(x, y)
    assert got.dtype == np.uint64 and np.array_equal(got, row_dots_u64_ref(x, y))
