"""A printed privacy loss is rounded up, never below the value (a float product that
rounds down is bumped), and a value given as a short decimal prints as given: a delta of
1e-05 printed as 1.1e-05 (its double lies a hair above 1e-05)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vertimrf.privacy.zcdp import round_up


def test_short_decimals_print_as_given_and_others_round_up():
    assert [round_up(x, 2) for x in (1e-5, 1e-6, 2.5e-7, 3.0)] == ["1e-05", "1e-06", "2.5e-07", "3"]
    assert round_up(1.25e-7, 2) == "1.3e-07" and round_up(0.123412, 3) == "0.124"
    assert round_up(0.30000000000000004, 4) == "0.3001"  # the double is above 0.3


@given(st.floats(min_value=1e-12, max_value=1e6), st.integers(min_value=1, max_value=6))
def test_the_printed_value_is_never_below_the_value(x, digits):
    assert float(round_up(x, digits)) >= x
