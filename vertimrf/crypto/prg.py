"""The PRG: AES-256-CTR keystreams of 32-byte keys, one stream per label, as words."""

from __future__ import annotations

import secrets

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from vertimrf.crypto.kdf import AES_BLOCK_BYTES, CHUNK_BYTES, KEY_BYTES, check_key, hkdf
from vertimrf.errors import ConfigError

_PRG_SALT = b"vertimrf/v1/channel/prg-salt"
_PRG_INFO = b"vertimrf/v1/channel/prg-key"


def expand(
    key: bytes, label: bytes, n: int, start: int = 0, *, word: type = np.uint64
) -> np.ndarray:
    """``n`` pseudo-random words (``word``: np.uint64 or np.uint32) from ``key`` for
    ``label``: AES-256-CTR keystream.

    The stream's key is HKDF(key, label), unique per label, so the zero nonce never repeats a
    keystream; words are the stream's bytes read little-endian. ``start`` skips to word
    ``start`` of the same stream (the CTR counter starts at its block), so a long stream can
    be expanded block by block: ``expand(k, l, a + b)`` equals ``expand(k, l, a)`` followed by
    ``expand(k, l, b, start=a)``. Time and memory are linear in n.
    """
    for value, what in ((n, "a word count n"), (start, "a start word")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigError(f"expand needs {what} >= 0; got {value!r}.")
    if word not in (np.uint64, np.uint32):
        raise ConfigError(f"expand makes np.uint64 or np.uint32 words; got {word!r}.")
    size_of = np.dtype(word).itemsize
    subkey = hkdf(check_key(key, "a PRG key"), _PRG_SALT, _PRG_INFO + label)
    block, skip = divmod(int(start) * size_of, AES_BLOCK_BYTES)
    counter = block.to_bytes(AES_BLOCK_BYTES, "big")
    encryptor = Cipher(algorithms.AES(subkey), modes.CTR(counter)).encryptor()
    size = int(n) * size_of + skip
    # update_into may ask for block size - 1 spare bytes past the output (older releases do).
    out = np.empty(size + AES_BLOCK_BYTES - 1, dtype=np.uint8)
    view = out.data
    zeros = memoryview(bytes(min(size, CHUNK_BYTES)))
    for begin in range(0, size, CHUNK_BYTES):
        stop = min(begin + CHUNK_BYTES, size)
        encryptor.update_into(zeros[: stop - begin], view[begin : stop + AES_BLOCK_BYTES - 1])
    little = "<u8" if size_of == 8 else "<u4"
    return out[skip:size].view(little).astype(word, copy=False)


def new_seed() -> bytes:
    """A fresh 32-byte seed from the OS CSPRNG."""
    return secrets.token_bytes(KEY_BYTES)
