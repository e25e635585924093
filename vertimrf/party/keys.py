"""Secret hash keys shared by the parties, derived from one shared
secret; design notes in docs/design/party.md."""

from __future__ import annotations

import hashlib
import hmac
import secrets

import numpy as np

from vertimrf.crypto.schedule import hash_key_words
from vertimrf.errors import KeyMaterialError

MIN_SECRET_BYTES = 32
_MIN_DISTINCT_BYTES = 8
_FINGERPRINT_TAG = b"vertimrf/v1/key-fingerprint"


def new_shared_secret(n_bytes: int = MIN_SECRET_BYTES) -> bytes:
    """A fresh random shared secret from the OS CSPRNG (key material, never a seeded RNG)."""
    if n_bytes < MIN_SECRET_BYTES:
        raise KeyMaterialError(
            f"A shared secret needs at least {MIN_SECRET_BYTES} bytes; asked for {n_bytes}."
        )
    return secrets.token_bytes(n_bytes)


def _check_secret(secret: bytes) -> bytes:
    if isinstance(secret, str):
        raise KeyMaterialError(
            "The shared secret must be bytes, not str: a passphrase is not key material. "
            "Use vertimrf.party.keys.new_shared_secret() (or bytes.fromhex for a hex string)."
        )
    if not isinstance(secret, bytes | bytearray | memoryview):
        raise KeyMaterialError(f"The shared secret must be bytes; got {type(secret).__name__}.")
    secret = bytes(secret)
    if len(secret) < MIN_SECRET_BYTES:
        raise KeyMaterialError(
            f"The shared secret has {len(secret)} bytes; at least {MIN_SECRET_BYTES} are needed. "
            "Generate one with vertimrf.party.keys.new_shared_secret()."
        )
    if len(set(secret)) < _MIN_DISTINCT_BYTES:
        raise KeyMaterialError(
            f"The shared secret uses only {len(set(secret))} distinct byte values, so it is not "
            "random. Generate one with vertimrf.party.keys.new_shared_secret()."
        )
    return secret


class HashKeys:
    """t distinct 128-bit hash keys ``(k0[i], k1[i])``; never printed, only fingerprinted."""

    __slots__ = ("_k0", "_k1")

    def __init__(self, k0: np.ndarray, k1: np.ndarray) -> None:
        k0 = np.asarray(k0)
        k1 = np.asarray(k1)
        if k0.dtype != np.uint64 or k1.dtype != np.uint64 or k0.ndim != 1 or k0.shape != k1.shape:
            raise KeyMaterialError(
                "HashKeys needs two 1-D uint64 arrays of the same length (k0, k1); got "
                f"{k0.dtype}{k0.shape} and {k1.dtype}{k1.shape}. Use HashKeys.from_secret()."
            )
        if k0.size == 0:
            raise KeyMaterialError("HashKeys needs at least one key (t >= 1).")
        if np.unique(k0).size != k0.size:
            raise KeyMaterialError(
                "The hash keys are not distinct (two keys share k0, which is also the xxh64 "
                "seed). Derive them with HashKeys.from_secret()."
            )
        self._k0 = k0.copy()
        self._k1 = k1.copy()
        self._k0.setflags(write=False)
        self._k1.setflags(write=False)

    @classmethod
    def from_secret(cls, secret: bytes, t: int, *, context: bytes = b"") -> HashKeys:
        """Derive ``t`` distinct keys from a shared secret of at least 32 random bytes.

        ``context`` separates independent key sets made from one secret (e.g. a run id);
        all parties must pass the same value.
        """
        secret = _check_secret(secret)
        if isinstance(t, bool) or not isinstance(t, int | np.integer) or t < 1:
            raise KeyMaterialError(f"The number of keys t must be an integer >= 1; got {t!r}.")
        if not isinstance(context, bytes):
            raise KeyMaterialError(f"context must be bytes; got {type(context).__name__}.")
        t = int(t)
        raw = hash_key_words(secret, t, context)
        words = np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(t, 2)
        return cls(words[:, 0], words[:, 1])

    @property
    def t(self) -> int:
        """Number of keys."""
        return int(self._k0.size)

    @property
    def k0(self) -> np.ndarray:
        """First key words (read-only uint64), the key's bytes 0..7 read little-endian."""
        return self._k0

    @property
    def k1(self) -> np.ndarray:
        """Second key words (read-only uint64), the key's bytes 8..15 read little-endian."""
        return self._k1

    def __len__(self) -> int:
        return self.t

    def fingerprint(self) -> str:
        """Hex SHA-256 over all keys with a domain tag: safe to send to the server."""
        digest = hashlib.sha256()
        digest.update(_FINGERPRINT_TAG)
        digest.update(self.t.to_bytes(8, "big"))
        digest.update(self._k0.astype("<u8").tobytes())
        digest.update(self._k1.astype("<u8").tobytes())
        return digest.hexdigest()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HashKeys):
            return NotImplemented
        return hmac.compare_digest(self.fingerprint(), other.fingerprint())

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple:
        return (HashKeys, (np.array(self._k0), np.array(self._k1)))

    def __repr__(self) -> str:
        return f"HashKeys(t={self.t}, fingerprint={self.fingerprint()[:16]}...)"

    __str__ = __repr__
