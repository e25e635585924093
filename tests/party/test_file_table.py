"""A party's table in a file, aligned through temporary files a part at a time: the same rows,
digests, count tables and messages as the table aligned in memory, at any part size and
bucket count (overflow included), with memory that does not grow with the rows."""

from __future__ import annotations

import gc
import stat
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.secure_runs import ids_overflowing
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.errors import ConfigError, DomainError, RecordIDError
from vertimrf.party.records.aligned import AlignedTable
from vertimrf.party.records.file_table import FileAligned, FileTable
from vertimrf.party.records.table_input import read_party_table
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan

SECRET = bytes(range(32))
SIZES = {"a0": 4, "a1": 3, "b0": 5, "b1": 2, "c0": 3}
PARTIES = [("A", ["a0", "a1"]), ("B", ["b0", "b1"]), ("C", ["c0"])]


def _frame(n, seed, ids=None):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({c: rng.integers(0, u, n) for c, u in SIZES.items()})
    frame["a1"] = frame["a0"] % 3
    return frame.assign(id=rng.permutation(10 * n)[:n] if ids is None else ids)


def _config(max_rows, buckets):
    return from_preset(
        "default", record_sets="equal",
        epsilon=2.0, delta=1e-6, spec=DomainSpec.from_dict(SIZES), parties=PARTIES,
        method="secure", max_rows=max_rows, secure_buckets=buckets,
    )  # fmt: skip


def _write(frame, path):
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def _pair(path, cfg, **kwargs):
    """Party A's table at ``path`` aligned from the file and in memory."""
    plan = secure_plan(cfg)
    spec = cfg.spec.subset(["a0", "a1"])
    held = (
        FileTable(path, **kwargs)
        .check("A", spec, "id")
        .align(spec, SECRET, cfg.run_context(), plan)
    )
    table, fingerprints = read_party_table(path, spec, "id", party="A")
    memory = AlignedTable(
        table.codes, fingerprints, SECRET, cfg.run_context(), plan.buckets, plan.capacity,
        plan.max_rows,
    )  # fmt: skip
    return held, memory, plan


def _same(held, memory, plan, rng):
    offsets = np.array([0, 4])
    assert held.n == memory.n
    assert held.record_digest == memory.record_digest
    assert held.data_digest == memory.data_digest
    np.testing.assert_array_equal(
        held.columns(0, plan.rows, offsets), memory.columns(0, plan.rows, offsets)
    )
    for _ in range(20):  # blocks of any length, across bucket edges
        r0 = int(rng.integers(0, plan.rows))
        r1 = int(rng.integers(r0 + 1, plan.rows + 1))
        np.testing.assert_array_equal(
            held.columns(r0, r1, offsets), memory.columns(r0, r1, offsets)
        )
    attrs = [(0,), (1,), (0, 1), (1, 0)]
    got_all, want_all = held.histograms(attrs, (4, 3)), memory.histograms(attrs, (4, 3))
    for got, want in zip(got_all, want_all, strict=True):
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("buckets", [1, 8])
@pytest.mark.parametrize("part_rows", [7, 300, 1 << 20])
def test_a_file_table_is_aligned_as_in_memory(tmp_path, suffix, buckets, part_rows):
    """Many parts per bucket, several buckets per part, or one part: the same digests, the
    same one-hot columns of every row block and the same exact count tables."""
    n = 2000
    frame = _frame(n, 3).sample(frac=1.0, random_state=4)
    path = _write(frame[["id", "a0", "a1"]], tmp_path / f"a{suffix}")
    held, memory, plan = _pair(path, _config(n + 17, buckets), part_rows=part_rows, batch_rows=333)
    assert isinstance(held, FileAligned) == (part_rows < n + 17)  # else read whole: one part
    _same(held, memory, plan, np.random.default_rng(buckets))


def test_an_overflowing_bucket_spills_as_in_memory(tmp_path):
    cfg = _config(64, 8)
    ids, _ = ids_overflowing(cfg, 64, 2, 3)
    path = _write(_frame(64, 5, ids)[["id", "a0", "a1"]], tmp_path / "a.parquet")
    held, memory, plan = _pair(path, cfg, part_rows=5, batch_rows=10)
    assert held._spill_slots.size == 3  # the three records past bucket 2's capacity
    _same(held, memory, plan, np.random.default_rng(0))


def test_a_file_whose_batches_do_not_settle_its_columns_is_read_whole(tmp_path):
    """IDs that are integers in the first batch and text later, and a column of mixed
    categories: pandas reads the whole column otherwise than a batch, so the table is read
    whole, with the same result."""
    n = 300
    frame = _frame(n, 6)[["id", "a0", "a1"]].astype({"id": object})
    frame.loc[n - 1, "id"] = "x-last"
    path = _write(frame, tmp_path / "a.csv")
    held, memory, plan = _pair(path, _config(n, 4), batch_rows=50)
    assert isinstance(held, AlignedTable)
    _same(held, memory, plan, np.random.default_rng(1))


