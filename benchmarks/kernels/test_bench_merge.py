"""The server's merge of the parties' sorted token lists (tokens/s): one linear pass over m
lists (the kernel with its concatenation, as the server calls it) against ``np.unique`` of
their concatenation and a ``searchsorted`` per list. m lists of n tokens each, 80% of them
shared by all m (the corpus's overlap); 2 and 3 lists of 800k tokens stand for a run of about
a million rows."""

import numpy as np
import pytest
from kernel_references import merge_sorted_numpy

from vertimrf.server.slots import merge_lists

SIZES = [
    pytest.param(3, 65_536, id="64k"),
    pytest.param(3, 1 << 20, marks=pytest.mark.large, id="1M"),
    pytest.param(2, 800_000, marks=pytest.mark.large, id="2x800k"),
    pytest.param(3, 800_000, marks=pytest.mark.large, id="3x800k"),
]


@pytest.mark.benchmark(group="slots: merge of sorted token lists")
@pytest.mark.parametrize(("m", "n"), SIZES)
def test_merge_sorted(pair, m: int, n: int) -> None:
    rng = np.random.default_rng(n)
    pool = np.unique(rng.integers(0, 2**64 - 1, 2 * n, dtype=np.uint64))
    shared = pool[: int(0.8 * n)]
    lists = [
        np.sort(np.concatenate([shared, pool[int(0.8 * n) + i :: m][: n - shared.size]]))
        for i in range(m)
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
