"""The Dask path end to end (the CI smoke test): 200,000 rows, three parties and a server,
each its own `vertimrf` process; party A aligns and streams its Parquet dataset on a local
cluster of 2 worker processes (`--workers 2`). The synthetic CSV is simulate's, byte for
byte, so every release equals the in-memory run's."""

from __future__ import annotations

import shutil

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.driver.test_partial_transports import partial_files
from tests.driver.test_same_bytes import TRANSPORTS, folders_run
from tests.folder_roles import SERVER, THREE, three_party_args, three_party_files
from tests.helpers import SECRET
from tests.runs import SEED, correlated_table, finish, same_as_simulate, vertimrf_process
from vertimrf.protocol import from_preset

pytest.importorskip("distributed")
ROWS = 200_000


@pytest.mark.slow
def test_a_party_on_a_two_worker_cluster_writes_simulates_bytes(tmp_path):
    df, spec = correlated_table(ROWS)
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()),
        max_rows=1 << 18, run_nonce="ab" * 16, secure_buckets=8, record_sets="equal",
    )  # fmt: skip
    three_party_files(tmp_path, df, cfg)
    folder = tmp_path / "A.parquet"
    folder.mkdir()
    frame = df[THREE["A"]].assign(rid=range(ROWS)).sample(frac=1.0, random_state=9)
    for j in range(4):  # a dataset of four files
        part = pa.Table.from_pandas(frame.iloc[j::4], preserve_index=False)
        pq.write_table(part, folder / f"part-{j}.parquet")
    party_a = [*three_party_args("A", "A.parquet"), "--workers", "2"]
    done = finish(
        [vertimrf_process(tmp_path, *SERVER), vertimrf_process(tmp_path, *party_a)]
        + [vertimrf_process(tmp_path, *three_party_args(n)) for n in ("B", "C")]
    )
    for code, _, err in done:
        assert code == 0, err[-2000:]
    same_as_simulate(tmp_path / "synth.csv", df, cfg, seed=SEED, secret=SECRET)


def test_workers_need_a_parquet_dataset_and_method_secure(tmp_path):
    df, spec = correlated_table()
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()),
        max_rows=1024, run_nonce="ab" * 16,
    )  # fmt: skip
    three_party_files(tmp_path, df, cfg)
    ((code, _, err),) = finish(
        [vertimrf_process(tmp_path, *three_party_args("A"), "--workers", "1")]
    )
    assert code == 2 and "convert the CSV to Parquet first" in err
    ((code, _, err),) = finish(
        [vertimrf_process(tmp_path, *three_party_args("A"), "--workers", "0")]
    )
    assert code == 2 and "--workers must be at least 1" in err


@pytest.mark.slow
def test_partial_record_sets_with_a_party_on_two_workers_write_the_in_process_bytes(tmp_path):
    """Partial record sets: party A's records as a Parquet dataset of three files on a
    2-worker cluster (`--workers 2`), B and C streaming their CSV files; the synthetic CSV
    is the in-process run's (every table in memory), byte for byte."""
    here, there = tmp_path / "in-process", tmp_path / "folders"
    here.mkdir()
    cfg = partial_files(here)
    shutil.copytree(here, there)
    want = TRANSPORTS["in process"](here, cfg)
    frame = pd.read_csv(there / "A.csv")
    (there / "A.parquet").mkdir()
    for j in range(3):
        part = pa.Table.from_pandas(frame.iloc[j::3], preserve_index=False)
        pq.write_table(part, there / "A.parquet" / f"part-{j}.parquet")
    got = folders_run(there, cfg, {"A": ["--data", "A.parquet", "--workers", "2"]})
    assert got == want and len(want.splitlines()) > 1
