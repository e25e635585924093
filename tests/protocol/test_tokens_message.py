"""The tokens message is sealed to the server and has a public length: a token list is padded
with zero words to the plan's max_tokens (its count inside), encrypted under a key of the
party's own, which is sealed to the server's key. Only the server opens it; the same sealing
gives the same bytes, another party's sealing other bytes; a message of another length, an
altered one, one with a count past max_tokens or with words in the padding is refused. It
reads back whole or by blocks of any size."""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from vertimrf.crypto.aead import encrypt_chunks_to
from vertimrf.crypto.keys import KeyPair, seal
from vertimrf.errors import ChannelError, MessageError
from vertimrf.protocol.secure.tokens import (
    TokenList,
    TokenSeal,
    read_tokens,
    tokens_head,
    tokens_size,
    write_tokens,
)

HASH = "ab" * 32


def _key(name: str) -> KeyPair:
    raw = hashlib.sha256(b"tokens-message-test/" + name.encode()).digest()
    return KeyPair(name, X25519PrivateKey.from_private_bytes(raw))


SERVER = _key("server")


def _sealing(who: str = "A") -> TokenSeal:
    material = [hashlib.sha256(f"{who}/{what}".encode()).digest() for what in "knr"]
    return TokenSeal(SERVER.public(), material[0], material[1][:12], material[2])


def _message(tokens: np.ndarray, most: int, sealing: TokenSeal | None = None) -> bytes:
    out = io.BytesIO()
    head = tokens_head(HASH, "A")
    write_tokens(out, head, tokens.size, most, [tokens[:2], tokens[2:]], sealing or _sealing())
    assert len(out.getvalue()) == tokens_size(head, most)
    return out.getvalue()


@pytest.mark.parametrize("count", [0, 1, 5, 40])
def test_a_token_list_of_any_count_has_one_length_and_reads_back(count):
    tokens = np.sort(np.random.default_rng(count).integers(1, 2**63, count, dtype=np.uint64))
    data = _message(tokens, 40)
    assert len(data) == len(_message(np.arange(1, 3, dtype=np.uint64), 40))
    np.testing.assert_array_equal(read_tokens(data, HASH, "A", 40, SERVER), tokens)
    listed = TokenList(memoryview(data), HASH, "A", 40, SERVER)
    assert listed.count == count
    for step in (1, 3, 64):
        blocks = list(listed.blocks(step))
        assert all(b.size <= step for b in blocks)
        np.testing.assert_array_equal(np.concatenate([np.empty(0, np.uint64), *blocks]), tokens)


def test_only_the_server_opens_it_and_only_its_sender_can_make_its_bytes():
    """The same list under the same sealing gives the same bytes; under another party's
    sealing (what a peer that knows the list could make) no byte past the public head is
    shared in place; no other key pair opens it, and no altered byte passes."""
    tokens = np.arange(1, 9, dtype=np.uint64)
    data = _message(tokens, 16)
    assert _message(tokens, 16) == data
    guess = _message(tokens, 16, _sealing("B"))
    at = len(tokens_head(HASH, "A"))
    assert guess[:at] == data[:at]
    body = np.frombuffer(data[at:], np.uint8) == np.frombuffer(guess[at:], np.uint8)
    assert body.mean() < 0.02  # chance agreement of bytes is 1/256
    assert hashlib.sha256(guess).digest() != hashlib.sha256(data).digest()
    with pytest.raises(ChannelError):
        read_tokens(data, HASH, "A", 16, _key("B"))
    for at_byte in (at + 3, at + 100, len(data) - 1):
        bad = bytearray(data)
        bad[at_byte] ^= 1
        with pytest.raises(ChannelError):
            read_tokens(bytes(bad), HASH, "A", 16, SERVER)


def _forged(words: np.ndarray, most: int) -> bytes:
    """A message whose sealed plaintext is ``words`` (count, then the padded list), made
    with the writer's own key: what a faulty party could send."""
    head, sealing = tokens_head(HASH, "A"), _sealing()
    out = io.BytesIO()
    out.write(head + seal(SERVER.public(), sealing.key, head, randomness=sealing.randomness))
    data = words.astype("<u8").tobytes()
    encrypt_chunks_to(out, sealing.key, [data], len(data), head, nonce=sealing.nonce)
    assert len(out.getvalue()) == tokens_size(head, most)
    return out.getvalue()


def test_other_lengths_counts_and_padding_are_refused():
    data = _message(np.arange(1, 6, dtype=np.uint64), 10)
    with pytest.raises(MessageError, match="not padded"):
        read_tokens(data, HASH, "A", 11, SERVER)
    with pytest.raises(MessageError, match="not padded"):
        read_tokens(data[:-8], HASH, "A", 10, SERVER)
    past = np.zeros(11, np.uint64)
    past[0] = 11
    padded = np.zeros(11, np.uint64)
    padded[0], padded[1], padded[7] = 1, 5, 9
    for words in (past, padded):
        with pytest.raises(MessageError, match="malformed"):
            read_tokens(_forged(words, 10), HASH, "A", 10, SERVER)
    with pytest.raises(MessageError, match="another run|belongs to the run"):
        read_tokens(data, "cd" * 32, "A", 10, SERVER)
    with pytest.raises(MessageError):
        write_tokens(io.BytesIO(), b"", 3, 2, [np.arange(3, dtype=np.uint64)], _sealing())
