"""The tokens message has a public length: a token list is padded with zero words to the
plan's max_tokens (its count inside); a message of another length, with a count past it or
with words in the padding is refused. It reads back whole or by blocks of any size."""

from __future__ import annotations

import io

import numpy as np
import pytest

from vertimrf.errors import MessageError
from vertimrf.protocol.securemsg import (
    TokenList,
    read_tokens,
    tokens_head,
    tokens_size,
    write_tokens,
)

HASH = "ab" * 32


def _message(tokens: np.ndarray, most: int) -> bytes:
    out = io.BytesIO()
    head = tokens_head(HASH, "A")
    write_tokens(out, head, tokens.size, most, [tokens[:2], tokens[2:]])
    assert len(out.getvalue()) == tokens_size(head, most)
    return out.getvalue()


@pytest.mark.parametrize("count", [0, 1, 5, 40])
def test_a_token_list_of_any_count_has_one_length_and_reads_back(count):
    tokens = np.sort(np.random.default_rng(count).integers(1, 2**63, count, dtype=np.uint64))
    data = _message(tokens, 40)
    assert len(data) == len(_message(np.arange(1, 3, dtype=np.uint64), 40))
    np.testing.assert_array_equal(read_tokens(data, HASH, "A", 40), tokens)
    listed = TokenList(memoryview(data), HASH, "A", 40)
    assert listed.count == count
    for step in (1, 3, 64):
        blocks = list(listed.blocks(step))
        assert all(b.size <= step for b in blocks)
        np.testing.assert_array_equal(np.concatenate([np.empty(0, np.uint64), *blocks]), tokens)


def test_other_lengths_counts_and_padding_are_refused():
    data = _message(np.arange(1, 6, dtype=np.uint64), 10)
    with pytest.raises(MessageError, match="not padded"):
        read_tokens(data, HASH, "A", 11)
    with pytest.raises(MessageError, match="not padded"):
        read_tokens(data[:-8], HASH, "A", 10)
    at = len(tokens_head(HASH, "A"))
    for bad in (data[:at] + (11).to_bytes(8, "little") + data[at + 8 :], data[:-1] + b"\1"):
        with pytest.raises(MessageError, match="malformed"):
            read_tokens(bad, HASH, "A", 10)
    with pytest.raises(MessageError):
        write_tokens(io.BytesIO(), b"", 3, 2, [np.arange(3, dtype=np.uint64)])
