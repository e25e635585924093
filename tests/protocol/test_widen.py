"""A feature blob's values of ``each`` bytes widened to words (``widen``: one masked load a
value) against the byte-by-byte copy they replace, for every width of both words, counts
around the tail the loads leave to bytes, and pieces that end exactly at the last value."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.protocol.secure.features import widen


def _bytewise(piece: bytes, count: int, each: int, word: np.dtype) -> np.ndarray:
    out = np.zeros(count, word)
    out.view(np.uint8).reshape(-1, word.itemsize)[:, :each] = np.frombuffer(
        piece, np.uint8
    ).reshape(count, each)
    return out


@settings(max_examples=300, deadline=None)
@given(
    word=st.sampled_from([np.dtype("<u4"), np.dtype("<u8")]),
    data=st.data(),
    count=st.integers(0, 40),
)
def test_widened_values_are_the_bytes_copied_one_by_one(word, data, count):
    each = data.draw(st.integers(1, word.itemsize))
    piece = data.draw(st.binary(min_size=count * each, max_size=count * each))
    out = np.full(count + 2, np.iinfo(word).max, word)  # stale words from an earlier block
    widen(memoryview(bytearray(piece)), count, each, out)
    np.testing.assert_array_equal(out[:count], _bytewise(piece, count, each, word))
    assert (out[count:] == np.iinfo(word).max).all()  # nothing past the count is touched
