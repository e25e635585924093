"""Parties on Dask: a table on a 2-worker LocalCluster (real worker processes on 127.0.0.1)
writes the same messages, byte for byte, and fits the same model as the table in memory."""

from __future__ import annotations

import dataclasses
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.errors import ConfigError, RecordIDError
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from tests.helpers import DASHBOARD  # noqa: E402
from tests.party.test_slot_file import partial_tables, same_run_bytes  # noqa: E402
from vertimrf.party.records.dask_table import DaskTable  # noqa: E402

SECRET = bytes(range(32))
SIZES = {"a0": 4, "a1": 3, "b0": 5, "b1": 2, "c0": 3}
PARTIES = [("A", ["a0", "a1"]), ("B", ["b0", "b1"]), ("C", ["c0"])]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=DASHBOARD,
    )  # fmt: skip
    with distributed.Client(cluster, timeout=60) as c:
        yield c
    cluster.close(timeout=30)


def _frame(n, seed):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({c: rng.integers(0, u, n) for c, u in SIZES.items()})
    frame["a1"] = frame["a0"] % 3  # a cross-party correlation worth keeping
    return frame.assign(id=rng.permutation(10 * n)[:n])


def _config(n, buckets):
    return from_preset(
        "default", record_sets="equal",
        epsilon=2.0, delta=1e-6, spec=DomainSpec.from_dict(SIZES), parties=PARTIES,
        method="secure", max_rows=n + 37, secure_buckets=buckets,
    )  # fmt: skip


