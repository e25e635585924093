"""A datetime column in a party's table on Dask: the partitions read its
times as the table in memory does, so the run fits the same model and samples the same rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.party.dask_runs import memory_and_dask_samples
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.protocol import from_preset
from vertimrf.timecols import TimeAxis

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")
SPEC = DomainSpec([
    ColumnSpec("t", "datetime", missing=True,
               time=TimeAxis("2013-01-01", "2013-12-31", "month", format="%Y-%m-%d %H:%M")),
    ColumnSpec("c", "categorical", ("x", "y", "z")),
    ColumnSpec("d", "categorical", (0, 1)),
])  # fmt: skip
PARTIES = [("A", ["t", "c"]), ("B", ["d"])]


@pytest.mark.slow  # the encoder a partition runs is tests/test_domain_datetime.py's
def test_a_dask_table_with_times_fits_the_in_memory_model(tmp_path):
    rng = np.random.default_rng(4)
    n = 600
    month = rng.integers(1, 13, n)
    times = [f"2013-{m:02d}-{rng.integers(1, 29):02d} {rng.integers(0, 24):02d}:30" for m in month]
    frame = pd.DataFrame({
        "id": np.arange(n),
        "t": np.where(rng.random(n) < 0.1, "", times),
        "c": np.where(month < 7, "x", rng.choice(["y", "z"], n)),
        "d": (month > 9).astype(int),
    })  # fmt: skip
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.6, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=1024,
        run_nonce="ab" * 16, secure_buckets=4,
    )  # fmt: skip
    samples = memory_and_dask_samples(tmp_path, frame, cfg, PARTIES)
    pd.testing.assert_frame_equal(samples[0], samples[1])
    times = pd.to_datetime(samples[1]["t"], format="%Y-%m-%d %H:%M")
    assert times.isna().any() and times.dropna().dt.year.eq(2013).all()
