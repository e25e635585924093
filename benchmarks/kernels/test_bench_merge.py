"""The server's merge of the parties' sorted token lists (tokens/s): one linear pass over m
lists (the kernel with its concatenation, as the server calls it) against ``np.unique`` of
their concatenation and a ``searchsorted`` per list. Three lists of n tokens each, 80% of them
shared by all three (the corpus's overlap)."""

import numpy as np
import pytest
from kernel_references import merge_sorted_numpy

from vertimrf.server.slots import merge_lists

SIZES = [pytest.param(65_536, id="64k"), pytest.param(1 << 20, marks=pytest.mark.large, id="1M")]


@pytest.mark.benchmark(group="slots: merge of sorted token lists")
@pytest.mark.parametrize("n", SIZES)
def test_merge_sorted(pair, n: int) -> None:
    rng = np.random.default_rng(n)
    pool = np.unique(rng.integers(0, 2**64 - 1, 2 * n, dtype=np.uint64))
    shared = pool[: int(0.8 * n)]
    lists = [
        np.sort(np.concatenate([shared, pool[int(0.8 * n) + i :: 3][: n - shared.size]]))
        for i in range(3)
    ]

    def check(got: tuple, want: tuple) -> None:
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])

    pair(
        kernel=lambda: merge_lists(lists),
        reference=lambda: merge_sorted_numpy(lists),
        check=check,
        items=sum(t.size for t in lists),
        unit="tokens/s",
        reference_name="np.unique + searchsorted",
    )
