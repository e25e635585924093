"""One run with party A's table in memory and one with it on Dask (a Parquet folder of 3
partitions, a 2-worker in-process cluster): the two runs' samples, which must be equal."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tests.helpers import DASHBOARD
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import local_run
from vertimrf.protocol.config import ProtocolConfig

SECRET = bytes(range(32))


def memory_and_dask_samples(
    tmp_path: Path, frame: pd.DataFrame, cfg: ProtocolConfig, parties: list
) -> list[pd.DataFrame]:
    """The samples (seed 8) of the run (seed 7) on ``frame``'s columns by ``parties`` in
    memory, then with A's on Dask."""
    import dask.dataframe as dd
    import distributed

    from vertimrf.party.records.dask_table import DaskTable

    keys = {name: KeyPair.generate(name) for name in ("A", "B", "server")}
    owners = {k: v for k, v in keys.items() if k != "server"}
    memory = {p: frame[["id", *cols]] for p, cols in parties}
    dd.from_pandas(memory["A"], npartitions=3).to_parquet(tmp_path / "A.parquet")
    samples = []
    with distributed.Client(processes=False, n_workers=2, dashboard_address=DASHBOARD) as client:
        for data in (memory, {**memory, "A": DaskTable(tmp_path / "A.parquet", client)}):
            run = local_run(data, cfg, SECRET, seed=7, keys=owners, server_key=keys["server"])
            samples.append(run.fitted(run.run()).sample(seed=8))
    return samples