def _messages(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _run(tmp, data, cfg, keys):
    parties = {k: v for k, v in keys.items() if k != "server"}
    run = local_run(
        data, cfg, SECRET, seed=11, message_dir=tmp, keys=parties, server_key=keys["server"]
    )
    seconds = run.run()
    model = run.fitted(seconds)
    return _messages(tmp), model.sample(500, seed=5)


@pytest.mark.parametrize("buckets", [1, pytest.param(8, marks=pytest.mark.slow)])
def test_a_table_on_dask_writes_the_in_memory_runs_bytes(tmp_path, client, buckets):
    """Each party's table in memory, then as a Parquet dataset (several files) on the
    cluster: every message file (deals, blobs of both rounds, releases, request) and the
    synthetic sample are identical."""
    n = 3000
    frame = _frame(n, 4)
    cfg = _config(n, buckets)
    keys = {name: KeyPair.generate(name) for name, _ in [*PARTIES, ("server", [])]}
    memory = {name: frame[["id", *cols]].sample(frac=1.0, random_state=2) for name, cols in PARTIES}
    on_dask = {}
    for name, cols in PARTIES:
        folder = tmp_path / f"{name}.parquet"
        dd.from_pandas(frame[["id", *cols]], npartitions=3).to_parquet(folder)
        on_dask[name] = DaskTable(folder, client)
    bytes_memory, sample_memory = _run(tmp_path / "memory", memory, cfg, keys)
    bytes_dask, sample_dask = _run(tmp_path / "dask", on_dask, cfg, keys)
    assert bytes_memory.keys() == bytes_dask.keys() and len(bytes_memory) > 10
    for name, blob in bytes_memory.items():
        assert blob == bytes_dask[name], name
    pd.testing.assert_frame_equal(sample_memory, sample_dask)


@pytest.mark.parametrize("noise", ["split", "coins", "paillier"])
def test_partial_record_sets_on_dask_write_the_in_memory_runs_bytes(tmp_path, client, noise):
    """Partial record sets: each party's records (a different subset of one table) in
    memory, then as a Parquet dataset of three partitions on the cluster, pulled to the
    party's process one partition at a time and sorted through files: every message file
    (tokens, deals and slot maps included; with coins, the coin blobs of both releases) and
    the synthetic sample are identical; with product "paillier" (split noise), its
    ciphertexts and replies too."""
    tables, cfg = partial_tables(2000, 6)
    fields = {"cross_noise": "split", "product": "paillier"} if noise == "paillier" else {}
    cfg = dataclasses.replace(cfg, **(fields or {"cross_noise": noise}))
    on_dask = {}
    for name, table in tables.items():
        folder = tmp_path / f"{name}.parquet"
        dd.from_pandas(table, npartitions=3).to_parquet(folder)
        on_dask[name] = DaskTable(folder, client)
    same_run_bytes(tmp_path, tables, on_dask, cfg)
    sent = {p.suffix for p in (tmp_path / "memory").rglob("*") if p.is_file()}
    assert ({".features-coins", ".groups-coins"} <= sent) == (noise == "coins")
    assert ({".reply", ".group-reply"} <= sent) == (noise == "paillier")


def test_a_dask_table_refuses_duplicates_missing_columns_and_more_than_max_rows(tmp_path, client):
    n = 400
    frame = _frame(n, 1)
    twice = pd.concat([frame, frame.iloc[:1]]).reset_index(drop=True)  # another partition
    cfg = _config(n, 4)
    keys = {name: KeyPair.generate(name) for name, _ in PARTIES}

    def only_a(table):
        data = {name: frame[["id", *cols]] for name, cols in PARTIES}
        data["A"] = DaskTable(dd.from_pandas(table[["id", "a0", "a1"]], npartitions=2), client)
        return local_run(data, cfg, SECRET, seed=1, keys=keys)

    with pytest.raises(RecordIDError, match="duplicated record IDs"):
        only_a(twice).run()
    bigger = _frame(n + 38, 2)
    with pytest.raises(ConfigError, match="max_rows"):
        only_a(bigger).run()
    with pytest.raises(ConfigError, match="lacks the columns"):
        data = {name: frame[["id", *cols]] for name, cols in PARTIES}
        data["A"] = DaskTable(dd.from_pandas(frame[["id", "a0"]], npartitions=2), client)
        local_run(data, cfg, SECRET, seed=1, keys=keys)


def _aligned_twice(tmp_path, client, monkeypatch, data, alter=None):
    """Party A's table on Dask aligned in one process with its records kept in a state
    folder, then in a new one (a new DaskTable over the same data); the two alignments, and
    how many times the second aligned on the cluster."""
    cfg = _config(3000, 4)
    plan, spec = secure_plan(cfg), cfg.spec.subset(["a0", "a1"])
    folder = tmp_path / "state" / "aligned"

    def aligned():
        table = DaskTable(data, client).check("A", spec, "id")
        table.keep(folder)
        return table.align(spec, SECRET, cfg.run_context(), plan)

    first = aligned()
    if alter is not None:
        alter(folder)
    calls = [0]
    align = DaskTable._align

    def counted(*args):
        calls[0] += 1
        return align(*args)

    monkeypatch.setattr(DaskTable, "_align", counted)
    return first, aligned(), calls[0], plan


def _same_records(first, second, plan):
    offsets = np.array([0, 4])
    assert (first.n, first.record_digest) == (second.n, second.record_digest)
    assert first.data_digest == second.data_digest
    np.testing.assert_array_equal(
        first.columns(0, plan.rows, offsets), second.columns(0, plan.rows, offsets)
    )
    attrs = [(0,), (1, 0)]
    for a, b in zip(first.histograms(attrs, (4, 3)), second.histograms(attrs, (4, 3)), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_later_process_reads_the_records_its_workers_kept(tmp_path, client, monkeypatch):
    """The workers write the aligned partitions into the state folder (mode 0600 files in a
    0700 folder); a new process reads them back on the workers and aligns nothing."""
    dataset = tmp_path / "A.parquet"
    dd.from_pandas(_frame(3000, 4)[["id", "a0", "a1"]], npartitions=3).to_parquet(dataset)
    first, second, calls, plan = _aligned_twice(tmp_path, client, monkeypatch, dataset)
    assert calls == 0
    _same_records(first, second, plan)
    folder = tmp_path / "state" / "aligned"
    parts = sorted(folder.glob("part-*.npz"))
    assert len(parts) == 4 and stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in [*parts, folder / "aligned.json"]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_altered_kept_partitions_and_a_changed_dataset_are_aligned_again(
    tmp_path, client, monkeypatch
):
    dataset = tmp_path / "A.parquet"
    frame = _frame(3000, 4)[["id", "a0", "a1"]]
    dd.from_pandas(frame, npartitions=3).to_parquet(dataset)

    def flip(folder):
        part = sorted(folder.glob("part-*.npz"))[1]
        data = bytearray(part.read_bytes())
        data[len(data) // 2] ^= 1
        part.write_bytes(bytes(data))

    first, second, calls, plan = _aligned_twice(tmp_path, client, monkeypatch, dataset, flip)
    assert calls == 1
    _same_records(first, second, plan)

    def correct(folder):  # one corrected record: other dataset bytes, another binding
        changed = frame.copy()
        changed.loc[0, "a0"] = (changed.loc[0, "a0"] + 1) % 4
        for path in dataset.glob("*.parquet"):
            path.unlink()
        dd.from_pandas(changed, npartitions=3).to_parquet(dataset)

    first, second, calls, _ = _aligned_twice(tmp_path / "b", client, monkeypatch, dataset, correct)
    assert calls == 1 and first.data_digest != second.data_digest


def test_a_dask_dataframe_without_files_is_aligned_in_each_process(tmp_path, client, monkeypatch):
    frame = dd.from_pandas(_frame(3000, 4)[["id", "a0", "a1"]], npartitions=3)
    first, second, calls, plan = _aligned_twice(tmp_path, client, monkeypatch, frame)
    assert calls == 1 and not (tmp_path / "state").exists()
    _same_records(first, second, plan)


def test_the_local_cluster_starts_while_port_8787_is_taken():
    """Two runs (or two test workers) start local clusters at once: the scheduler's HTTP
    server takes a free port, so neither fails on Dask's default 8787."""
    import argparse
    import socket

    from vertimrf.cli.common import dask_client

    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", 8787))
        holder.listen()
    except OSError:
        pass  # already taken by another process: the condition under test holds
    try:
        with dask_client(argparse.Namespace(scheduler=None, workers=1)) as client:
            assert client.submit(sum, [1, 2]).result(timeout=60) == 3
    finally:
        holder.close()
