"""Empty cells in a party's table on Dask: the partitions encode them as the
table in memory does, so the run fits the same model and samples the same rows."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.missing_table import PARTIES, SPEC, missing_table
from tests.party.dask_runs import memory_and_dask_samples
from vertimrf.protocol import from_preset

pytest.importorskip("dask.dataframe")
pytest.importorskip("distributed")


def test_a_dask_table_with_empty_cells_fits_the_in_memory_model(tmp_path):
    frame = missing_table()
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.6, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=8192,
        run_nonce="ef" * 16, secure_buckets=4,
    )  # fmt: skip
    samples = memory_and_dask_samples(tmp_path, frame, cfg, PARTIES)
    pd.testing.assert_frame_equal(samples[0], samples[1])
    assert samples[1][["c0", "c2"]].isna().any().all()
