"""A party's unpacking of a peer's feature blob (values/s): 24-bit ring words (3 bytes each)
widened to uint32 by one masked load a value (``widen``) against the byte-by-byte strided
copy it replaced, on one row block of the 1M-row profile's width (157 values a row)."""

import numpy as np
import pytest

from vertimrf.protocol.secure.features import widen

VALUES = [pytest.param(1 << 16, id="64k"), pytest.param(1 << 22, marks=pytest.mark.large, id="4M")]
EACH = 3


def _bytewise(piece: bytes, count: int, out: np.ndarray) -> np.ndarray:
    cells = out.view(np.uint8).reshape(-1, 4)
    cells[:count, :EACH] = np.frombuffer(piece, np.uint8).reshape(count, EACH)
    return out


@pytest.mark.benchmark(group="secure product: unpack")
@pytest.mark.parametrize("count", VALUES)
def test_widen(pair, count: int) -> None:
    rng = np.random.default_rng(count)
    values = rng.integers(0, 1 << 24, count, dtype=np.uint32)
    piece = values.view(np.uint8).reshape(-1, 4)[:, :EACH].tobytes()
    out, ref = np.zeros(count, "<u4"), np.zeros(count, "<u4")

    def kernel() -> np.ndarray:
        widen(piece, count, EACH, out)
        return out

    pair(
        kernel=kernel,
        reference=lambda: _bytewise(piece, count, ref),
        check=np.testing.assert_array_equal,
        items=count,
        unit="values/s",
        reference_name="numpy byte-strided copy",
    )
