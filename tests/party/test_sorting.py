"""stable_order is numpy's stable argsort, ties or none, for every key type the records sort
(hypothesis, against ``np.argsort(kind="stable")``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.party.records.sorting import stable_order


@settings(max_examples=200, deadline=None)
@given(
    size=st.integers(0, 300),
    span=st.sampled_from([2, 50, 2**20, 2**63]),
    dtype=st.sampled_from([np.uint64, np.int64, np.int32]),
    seed=st.integers(0, 2**32 - 1),
)
def test_stable_order_is_the_stable_argsort(size, span, dtype, seed):
    high = min(span, int(np.iinfo(dtype).max))
    keys = np.random.default_rng(seed).integers(0, high, size, dtype=np.int64).astype(dtype)
    order, ordered = stable_order(keys)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(ordered, keys[order])


def test_a_tie_keeps_the_records_in_their_order():
    keys = np.array([5, 3, 5, 1, 3, 5], np.uint64)
    assert stable_order(keys)[0].tolist() == [3, 1, 4, 0, 2, 5]
