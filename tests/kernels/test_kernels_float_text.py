"""Arrow's float text laid out as ``repr`` (:func:`vertimrf.kernels.float_text.repr_floats`)
is numpy's ``astype(str)``, pandas' CSV text of a float64 column: on random bit patterns,
rounded decimals and the edges of the positional range."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from vertimrf.kernels.float_text import repr_floats

EDGES = [0.0, -0.0, np.inf, -np.inf, 5e-324, -1.7976931348623157e308, 9999999999999998.0]
EDGES += [1e16, 1e15, 0.0001, 9.999999999999999e-05, 1e-5, 1e-7, 123456789012.0, 0.1, 1.0]


def _laid_out(values: np.ndarray) -> list[str]:
    shortest = pc.cast(pa.array(values), pa.large_string())
    data = np.frombuffer(shortest.buffers()[2], np.uint8)
    offsets = np.frombuffer(shortest.buffers()[1], np.int64)[: values.size + 1]
    out = np.empty(data.size + 24 * values.size, np.uint8)
    ends = np.empty(values.size + 1, np.int64)
    size = repr_floats(data, offsets, out, ends)
    assert size == ends[-1]
    text = out[:size].tobytes().decode()
    return [text[a:b] for a, b in zip(ends[:-1], ends[1:], strict=True)]


@pytest.mark.parametrize("seed", [0, 1])
def test_random_bit_patterns_are_laid_out_as_repr(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**64 - 1, 50_000, dtype=np.uint64, endpoint=True).view(np.float64)
    values = values[~np.isnan(values)]
    assert _laid_out(values) == values.astype(str).tolist()


def test_decimals_and_the_edges_are_laid_out_as_repr():
    rng = np.random.default_rng(2)
    scale = 10.0 ** rng.integers(-12, 25, 20_000)
    values = np.concatenate(
        [
            rng.random(20_000) * scale,
            np.round(rng.random(20_000) * 1e6, 3),
            np.arange(-1000, 1000) * 0.1,
            10.0 ** np.arange(-30, 30),
            -(10.0 ** np.arange(-30, 30)),
            EDGES,
        ]
    )
    assert _laid_out(values) == values.astype(str).tolist()
    assert _laid_out(np.array(EDGES)) == [repr(float(v)) for v in EDGES]
