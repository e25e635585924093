"""A CSV batch of text or integer categories is encoded by arrow's lookup, not pandas: the
same codes as the encoder's path, the same "pandas reads it as text" verdict, and the
encoder's path (its codes or its error) for any batch holding a value that is no category
or an empty cell. Exhaustive over random categories and batches (hypothesis)."""

from __future__ import annotations

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
