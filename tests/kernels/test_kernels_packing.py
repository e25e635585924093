"""The masked-feature kernels against their exact Python references (tests/naive.py), on
both ring words (uint32, uint64), every byte count and shapes from empty to several packing
blocks; and the party's packer gives the library's numpy packing byte for byte."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from tests.naive import onehot_minus_ref, pack_low_ref
from vertimrf.kernels.packing import onehot_minus, pack_low
from vertimrf.party.secure.features import packed
from vertimrf.product.dealer import mask_features
from vertimrf.protocol.secure.features import low_bytes

WORDS = [np.uint32, np.uint64]
# (rows, k, groups): empty, one cell, groups wider than k's share, rows over a block
SHAPES = [(0, 3, 1), (1, 1, 1), (3, 0, 0), (7, 5, 2), (300, 41, 6), (1500, 157, 8)]


def _words(rng: np.random.Generator, shape: tuple[int, ...], word: type) -> np.ndarray:
    """Uniform words, half of them within 16 of the wrap (where a sign error shows)."""
    top = np.iinfo(word).max
    x = rng.integers(0, top, shape, dtype=word, endpoint=True)
    near = rng.integers(top - 16, top, shape, dtype=word, endpoint=True)
    return np.where(rng.random(shape) < 0.5, near, x).astype(word)


def _cols(rng: np.random.Generator, rows: int, k: int, groups: int) -> np.ndarray:
    """One column per group (a repeat adds 1 twice in both), -1 (a padding row's) in about
    one cell of ten."""
    if k == 0 or groups == 0:
        return np.full((rows, groups), -1, np.int64)
    cols = rng.integers(0, k, (rows, groups), dtype=np.int64)
    return np.where(rng.random((rows, groups)) < 0.1, -1, cols)


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("shape", SHAPES)
def test_onehot_minus_matches_reference(word: type, shape: tuple[int, int, int]) -> None:
    rows, k, groups = shape
    rng = np.random.default_rng(rows * 1000 + k)
    mask, cols = _words(rng, (rows, k), word), _cols(rng, rows, k, groups)
    want = onehot_minus_ref(mask, cols)
    got = mask.copy()
    onehot_minus(got, cols)
    np.testing.assert_array_equal(got, want)
    kept = mask.copy()
    np.testing.assert_array_equal(mask_features(cols, kept), want)
    np.testing.assert_array_equal(kept, mask)  # not in place: the mask is left as it was


@pytest.mark.parametrize("word", WORDS)
@pytest.mark.parametrize("count", [0, 1, 5, 1000, 70_000])
def test_pack_low_matches_reference(word: type, count: int) -> None:
    rng = np.random.default_rng(count)
    words = _words(rng, (count,), word)
    for size in range(1, np.dtype(word).itemsize + 1):
        out = np.empty(count * size, np.uint8)
        pack_low(words, size, out)
        want = pack_low_ref(words[: min(count, 2000)], size)
        assert out[: len(want)].tobytes() == want
        assert packed(words, size).tobytes() == low_bytes(words, size).tobytes()


@settings(max_examples=60, deadline=None)
@given(
    words=hnp.arrays(st.sampled_from(WORDS), st.integers(0, 40)),
    size=st.integers(1, 8),
)
def test_packers_agree(words: np.ndarray, size: int) -> None:
    size = min(size, words.dtype.itemsize)
    assert packed(words, size).tobytes() == pack_low_ref(words, size)
    assert low_bytes(words, size).tobytes() == pack_low_ref(words, size)


def test_onehot_minus_refuses_a_column_past_the_width() -> None:
    mask = np.zeros((3, 4), np.uint32)
    cols = np.array([[0], [3], [4]], np.int64)
    with pytest.raises(IndexError, match="past its row's width"):
        onehot_minus(mask, cols)
