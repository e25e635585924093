"""A party's masked features on one row block of the 1M-row profile's width (157 values a
row, 8 groups, 24-bit ring words in uint32): X - U made over the mask in one pass
(``onehot_minus``) against numpy's negation and scatter per group, and the words packed
into 3 bytes each (``pack_low``) against numpy's view, slice and copy (``low_bytes``, which
the library keeps for whole words)."""

import numpy as np
import pytest
from kernel_references import onehot_minus_numpy

from vertimrf.kernels.packing import onehot_minus, pack_low
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.features import low_bytes

ROWS = [pytest.param(1 << 12, id="4k"), pytest.param(1 << 16, marks=pytest.mark.large, id="64k")]
WIDTH, GROUPS, EACH = 157, 8, 3


@pytest.mark.benchmark(group="secure features: one-hot X - U")
@pytest.mark.parametrize("rows", ROWS)
def test_onehot_minus(pair, rows: int) -> None:
    rng = np.random.default_rng(rows)
    mask = rng.integers(0, 1 << 32, (rows, WIDTH), dtype=np.uint64).astype(np.uint32)
    span = WIDTH // GROUPS
    cols = rng.integers(0, span, (rows, GROUPS), dtype=np.int64) + span * np.arange(GROUPS)
    mine, theirs = mask.copy(), mask.copy()

    def check(*_: object) -> None:  # X - U is an involution: timed runs flip it back and forth
        got = mask.copy()
        onehot_minus(got, cols)
        np.testing.assert_array_equal(got, onehot_minus_numpy(mask.copy(), cols))

    pair(
        kernel=lambda: onehot_minus(mine, cols),
        reference=lambda: onehot_minus_numpy(theirs, cols),
        check=check,
        items=rows * WIDTH,
        unit="values/s",
        reference_name="numpy negate + scatter per group",
    )


@pytest.mark.benchmark(group="secure features: pack")
def test_pack_low(pair) -> None:
    count = wire.PACK_WORDS
    words = np.random.default_rng(count).integers(0, 1 << 24, count, dtype=np.uint32)
    out = np.empty(count * EACH, np.uint8)

    def kernel() -> np.ndarray:
        pack_low(words, EACH, out)
        return out

    pair(
        kernel=kernel,
        reference=lambda: low_bytes(words, EACH).reshape(-1),
        check=np.testing.assert_array_equal,
        items=count,
        unit="values/s",
        reference_name="numpy view, slice, copy",
    )
