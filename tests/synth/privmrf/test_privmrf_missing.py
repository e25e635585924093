"""Missing values in centralized PrivMRF: the empty cells of columns declared
``missing`` are modelled as a value, sampled back as empty cells at the real rate within the
noise, and the saved model keeps the declaration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from tests.missing_table import EMPTY, SPEC, N, missing_table
from vertimrf import PrivMRF
from vertimrf.encoding import TableEncoder
from vertimrf.synth.table_file import save_table


def test_privmrf_samples_empty_cells_at_the_real_rate(tmp_path):
    frame = missing_table().drop(columns="id")
    model = PrivMRF(1.6, 1e-6, seed=0, progress=False).fit(frame, SPEC)
    synth = model.sample()
    sizes = SPEC.domain.sizes
    for column in EMPTY:
        j = SPEC.names.index(column)
        # Three sds of the missing count's noise: the least-squares fit is at least as
        # precise as the best measurement holding the column summed down to it (noise sd
        # sigma sqrt(cells of the other attributes); Gauss-Markov), plus the noisy total
        # (observed) and the sampling of len(synth) rows.
        noise = min(
            math.sqrt(math.prod(sizes[a] for a in m.attrs if a != j)) / m.weight
            for m in model.measurements
            if j in m.attrs
        )
        real = float(frame[column].isna().mean())
        bound = (
            3 * noise / N
            + real * abs(model.n_hat - N) / N
            + 3 * math.sqrt(real * (1 - real) / len(synth))
        )
        got = float(synth[column].isna().mean())
        assert abs(got - real) <= bound, (column, real, got, bound)
    assert synth[["c1", "c3"]].notna().all().all()
    path = model.save(tmp_path / "model.vmrf")
    loaded = PrivMRF.load(path)
    pd.testing.assert_frame_equal(loaded.sample(300, seed=1), model.sample(300, seed=1))
    assert np.isnan(loaded.marginal(["c2"]).index[-1])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_synthetic_file_holds_empty_cells_chunk_by_chunk(tmp_path, suffix):
    """A chunk without any empty cell (integer categories as integers) and one with them
    (as objects) go to one file under one schema; read back, the codes are the same."""
    enc = TableEncoder(SPEC)
    codes = enc.encode(missing_table().drop(columns="id"))
    codes[:50, :] = 0
    path = tmp_path / f"synth{suffix}"
    rows = save_table(path, iter([enc.decode(codes[:50]), enc.decode(codes[50:])]), SPEC)
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert rows == len(codes) == len(back)
    np.testing.assert_array_equal(enc.encode(back), codes)
