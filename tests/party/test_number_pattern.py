"""A CSV batch's exact-number check takes a fast path for plain digits; it says what the
patterns say, on any text (hypothesis, against pyarrow's regex match of each pattern)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.party.records.table_input import _INTEGER, _NUMBER, _matches

CELLS = st.one_of(
    st.none(),
    st.text(alphabet="0123456789", min_size=0, max_size=22),
    st.text(alphabet="0123456789-.eE+ ٣", min_size=0, max_size=22),
)


@settings(max_examples=300, deadline=None)
@given(cells=st.lists(CELLS, min_size=0, max_size=12), pattern=st.sampled_from([_INTEGER, _NUMBER]))
def test_the_digit_path_agrees_with_the_pattern(cells, pattern):
    values = pa.chunked_array([pa.array(cells, pa.string())])
    want = bool(pc.all(pc.match_substring_regex(values, pattern), min_count=0).as_py())
    assert _matches(values, pattern) == want
