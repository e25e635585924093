"""A keyed pseudorandom permutation of [0, n), evaluated on whole
arrays; design notes in docs/design/crypto.md."""

from __future__ import annotations

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes

from vertimrf.crypto.kdf import check_key, hkdf
from vertimrf.errors import ConfigError

__all__ = ["ROUNDS", "KeyedPermutation"]

ROUNDS = 10
_SALT = b"vertimrf/v1/prp-salt"
_INFO = b"vertimrf/v1/prp-key"


class KeyedPermutation:
    """A permutation of [0, ``size``) keyed by ``key`` (32 bytes): the same key and size
    give the same permutation; another key, an unrelated one."""

    def __init__(self, key: bytes, size: int) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ConfigError(f"a permutation needs a domain of at least 1 value; got {size!r}.")
        subkey = hkdf(check_key(key, "a permutation key"), _SALT, _INFO)
        bits = max(2, (size - 1).bit_length())
        self.size = size
        self._half = (bits + (bits & 1)) // 2
        self._mask = np.uint64((1 << self._half) - 1)
        self._cipher = Cipher(algorithms.AES(subkey), modes.ECB())

    def __call__(self, values: np.ndarray) -> np.ndarray:
        """The images (int64) of ``values``, integers of [0, size) (ConfigError otherwise)."""
        x = np.asarray(values)
        if x.size and (x.dtype.kind not in "iu" or int(x.min()) < 0 or int(x.max()) >= self.size):
            raise ConfigError(f"a permutation of [0, {self.size}) was given a value outside it.")
        out = self._feistel(x.astype(np.uint64).reshape(-1))
        walk = np.flatnonzero(out >= self.size)
        while walk.size:
            out[walk] = self._feistel(out[walk])
            walk = walk[out[walk] >= self.size]
        return out.astype(np.int64).reshape(x.shape)

    def _feistel(self, x: np.ndarray) -> np.ndarray:
        """The Feistel network on [0, 2^b), applied to every value of ``x`` (uint64)."""
        half = np.uint64(self._half)
        left, right = x >> half, x & self._mask
        encryptor = self._cipher.encryptor()  # ECB: one context serves every round's blocks
        for r in range(ROUNDS):
            left, right = right, left ^ self._round(encryptor, r, right)
        return (left << half) | right

    def _round(self, encryptor: CipherContext, r: int, right: np.ndarray) -> np.ndarray:
        """F_r: the low b/2 bits of AES_k(right || r) for each value, in one ECB call."""
        blocks = np.empty((right.size, 2), "<u8")
        blocks[:, 0] = right
        blocks[:, 1] = r
        encrypted = encryptor.update(blocks.tobytes())
        return np.frombuffer(encrypted, "<u8")[0::2].astype(np.uint64) & self._mask
