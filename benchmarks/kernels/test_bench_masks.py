"""AES-CTR mask expansion: a party's row mask (AES-256-CTR keystream of a key derived from the
pair's seed, read as uint64 words) against a counter mode written out on the ``cryptography``
AES-ECB primitive: the counter blocks built in numpy and encrypted in one call (GB/s)."""

import numpy as np
import pytest
from kernel_references import aes_ctr_words

from vertimrf.crypto import prg
from vertimrf.crypto.kdf import hkdf
from vertimrf.protocol.masks import RowMask, row_mask

WIDTH = 8  # words a row
SEED = bytes(range(32))


@pytest.mark.benchmark(group="AES-CTR mask expansion")
@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(16_384, id="16k"),
        pytest.param(1_000_000, marks=pytest.mark.large, id="1M"),
    ],
)
def test_row_mask(pair, rows: int) -> None:
    # the stream's key, derived as prg.expand derives it for this label
    subkey = hkdf(SEED, prg._PRG_SALT, prg._PRG_INFO + RowMask.U.value)
    pair(
        kernel=lambda: row_mask(SEED, RowMask.U, 0, rows, WIDTH, np.uint64),
        reference=lambda: aes_ctr_words(subkey, rows * WIDTH).reshape(rows, WIDTH),
        check=np.testing.assert_array_equal,
        items=rows * WIDTH * 8 / 1e9,
        unit="GB/s",
        reference_name="numpy counters + cryptography AES-ECB",
    )
