"""Empty cells in a party's table on Dask (issue 36): the partitions encode them as the
table in memory does, so the run fits the same model and samples the same rows."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.missing_table import PARTIES, SPEC, missing_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import local_run
from vertimrf.protocol import from_preset

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from vertimrf.party.dask_table import DaskTable  # noqa: E402

SECRET = bytes(range(32))


def test_a_dask_table_with_empty_cells_fits_the_in_memory_model(tmp_path):
    frame = missing_table()
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.6, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=8192,
        run_nonce="ef" * 16, secure_buckets=4,
    )  # fmt: skip
    keys = {name: KeyPair.generate(name) for name in ("A", "B", "server")}
    parties = {k: v for k, v in keys.items() if k != "server"}
    memory = {p: frame[["id", *cols]] for p, cols in PARTIES}
    dd.from_pandas(memory["A"], npartitions=3).to_parquet(tmp_path / "A.parquet")
    samples = []
    with distributed.Client(processes=False, n_workers=2, dashboard_address=None) as client:
        for data in (memory, {**memory, "A": DaskTable(tmp_path / "A.parquet", client)}):
            run = local_run(data, cfg, SECRET, seed=7, keys=parties, server_key=keys["server"])
            samples.append(run.fitted(run.run()).sample(seed=8))
    pd.testing.assert_frame_equal(samples[0], samples[1])
    assert samples[1][["c0", "c2"]].isna().any().all()
