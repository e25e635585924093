"""float64 columns as CSV text (values/s): Arrow's shortest digits laid out as ``repr`` by
:func:`vertimrf.kernels.float_text.repr_floats` (with Arrow's cast, as the CSV writer calls
it) against numpy's ``astype(str)``, pandas' own call. Uniform draws over several decades,
as numeric columns decode inside their bins."""

import numpy as np
import pyarrow as pa
import pytest

from vertimrf.synth.csv_rows import _floats

SIZES = [pytest.param(65_536, id="64k"), pytest.param(1 << 20, marks=pytest.mark.large, id="1M")]


@pytest.mark.benchmark(group="csv: float64 as repr text")
@pytest.mark.parametrize("n", SIZES)
def test_repr_floats(pair, n: int) -> None:
    rng = np.random.default_rng(n)
    values = rng.random(n) * 10.0 ** rng.integers(-6, 12, n)

    def check(got: pa.Array, want: np.ndarray) -> None:
        assert got.to_pylist() == want.tolist()

    pair(
        kernel=lambda: _floats(values),
        reference=lambda: values.astype(str),
        check=check,
        items=n,
        unit="values/s",
        reference_name="numpy astype(str)",
    )
