"""What every primitive shares: the key and block sizes, HKDF-SHA256 and the key check."""

from __future__ import annotations

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vertimrf.errors import KeyMaterialError

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
AES_BLOCK_BYTES = 16
CHUNK_BYTES = 1 << 20  # bytes a streamed cipher handles at once


def hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    """A 32-byte key from ``ikm`` by HKDF-SHA256 with ``salt`` and ``info``."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=salt, info=info).derive(ikm)


def check_key(key: object, what: str) -> bytes:
    """``key`` if it is 32 bytes; KeyMaterialError naming ``what`` otherwise."""
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes) else type(key).__name__
        raise KeyMaterialError(
            f"{what} must be {KEY_BYTES} bytes (from pairwise_key or new_seed); got {size}."
        )
    return key
