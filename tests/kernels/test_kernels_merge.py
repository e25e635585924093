"""The linear merge of sorted token lists (the kernel, through the server's call) against
``np.unique`` of their concatenation (:func:`tests.naive.merge_sorted_ref`), on random lists
of several counts and overlaps."""

from __future__ import annotations

import numpy as np
import pytest

from tests.naive import merge_sorted_ref
from vertimrf.server.slots import merge_lists as _merge


@pytest.mark.parametrize("m", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("universe", [10, 1_000, 2**64 - 1])
def test_the_merge_is_the_sorted_union_with_each_tokens_lists(m, universe):
    rng = np.random.default_rng(m * 7 + universe % 97)
    for size in (0, 1, 17, 2_000):
        lists = [
            np.unique(rng.integers(0, universe, rng.integers(0, size + 1), dtype=np.uint64))
            for _ in range(m)
        ]
        got, want = _merge(lists), merge_sorted_ref(lists)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_the_largest_tokens_and_empty_lists_merge():
    top = np.array([2**64 - 2, 2**64 - 1], np.uint64)
    lists = [np.empty(0, np.uint64), top, top[1:], np.empty(0, np.uint64)]
    tokens, region = _merge(lists)
    assert tokens.tolist() == [2**64 - 2, 2**64 - 1]
    assert region.tolist() == [0b0010, 0b0110]
