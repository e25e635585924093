"""PRF buckets of the secure rows: the capacity's bound, where each record goes, and that
neither the buckets nor an overflowing bucket change any released value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secure_runs import ids_overflowing
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.errors import ConfigError, RecordIDError
from vertimrf.party.records.aligned import AlignedTable
from vertimrf.protocol import from_preset, load_config
from vertimrf.protocol.buckets import (
    BALANCE_TAIL_BITS,
    bucket_capacity,
    overflow_log_bound,
    record_slots,
    spill_slots,
)

SECRET = bytes(range(32))
TARGET = -BALANCE_TAIL_BITS * math.log(2.0)


def _binomial_tail(n: int, p: Fraction, c: int) -> Fraction:
    """P(Bin(n, p) >= c), exactly."""
    return sum((math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(c, n + 1)), Fraction(0))


@pytest.mark.parametrize(("n", "buckets"), [(40, 2), (60, 4), (64, 8), (30, 16)])
def test_the_overflow_bound_is_above_the_exact_union_of_binomial_tails(n, buckets):
    """Chernoff-Hoeffding against the exact tail: B P(Bin(n, 1/B) > C) <= the bound, for
    every capacity from n / B to n (brute force over the binomial's terms)."""
    p = Fraction(1, buckets)
    for c in range(-(-n // buckets), n + 1):
        exact = buckets * _binomial_tail(n, p, c + 1)
        bound = overflow_log_bound(n, buckets, c)
        assert exact == 0 if bound == -math.inf else float(exact) <= math.exp(bound) * (1 + 1e-12)


@pytest.mark.parametrize(
    ("rows", "buckets", "capacity"),
    [(1000, 1, 1000), (1 << 20, 1, 1 << 20), (1 << 20, 16, 67480), (10**7, 64, 159392)],
)
def test_the_capacity_is_the_least_that_meets_the_tail_target(rows, buckets, capacity):
    """C meets 2^-40 and C - 1 does not (one bucket: max_rows itself)."""
    assert bucket_capacity(rows, buckets) == capacity
    assert overflow_log_bound(rows, buckets, capacity) <= TARGET
    if buckets > 1:
        assert overflow_log_bound(rows, buckets, capacity - 1) > TARGET


@pytest.mark.parametrize("buckets", [0, 3, 12, True, 2.0, 1 << 21])
def test_a_bucket_count_that_is_not_a_power_of_two_is_refused(buckets):
    with pytest.raises(ConfigError, match="power of two"):
        bucket_capacity(100, buckets)


def _naive_slots(counts, capacity):
    """Each bucket's records in order: ranks below the capacity at home, the rest in the
    first free rows of the table in (bucket, rank) order."""
    free = [b * capacity + r for b, k in enumerate(counts) for r in range(k, capacity)]
    out, spill = [], iter(free)
    for b, k in enumerate(counts):
        out += [b * capacity + r if r < capacity else next(spill) for r in range(k)]
    return out


@settings(max_examples=200, deadline=None, derandomize=True)
@given(data=st.data(), log_buckets=st.integers(0, 4), capacity=st.integers(1, 6))
def test_record_slots_are_the_naive_assignment_for_any_subset_of_buckets(
    data, log_buckets, capacity
):
    """Random counts (some over capacity; at most B C records): the slots of the whole table
    are the naive ones and distinct, and any subset of whole buckets gets the same slots."""
    buckets = 1 << log_buckets
    counts = data.draw(
        st.lists(st.integers(0, 2 * capacity), min_size=buckets, max_size=buckets).filter(
            lambda c: sum(c) <= buckets * capacity
        )
    )
    counts = np.array(counts, np.int64)
    bucket = np.repeat(np.arange(buckets), counts)
    slots = record_slots(bucket, counts, capacity)
    assert slots.tolist() == _naive_slots(counts.tolist(), capacity)
    assert np.unique(slots).size == slots.size and (slots < buckets * capacity).all()
    keep = data.draw(st.lists(st.booleans(), min_size=buckets, max_size=buckets))
    part = np.isin(bucket, np.flatnonzero(keep))
    assert record_slots(bucket[part], counts, capacity).tolist() == slots[part].tolist()
    assert spill_slots(counts, capacity).size == np.maximum(counts - capacity, 0).sum()


def _config(buckets, rows, n_cols=(3, 2)):
    spec = DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(n_cols)})
    return from_preset(
        "default", record_sets="equal",
        epsilon=1.0, delta=1e-6, spec=spec, parties=[("A", ["c0"]), ("B", ["c1"])],
        method="secure", max_rows=rows, secure_buckets=buckets,
    )  # fmt: skip


def test_an_overflowing_bucket_spills_into_free_rows_and_every_row_is_distinct():
    cfg = _config(8, 64)
    ids, plan = ids_overflowing(cfg, 64, 0, 3)
    codes = np.zeros((64, 1), np.int8)
    fp = ids.view(np.uint64)
    table = AlignedTable(codes, fp, SECRET, cfg.run_context(), 8, plan.capacity, 64)
    cols = table.columns(0, plan.rows, np.zeros(1, np.int64))
    assert (cols[:, 0] == 0).sum() == 64  # every record has a row
    assert (cols[: plan.capacity, 0] == 0).all()  # bucket 0 is full
    with pytest.raises(ConfigError, match="max_rows"):
        AlignedTable(codes, fp, SECRET, cfg.run_context(), 8, plan.capacity, 63)
    with pytest.raises(RecordIDError, match="duplicated"):
        AlignedTable(codes, np.r_[fp[:-1], fp[0]], SECRET, cfg.run_context(), 8, plan.capacity, 64)


def _run(cfg, ids, seed):
    rng = np.random.default_rng(seed)
    n = ids.size
    frame = pd.DataFrame({"id": ids, "c0": rng.integers(0, 3, n), "c1": rng.integers(0, 2, n)})
    data = {"A": frame[["id", "c0"]], "B": frame[["id", "c1"]].sample(frac=1.0, random_state=1)}
    run = local_run(data, cfg, SECRET, seed=seed)
    run.run()
    server = run.server.server.secure
    assert server is not None
    return server


def test_the_buckets_and_an_overflow_change_no_released_value():
    """A seeded run draws the same noise whatever the layout, and every release is a sum
    over all rows: one bucket and eight buckets with an overflowing bucket give the server
    the same first-release tables, the same request and the same model."""
    cfg8 = _config(8, 64)
    ids, plan = ids_overflowing(cfg8, 64, 5, 4)
    assert plan.rows == 8 * plan.capacity > 64
    one, eight = _run(_config(1, 64), ids, 3), _run(cfg8, ids, 3)
    assert one.data.first.values.keys() == eight.data.first.values.keys()
    for m, table in one.data.first.values.items():
        np.testing.assert_array_equal(table, eight.data.first.values[m])
    assert one.data.request == eight.data.request
    for a, b in zip(one.data.model.potentials, eight.data.model.potentials, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_buckets_are_kept_in_the_config_and_one_bucket_hashes_as_before(tmp_path):
    """A config file keeps B; at B = 1 the field is left out, so older configs keep their
    hash."""
    eight, one = _config(8, 64), _config(1, 64)
    eight.save(tmp_path / "eight.json")
    assert load_config(tmp_path / "eight.json").options.buckets == 8
    assert "buckets" not in one.to_dict()["options"]
    assert eight.config_hash() != one.config_hash()