def test_the_temporary_files_are_private_and_removed(tmp_path):
    n = 500
    path = _write(_frame(n, 7)[["id", "a0", "a1"]], tmp_path / "a.parquet")
    temp = tmp_path / "temp"
    temp.mkdir()
    cfg = _config(n, 2)
    plan = secure_plan(cfg)
    spec = cfg.spec.subset(["a0", "a1"])
    table = FileTable(path, part_rows=64, temp_dir=temp).check("A", spec, "id")
    held = table.align(spec, SECRET, cfg.run_context(), plan)
    (folder,) = temp.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == ["codes", "fp"]  # parts removed
    del held
    gc.collect()
    assert not any(temp.iterdir())
    twice = _write(_frame(n, 7)[["id", "a0", "a1"]].iloc[[*range(n), 0]], tmp_path / "b.parquet")
    with pytest.raises(RecordIDError, match="2 rows carry duplicated record IDs"):
        FileTable(twice, part_rows=64, temp_dir=temp).check("A", spec, "id").align(
            spec, SECRET, cfg.run_context(), secure_plan(_config(n + 1, 2))
        )
    assert not any(temp.iterdir())  # an error leaves nothing behind
    with pytest.raises(
        ConfigError, match="holds at least 50[0-9] records but the config's max_rows is 499"
    ):
        FileTable(path, part_rows=64, temp_dir=temp).check("A", spec, "id").align(
            spec, SECRET, cfg.run_context(), secure_plan(_config(n - 1, 2))
        )
    assert not any(temp.iterdir())


def test_bad_arguments_and_a_missing_column_are_refused_before_reading(tmp_path):
    path = _write(_frame(50, 8)[["id", "a0"]], tmp_path / "a.csv")
    spec = _config(50, 1).spec.subset(["a0", "a1"])
    with pytest.raises(DomainError, match="missing"):
        FileTable(path).check("A", spec, "id")
    with pytest.raises(ConfigError, match="part_rows must be a positive integer"):
        FileTable(path, part_rows=0)
    with pytest.raises(ConfigError, match="no folder"):
        FileTable(path, temp_dir=tmp_path / "nowhere")
    with pytest.raises(ConfigError, match="cannot read"):
        FileTable(tmp_path / "none.csv")


def _messages(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.mark.parametrize("buckets", [1, 8])
def test_parties_reading_files_write_the_in_memory_runs_bytes(tmp_path, buckets):
    """Every message file (deals, blobs of both rounds, releases, request) and the synthetic
    sample are identical whether each party's table is in memory or in a file aligned a few
    hundred records at a time."""
    n = 3000
    frame = _frame(n, 9)
    cfg = _config(n + 37, buckets)
    keys = {name: KeyPair.generate(name) for name, _ in [*PARTIES, ("server", [])]}
    parties = {k: v for k, v in keys.items() if k != "server"}
    memory = {name: frame[["id", *cols]] for name, cols in PARTIES}
    files = {
        name: FileTable(_write(frame[["id", *cols]], tmp_path / f"{name}.csv"), part_rows=200)
        for name, cols in PARTIES
    }
    out = {}
    for what, data in (("memory", memory), ("file", files)):
        run = local_run(
            data, cfg, SECRET, seed=11, message_dir=tmp_path / what, keys=parties,
            server_key=keys["server"],
        )  # fmt: skip
        model = run.fitted(run.run())
        out[what] = _messages(tmp_path / what), model.sample(500, seed=5)
    assert out["memory"][0].keys() == out["file"][0].keys() and len(out["memory"][0]) > 10
    for name, blob in out["memory"][0].items():
        assert blob == out["file"][0][name], name
    pd.testing.assert_frame_equal(out["memory"][1], out["file"][1])


def _align_peak(path, n, held):
    cfg = _config(n, 1)
    plan = secure_plan(cfg)
    spec = cfg.spec.subset(["a0", "a1"])
    gc.collect()
    tracemalloc.start()
    try:
        if held:
            table = FileTable(path, batch_rows=4096, part_rows=4096).check("A", spec, "id")
            aligned = table.align(spec, SECRET, cfg.run_context(), plan)
        else:
            codes, fingerprints = read_party_table(path, spec, "id", party="A", batch_rows=4096)
            aligned = AlignedTable(
                codes.codes, fingerprints, SECRET, cfg.run_context(), 1, plan.capacity,
                plan.max_rows,
            )  # fmt: skip
        aligned.histograms([(0, 1)], (4, 3))
        aligned.columns(0, min(4096, plan.rows), np.zeros(2, np.int64))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_memory_of_a_file_table_does_not_grow_with_its_rows(tmp_path):
    """numpy reports its arrays to tracemalloc. With batches of 4,096 rows and parts of at
    most 4,096 records on average (32 parts at max_rows 100,000, 128 at 400,000), aligning
    100,000 and 400,000 records peaks alike, under 1 MiB (measured: about 0.2 MiB); aligning
    in memory grows with the rows (measured: 52 bytes a record)."""
    warm = _write(_frame(1000, 11)[["id", "a0", "a1"]], tmp_path / "warm.parquet")
    _align_peak(warm, 1000, True)  # compiles the PRF kernel first
    peaks = {}
    for n in (100_000, 400_000):
        path = _write(_frame(n, 10)[["id", "a0", "a1"]], tmp_path / f"{n}.parquet")
        peaks[n] = _align_peak(path, n, True), _align_peak(path, n, False)
    held_small, held_large = peaks[100_000][0], peaks[400_000][0]
    assert held_large < 1.25 * held_small  # in memory: 4 times
    assert held_large < 1 << 20
    assert peaks[400_000][1] > 40 * 400_000
    assert peaks[400_000][1] > 3.5 * peaks[100_000][1]
