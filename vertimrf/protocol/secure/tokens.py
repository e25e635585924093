"""A party's tokens message (partial record sets): its sorted token list, sealed to the
server and padded to the run's public length."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from vertimrf.crypto.aead import ReadOnce, decrypt_chunks, encrypt_chunks_to
from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.crypto.keys import KeyPair, PublicKey, open_sealed, seal
from vertimrf.errors import MessageError
from vertimrf.protocol.secure import wire

TOKENS_MAGIC = b"VMRFTOK3"  # then the config hash (64 hex), the name, the sealed key and list
# The tokens message's key sealed to the server: version, ephemeral key, nonce, key, tag.
SEALED_KEY_BYTES = 1 + 32 + NONCE_BYTES + 32 + TAG_BYTES
_MALFORMED = "the tokens message is malformed: have the party send it again."


def tokens_head(config_hash: str, party: str) -> bytes:
    """The start of ``party``'s tokens message for the server (partial record sets): the
    magic, the run's config hash (64 hex) and the party's name (one length byte, UTF-8).
    The sealed key and the encrypted list follow (:func:`write_tokens`)."""
    name = party.encode("utf-8")
    return TOKENS_MAGIC + config_hash.encode() + len(name).to_bytes(1, "little") + name


def tokens_size(head: bytes, most: int) -> int:
    """The length of every tokens message with ``head`` in a run whose parties have at most
    ``most`` tokens (the plan's public max_tokens): the same whatever a party holds."""
    return len(head) + SEALED_KEY_BYTES + NONCE_BYTES + 8 * (most + 1) + TAG_BYTES


@dataclass(frozen=True)
class TokenSeal:
    """How a party seals its tokens message: the server's public key, and the list's
    ``key``, ``nonce`` and sealing ``randomness``, all from the party's own secret (so that
    no peer can recompute the message's bytes, nor its digest)."""

    server: PublicKey
    key: bytes
    nonce: bytes
    randomness: bytes


def write_tokens(
    out: Any, head: bytes, count: int, most: int, blocks: Iterable[np.ndarray], sealing: TokenSeal
) -> None:
    """Write a tokens message to the binary file ``out``: its ``head`` (:func:`tokens_head`),
    the list's key sealed to the server, then, encrypted under that key (AES-256-GCM, the
    head as associated data), the ``count`` of tokens (uint64, little-endian), the sorted
    tokens given by ``blocks`` and zero words up to ``most`` tokens, so that its length is
    public (:func:`tokens_size`)."""
    out.write(head)
    out.write(seal(sealing.server, sealing.key, head, randomness=sealing.randomness))

    def words() -> Iterator[bytes]:
        yield np.uint64(count).astype("<u8").tobytes()
        written = 0
        for block in blocks:
            yield np.ascontiguousarray(block, "<u8").tobytes()
            written += block.size
        if written != count or count > most:
            raise MessageError(f"a token list of {written} tokens, not {count} of at most {most}.")
        zeros = bytes(8 << 16)
        for start in range(count, most, 1 << 16):
            yield zeros[: 8 * min(1 << 16, most - start)]

    size = 8 * (most + 1)
    encrypt_chunks_to(out, sealing.key, words(), size, head, nonce=sealing.nonce)


def _tokens_parts(data: bytes | bytearray | memoryview, config_hash: str) -> tuple[str, int]:
    """The sender of a tokens message of the run ``config_hash`` and where its sealed key
    starts (MessageError when malformed or another run's)."""
    raw = memoryview(data).cast("B")
    at = len(TOKENS_MAGIC) + len(config_hash)
    if bytes(raw[: len(TOKENS_MAGIC)]) != TOKENS_MAGIC or len(raw) <= at:
        raise MessageError("not a tokens message (from `party tokens`).")
    if bytes(raw[len(TOKENS_MAGIC) : at]) != config_hash.encode():
        other = bytes(raw[len(TOKENS_MAGIC) : at]).decode("ascii", "replace")[:16]
        raise MessageError(
            f"the tokens message belongs to the run {other}, not this run {config_hash[:16]}: "
            "have the party send this run's tokens."
        )
    start = at + 1 + raw[at]
    try:
        sender = bytes(raw[at + 1 : start]).decode("utf-8")
    except UnicodeDecodeError:
        sender = ""
    if not sender or len(raw) < start + SEALED_KEY_BYTES:
        raise MessageError(_MALFORMED)
    return sender, start


def tokens_sender(data: bytes | bytearray | memoryview, config_hash: str) -> str:
    """The party that a tokens message of the run ``config_hash`` names."""
    return _tokens_parts(data, config_hash)[0]


class TokenList:
    """The token list in ``party``'s tokens message ``data`` of the run ``config_hash``,
    padded to ``most`` tokens, opened with the server's ``keypair`` and read in place
    (MessageError when malformed, another run's or party's, or not of the run's public
    length; ChannelError when it is not sealed to this server or was altered): its ``count``
    and its tokens by blocks (:meth:`blocks`), each pass decrypting and authenticating the
    list again, so that a mapped message is never resident whole."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        config_hash: str,
        party: str,
        most: int,
        keypair: KeyPair,
    ) -> None:
        sender, start = _tokens_parts(data, config_hash)
        if sender != party:
            raise MessageError(f"the tokens message from {party!r} names party {sender!r}.")
        raw = memoryview(data).cast("B")
        if len(raw) != tokens_size(bytes(raw[:start]), most):
            raise MessageError(f"the tokens message is not padded to the run's {most} tokens.")
        self._head = bytes(raw[:start])
        sealed = bytes(raw[start : start + SEALED_KEY_BYTES])
        self._key = open_sealed(keypair, sealed, self._head)
        self._blob = raw[start + SEALED_KEY_BYTES :]
        self._most, self.count = most, 0
        for _ in decrypt_chunks(self._key, self._blob, self._head, 8 * wire.PACK_WORDS):
            pass  # the tag first: an altered list is refused as such, before it is read
        for _ in self.blocks(wire.PACK_WORDS):  # the count and the padding, checked once
            pass

    def blocks(self, step: int) -> Iterator[np.ndarray]:
        """The tokens (uint64, as sent: sorted), by blocks of at most ``step``, each a copy;
        the padding and the tag are checked once the last is read."""
        step, at, count = max(1, step), 0, -1
        read = ReadOnce(self._blob)
        for piece in decrypt_chunks(self._key, self._blob, self._head, 8 * step):
            words = np.frombuffer(piece, "<u8")
            if count < 0:
                count = int(words[0])
                if count > self._most:
                    raise MessageError(_MALFORMED)
                self.count = count
            lo, hi = max(at, 1), min(at + words.size, count + 1)
            if hi > lo:
                yield words[lo - at : hi - at].astype(np.uint64)
            if np.any(words[max(0, count + 1 - at) :]):
                raise MessageError(_MALFORMED)
            at += words.size
            read.done(NONCE_BYTES + 8 * at)


def read_tokens(
    data: bytes | bytearray | memoryview,
    config_hash: str,
    party: str,
    most: int,
    keypair: KeyPair,
) -> np.ndarray:
    """The token list of :class:`TokenList`, whole."""
    tokens = TokenList(data, config_hash, party, most, keypair)
    return np.concatenate([np.empty(0, np.uint64), *tokens.blocks(wire.PACK_WORDS)])
