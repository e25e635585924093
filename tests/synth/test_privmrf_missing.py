"""Missing values in centralized PrivMRF (issue 36): the empty cells of columns declared
``missing`` are modelled as a value, sampled back as empty cells at the real rate within the
noise, and the saved model keeps the declaration."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from tests.missing_table import EMPTY, SPEC, N, missing_table
from vertimrf import PrivMRF


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
