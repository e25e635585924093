"""What the secure method's byte formats share: digest and seed lengths, the block sizes
its messages are streamed in (read as ``wire.NAME`` at call time, so that a test may shrink
them), and the reading of a deal's archive."""

from __future__ import annotations

import io

import numpy as np

from vertimrf.errors import MessageError

DIGEST_BYTES = 32
SEED_BYTES = 32
PACK_WORDS = 1 << 16  # ring values packed or unpacked per block of a feature blob
ROW_BLOCK_WORDS = 1 << 20  # ring values per row block of a feature blob streamed in or out
SLOT_BLOCK = 1 << 16  # tokens (or slots) of a list read, merged or written at a time


def unpack(data: bytes, what: str) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` archive ``data`` (``what`` names it in errors); no pickle."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as exc:
        raise MessageError(f"{what} is not a valid archive ({exc}).") from None
