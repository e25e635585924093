"""AES-256-GCM blobs under a 32-byte key (e.g. a pairwise key): whole (:func:`encrypt`,
:func:`decrypt`) or streamed, so that a multi-GB plaintext is encrypted from consecutive
chunks straight into a file (:func:`encrypt_chunks_to`) and decrypted in place, into a
buffer (:func:`decrypt_into`) or by pieces (:func:`decrypt_chunks`). Every blob is
nonce || ciphertext || tag: under one key and nonce, the same bytes whichever way it was made.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from vertimrf.crypto.kdf import (
    AES_BLOCK_BYTES,
    CHUNK_BYTES,
    NONCE_BYTES,
    TAG_BYTES,
    check_key,
    hkdf,
)
from vertimrf.errors import ChannelError

_BLOB_SALT = b"vertimrf/v1/channel/blob-salt"
_BLOB_INFO = b"vertimrf/v1/channel/blob-key"
_BLOB_AAD = b"vertimrf/v1/channel/blob-aad"
_NOT_THIS_PEERS = (
    "the blob is not from this peer for this run and purpose (replayed, foreign or altered): "
    "check that both parties use this run's config and each other's public keys (compare "
    "fingerprints)."
)


def _buffer(data: object, what: str) -> memoryview:
    """A flat byte view of ``data`` (bytes, bytearray, memoryview, mmap or a C-contiguous
    array), without copying; ChannelError for anything else."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise ChannelError(f"{what} is not bytes ({type(data).__name__}).") from None
    if not view.c_contiguous:
        raise ChannelError(f"{what} is not a contiguous buffer.")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def encrypt(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM under a subkey of ``key``; blob: random 12-byte nonce || ciphertext."""
    return bytes(encrypt_buffer(key, plaintext, aad))


def encrypt_buffer(
    key: bytes, plaintext: object, aad: bytes, prefix: bytes = b"", *, nonce: bytes | None = None
) -> bytearray:
    """``prefix`` || the blob of :func:`encrypt`, written into one new buffer: the plaintext
    (any contiguous buffer, e.g. a numpy array) is read in place and the ciphertext is not
    copied again, so a multi-GB plaintext costs one output buffer. ``nonce`` (12 bytes) must
    be derived from everything that determines the plaintext, so that one nonce never
    encrypts two plaintexts under one key; by default it is fresh from the OS CSPRNG."""
    data = _buffer(plaintext, "the plaintext")
    pieces = (data[i : i + CHUNK_BYTES] for i in range(0, len(data), CHUNK_BYTES))
    return encrypt_chunks(key, pieces, len(data), aad, prefix, nonce=nonce)


def _encryptor(key: bytes, nonce: bytes | None, aad: bytes) -> tuple[bytes, Any]:
    """The nonce (fresh unless given) and an AES-256-GCM encryptor of a blob under ``key``
    with ``aad``."""
    subkey = hkdf(check_key(key, "an encryption key"), _BLOB_SALT, _BLOB_INFO)
    if nonce is None:
        nonce = os.urandom(NONCE_BYTES)
    elif len(nonce) != NONCE_BYTES:
        raise ChannelError(f"a nonce is {NONCE_BYTES} bytes; got {len(nonce)}.")
    encryptor = Cipher(algorithms.AES(subkey), modes.GCM(nonce)).encryptor()
    encryptor.authenticate_additional_data(_BLOB_AAD + aad)
    return nonce, encryptor


class BufferWriter:
    """A binary file's ``write`` into a new buffer of a known size: what a streamed writer
    (e.g. :func:`encrypt_chunks_to`) makes, whole in memory, in one allocation."""

    def __init__(self, size: int) -> None:
        self._buffer = bytearray(size)
        self._view = memoryview(self._buffer)
        self._written = 0

    def write(self, data: object) -> int:
        piece = _buffer(data, "the data")
        end = self._written + len(piece)
        if end > len(self._buffer):
            raise ChannelError(f"a stream ran past its stated {len(self._buffer)} bytes.")
        self._view[self._written : end] = piece
        self._written = end
        return len(piece)

    def result(self) -> bytearray:
        """The buffer, once exactly its size was written."""
        if self._written != len(self._buffer):
            raise ChannelError(f"a stream wrote {self._written} bytes, not {len(self._buffer)}.")
        return self._buffer


def encrypt_chunks(
    key: bytes,
    chunks: Iterable[object],
    size: int,
    aad: bytes,
    prefix: bytes = b"",
    *,
    nonce: bytes | None = None,
) -> bytearray:
    """:func:`encrypt_buffer` of a plaintext of ``size`` bytes given as consecutive
    ``chunks`` (contiguous buffers): each is encrypted straight into the output, so the
    whole plaintext never exists at once. The same bytes as one buffer of their join."""
    out = BufferWriter(len(prefix) + NONCE_BYTES + size + TAG_BYTES)
    encrypt_chunks_to(out, key, chunks, size, aad, prefix, nonce=nonce)
    return out.result()


def encrypt_chunks_to(
    out: Any,
    key: bytes,
    chunks: Iterable[object],
    size: int,
    aad: bytes,
    prefix: bytes = b"",
    *,
    nonce: bytes | None = None,
) -> None:
    """The bytes of :func:`encrypt_chunks`, written to ``out`` (anything with a binary
    ``write``, e.g. a file) as each chunk is encrypted: the blob never exists whole."""
    nonce, encryptor = _encryptor(key, nonce, aad)
    out.write(prefix)
    out.write(nonce)
    written = 0
    for chunk in chunks:
        data = _buffer(chunk, "the plaintext")
        if written + len(data) > size:
            raise ChannelError(f"the plaintext is longer than its stated {size} bytes.")
        out.write(encryptor.update(data))
        written += len(data)
    if written != size:
        raise ChannelError(f"the plaintext holds {written} bytes, not its stated {size}.")
    out.write(encryptor.finalize())
    out.write(encryptor.tag)


def decrypt(key: bytes, blob: bytes, aad: bytes) -> bytes:
    """Open a blob made by :func:`encrypt` with the same ``key`` and ``aad``."""
    check_key(key, "a decryption key")
    view = _blob_view(blob)
    out = bytearray(len(view) - NONCE_BYTES - TAG_BYTES)
    decrypt_into(key, view, aad, out)
    return bytes(out)


def _blob_view(blob: object) -> memoryview:
    try:
        view = None if isinstance(blob, str) else _buffer(blob, "the blob")
    except ChannelError:
        view = None
    if view is None or len(view) < NONCE_BYTES + TAG_BYTES:
        size = type(blob).__name__ if view is None else len(view)
        raise ChannelError(
            f"the blob is truncated or not bytes ({size}): ask the peer to send it again."
        )
    return view


def decrypt_into(key: bytes, blob: object, aad: bytes, out: object) -> None:
    """Open a blob made by :func:`encrypt` (any bytes-like, e.g. a memoryview of a mapped
    file; never copied) into ``out``, a writable buffer of the plaintext's size (e.g. a numpy
    array): no intermediate ``bytes``."""
    subkey = hkdf(check_key(key, "a decryption key"), _BLOB_SALT, _BLOB_INFO)
    view = _blob_view(blob)
    target = memoryview(out).cast("B")  # type: ignore[arg-type]
    if len(target) != len(view) - NONCE_BYTES - TAG_BYTES:
        raise ChannelError(
            f"the blob holds {len(view) - NONCE_BYTES - TAG_BYTES} plaintext bytes, not the "
            f"{len(target)} expected: ask the peer to send it again."
        )
    try:
        AESGCM(subkey).decrypt_into(view[:NONCE_BYTES], view[NONCE_BYTES:], _BLOB_AAD + aad, target)
    except InvalidTag:
        raise ChannelError(_NOT_THIS_PEERS) from None


def decrypt_chunks(
    key: bytes, blob: object, aad: bytes, chunk_bytes: int, hasher: Any = None
) -> Iterator[memoryview]:
    """The plaintext of a blob made by :func:`encrypt` (any bytes-like, read in place) as
    consecutive pieces of at most ``chunk_bytes``, each valid until the next is read. The
    tag is checked after the last piece: a caller must discard what it made of the pieces
    when the iteration raises ChannelError. ``hasher`` (a hashlib object), if given, is fed
    the blob's bytes in order as they are read."""
    subkey = hkdf(check_key(key, "a decryption key"), _BLOB_SALT, _BLOB_INFO)
    view = _blob_view(blob)
    body, tag = view[NONCE_BYTES:-TAG_BYTES], bytes(view[-TAG_BYTES:])
    decryptor = Cipher(
        algorithms.AES(subkey), modes.GCM(bytes(view[:NONCE_BYTES]), tag)
    ).decryptor()
    decryptor.authenticate_additional_data(_BLOB_AAD + aad)
    scratch = memoryview(bytearray(chunk_bytes + AES_BLOCK_BYTES - 1))
    read = ReadOnce(body)
    if hasher is not None:
        hasher.update(view[:NONCE_BYTES])
    for start in range(0, len(body), chunk_bytes):
        piece = body[start : start + chunk_bytes]
        if hasher is not None:
            hasher.update(piece)
        n = decryptor.update_into(piece, scratch)
        yield scratch[:n]
        read.done(start + chunk_bytes)
    if hasher is not None:
        hasher.update(tag)
    try:
        decryptor.finalize()
    except InvalidTag:
        raise ChannelError(_NOT_THIS_PEERS) from None


class ReadOnce:
    """Where ``view`` lies in a read-only file mapping (mmap), drops the pages already read
    from this process's memory (MADV_DONTNEED: the file's bytes stay in the page cache and a
    later read maps them again), so reading a blob once in blocks does not keep it resident."""

    def __init__(self, view: memoryview) -> None:
        source = view.obj
        self._map = source if isinstance(source, mmap.mmap) and view.readonly else None
        self._offset = self._dropped = 0
        if self._map is not None and len(view):
            base = np.frombuffer(self._map, np.uint8).ctypes.data
            self._offset = np.frombuffer(view, np.uint8).ctypes.data - base

    def done(self, end: int) -> None:
        """Bytes ``[0, end)`` of the view are read."""
        if self._map is None:
            return
        upto = (self._offset + end) // mmap.PAGESIZE * mmap.PAGESIZE
        if upto > self._dropped:
            self._map.madvise(mmap.MADV_DONTNEED, self._dropped, upto - self._dropped)
            self._dropped = upto
