"""A CSV batch of text or integer categories is encoded by arrow's lookup, and a Parquet batch
of integer categories by a search of the sorted categories, not pandas: the same codes as the
encoder's path, the same "pandas reads it as text" verdict, and the encoder's path (its codes
or its error) for any batch holding a value that is no category or an empty cell. Exhaustive
over random categories and batches (hypothesis)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.domain import ColumnSpec
from vertimrf.party.records.table_input import _Column

TEXTS = st.sampled_from(["a", "b b", "007", "1", "-2", "1e3", "nan", "True", "x", "é", " 3 "])
INTS = st.integers(-(2**40), 2**40)


def _both(spec: ColumnSpec) -> tuple[_Column, _Column]:
    """The column with arrow's lookup, and the same column on the encoder's path only."""
    looked, plain = _Column(spec, typed=False), _Column(spec, typed=False)
    plain._lookup = None
    return looked, plain


def _same(spec: ColumnSpec, cells: list[str | None]) -> None:
    looked, plain = _both(spec)
    batch = pa.chunked_array([pa.array(cells, pa.string())])
    got, want = looked.encode(batch), plain.encode(batch)
    assert (got is None) == (want is None)
    if want is not None:
        assert got is not None and got.dtype == want.dtype and got.tolist() == want.tolist()
    assert looked.text_seen == plain.text_seen and looked.settled() == plain.settled()


@settings(max_examples=150, deadline=None)
@given(
    categories=st.lists(TEXTS, min_size=1, max_size=6, unique=True),
    picks=st.lists(st.integers(0, 9), min_size=0, max_size=40),
    stray=st.sampled_from([None, "zz", ""]),
)
def test_text_categories_are_looked_up_as_pandas_matches_them(categories, picks, stray):
    spec = ColumnSpec("t", "categorical", tuple(categories))
    cells = [categories[k % len(categories)] for k in picks]
    _same(spec, cells)
    _same(spec, [*cells, stray])  # not a category, or empty: the encoder's path


@settings(max_examples=150, deadline=None)
@given(
    categories=st.lists(INTS, min_size=1, max_size=6, unique=True),
    picks=st.lists(st.integers(0, 9), min_size=0, max_size=40),
    stray=st.sampled_from(["12.5", "abc", "99999999999999999999", None]),
)
def test_integer_categories_are_looked_up_as_pandas_matches_them(categories, picks, stray):
    spec = ColumnSpec("i", "categorical", tuple(categories))
    cells = [str(categories[k % len(categories)]) for k in picks]
    _same(spec, cells)
    _same(spec, [*cells, stray])


@settings(max_examples=150, deadline=None)
@given(
    categories=st.lists(st.one_of(st.integers(-50, 50), INTS), min_size=1, max_size=6, unique=True),
    picks=st.lists(st.integers(0, 9), min_size=0, max_size=40),
    stray=st.sampled_from([51, -51, 2**41, None]),
    arrow_type=st.sampled_from([pa.int64(), pa.int32(), pa.float64(), pa.uint64()]),
)
def test_parquet_integer_categories_are_searched_as_pandas_matches_them(
    categories, picks, stray, arrow_type
):
    spec = ColumnSpec("i", "categorical", tuple(categories))
    cells = [categories[k % len(categories)] for k in picks]
    for batch_cells in (cells, [*cells, stray]):
        try:
            batch = pa.chunked_array([pa.array(batch_cells, arrow_type)])
        except (pa.ArrowInvalid, OverflowError):
            continue  # a value this type cannot hold
        searched, plain = _Column(spec, typed=True), _Column(spec, typed=True)
        plain._ints = None
        got, want = searched.encode(batch), plain.encode(batch)
        assert (got is None) == (want is None)
        if want is not None:
            assert got is not None and got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)


def test_a_parquet_batch_of_integer_categories_skips_pandas():
    spec = ColumnSpec("i", "categorical", (30, 10, 20))
    column = _Column(spec, typed=True)
    codes = column._looked_up(pa.chunked_array([pa.array([10, 20, 30, 10], pa.int16())]))
    assert codes is not None and codes.tolist() == [1, 2, 0, 1]
    wide = _Column(ColumnSpec("i", "categorical", (0, 2**30)), typed=True)
    assert wide._looked_up(pa.chunked_array([pa.array([0], pa.int64())])) is None  # pandas'
