"""split_records: each party's rows of one table, a fraction F of every party's records held by
every party and the rest by that party alone; checked by counting, row by row, who holds what."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vertimrf.datasets.overlap import split_records
from vertimrf.errors import ConfigError

SIZES = (0, 1, 2, 7, 10, 101, 1000, 21_574)
PARTIES = ("A", "B", "C", "D")
FRACTIONS = (0.0, 0.3, 0.5, 0.8, 1.0)


def _expected(n: int, m: int, f: float) -> tuple[int, int]:
    """(s, r) by the documented formula."""
    s = round(n * f / (f + m * (1 - f)))
    return s, math.floor((n - s) / m)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("m", (2, 3, 4))
@pytest.mark.parametrize("f", FRACTIONS)
def test_counts_follow_the_formula_row_by_row(n, m, f):
    s, r = _expected(n, m, f)
    held = split_records(n, PARTIES[:m], f, np.random.default_rng(1))
    assert list(held) == list(PARTIES[:m])
    holders = np.zeros(n, dtype=np.int64)  # how many parties hold each row
    for rows in held.values():
        assert rows.dtype == np.int64 and len(rows) == s + r
        assert len(np.unique(rows)) == len(rows) and ((rows >= 0) & (rows < n)).all()
        holders[rows] += 1
    assert (holders == m).sum() == s  # shared: in every party's set
    assert (holders == 1).sum() == m * r  # private: in exactly one
    assert (holders == 0).sum() == n - s - m * r < m  # left over: fewer than m
    assert ((holders == 0) | (holders == 1) | (holders == m)).all()


@pytest.mark.parametrize("m", (2, 3, 4))
@pytest.mark.parametrize("f", FRACTIONS)
def test_the_shared_fraction_of_each_party_is_f(m, f):
    s, r = _expected(100_000, m, f)
    # s is rounded (within 1/2) and r floored (within 1) from the exact real solution
    assert abs(s / (s + r) - f) <= 2 / (s + r)


def test_overlap_one_is_every_row_in_the_table_order_and_draws_nothing():
    rng = np.random.default_rng(5)
    held = split_records(50, ["A", "B", "C"], 1.0, rng)
    for rows in held.values():
        assert (rows == np.arange(50)).all()
    assert rng.integers(1 << 62) == np.random.default_rng(5).integers(1 << 62)


def test_overlap_zero_gives_disjoint_sets():
    held = split_records(10, ["A", "B", "C"], 0.0, np.random.default_rng(0))
    assert all(len(rows) == 3 for rows in held.values())
    assert len(np.unique(np.concatenate(list(held.values())))) == 9


def test_each_party_lists_its_rows_in_its_own_order():
    held = split_records(1000, ["A", "B", "C"], 0.8, np.random.default_rng(2))
    shared = np.intersect1d(np.intersect1d(held["A"], held["B"]), held["C"])
    orders = [rows[np.isin(rows, shared)] for rows in held.values()]
    assert len({tuple(o) for o in orders}) == 3  # three different orders of the shared rows
    assert all((np.diff(o) < 0).any() for o in orders)  # and none is the table's order


def test_same_seed_same_rows_and_another_seed_others():
    def draw(seed):
        return split_records(500, ["A", "B"], 0.5, np.random.default_rng(seed))

    first, again, other = draw(7), draw(7), draw(8)
    assert all((first[p] == again[p]).all() for p in "AB")
    assert not all(np.array_equal(np.sort(first[p]), np.sort(other[p])) for p in "AB")


@pytest.mark.parametrize("f", (-0.1, 1.01, math.nan, math.inf))
def test_a_fraction_outside_0_1_is_one_line(f):
    with pytest.raises(ConfigError, match=r"overlap must be a fraction from 0 to 1") as err:
        split_records(10, ["A", "B"], f, np.random.default_rng(0))
    assert "\n" not in str(err.value)


def test_two_parties_of_one_name_are_refused():
    with pytest.raises(ConfigError, match="distinct"):
        split_records(10, ["A", "A"], 0.5, np.random.default_rng(0))
