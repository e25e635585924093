"""Empty cells in a party's file: in columns whose spec declares ``"missing"``, a
CSV or Parquet file read in batches, or streamed and aligned through part files, gives the
codes of the whole table read by pandas and encoded in memory; the batches settle every
column without pandas reading the data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.party.records import table_input
from vertimrf.party.records.aligned import AlignedTable
from vertimrf.party.records.file_table import FileAligned, FileTable
from vertimrf.party.records.frame import frame_table
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.table_input import read_frame, read_party_table
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan

N = 400
SECRET = bytes(range(32))
TEXT = ("a", "b b", "c")
INTS = (-3, 0, 7, 100_000)
SPEC = DomainSpec(
    [
        ColumnSpec("t", "categorical", TEXT, missing=True),
        ColumnSpec("i", "categorical", INTS, missing=True),
        ColumnSpec("x", "numeric", None, -5.5, 1000.0, 7, missing=True),
        ColumnSpec("k", "numeric", None, 0, 50, 5, missing=True),
        ColumnSpec("s", "categorical", ("F", "M")),
    ]
)
BATCHES = (1, 7, 64, N + 5)


def _frame(seed: int) -> pd.DataFrame:
    """N rows of SPEC with IDs; about a fifth of each column that may be empty is empty, and
    the first 100 rows hold none (so some batches have no null and others only nulls)."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "rid": [f"p{v}" for v in rng.permutation(N)],
            "t": rng.choice(np.array(TEXT, dtype=object), N),
            "i": rng.choice(np.array(INTS, dtype=object), N),
            "x": rng.uniform(-5.5, 1000.0, N).round(3),
            "k": rng.integers(0, 51, N).astype(object),
            "s": rng.choice(["F", "M"], N),
        }
    )
    for column in ("t", "i", "x", "k"):
        empty = rng.random(N) < 0.2
        empty[:100] = False
        empty[200:210] = True
        frame[column] = frame[column].astype(object).where(~empty, None)
    return frame


def _write(frame: pd.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


def _no_pandas(*args, **kwargs):
    raise AssertionError("pandas read the data: a batch did not settle a column")


def _whole(path: Path, spec: DomainSpec = SPEC) -> tuple[np.ndarray, np.ndarray]:
    table, ids = frame_table("alice", spec, read_frame(path), "rid")
    return table.codes, record_fingerprints(ids)


@pytest.fixture(params=[".csv", ".parquet"])
def path(request, tmp_path) -> Path:
    return _write(_frame(3), tmp_path / f"alice{request.param}")


def test_batches_with_empty_cells_give_the_codes_of_pandas(path, monkeypatch):
    want, want_fp = _whole(path)
    empty = want[:, :4] == np.array([c.missing_code for c in SPEC.columns[:4]])
    np.testing.assert_array_equal(empty, _frame(3)[["t", "i", "x", "k"]].isna().to_numpy())
    assert empty[:100].sum() == 0 and empty[200:210].all()
    monkeypatch.setattr(table_input, "read_frame", _no_pandas)
    monkeypatch.setattr(table_input._Csv, "pandas_columns", _no_pandas)
    monkeypatch.setattr(table_input._Parquet, "pandas_columns", _no_pandas)
    for rows in BATCHES:
        table, fp = read_party_table(path, SPEC, "rid", party="alice", batch_rows=rows)
        np.testing.assert_array_equal(table.codes, want)
        np.testing.assert_array_equal(fp, want_fp)


def test_a_file_table_with_empty_cells_is_streamed_and_aligned_as_in_memory(path):
    peer = ColumnSpec("b", "categorical", (0, 1))
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-6, spec=DomainSpec([*SPEC.columns, peer]),
        parties=[("A", list(SPEC.names)), ("B", ["b"])], method="secure", max_rows=N + 617,
        secure_buckets=4,
    )  # fmt: skip
    plan = secure_plan(cfg)
    held = (
        FileTable(path, part_rows=50, batch_rows=64)
        .check("A", SPEC, "rid")
        .align(SPEC, SECRET, cfg.run_context(), plan)
    )
    assert isinstance(held, FileAligned)  # streamed through part files, not read whole
    codes, fingerprints = _whole(path)
    memory = AlignedTable(
        codes, fingerprints, SECRET, cfg.run_context(), plan.buckets, plan.capacity,
        plan.max_rows,
    )  # fmt: skip
    assert (held.n, held.record_digest, held.data_digest) == (
        memory.n,
        memory.record_digest,
        memory.data_digest,
    )
    sizes = SPEC.domain.sizes
    attrs = [(j,) for j in range(len(sizes))] + [(0, 1), (2, 3)]
    for got, want in zip(
        held.histograms(attrs, sizes), memory.histograms(attrs, sizes), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    offsets = SPEC.domain.offsets
    np.testing.assert_array_equal(
        held.columns(0, plan.rows, offsets), memory.columns(0, plan.rows, offsets)
    )


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_integer_categories_that_floats_would_round_are_read_by_pandas(tmp_path, suffix):
    """pandas may hold an integer column with an empty cell as floats, where 2**53 + 1
    becomes 2**53, or as integers (a Parquet file written from pandas' Int64): a batch cannot
    tell which, so pandas reads such a column."""
    big = 2**53
    spec = DomainSpec([ColumnSpec("i", "categorical", (0, big, big + 1), missing=True)])
    values = pd.array([0, big + 1, big, None], dtype="Int64")
    frame = pd.DataFrame({"rid": ["a", "b", "c", "d"], "i": values})
    path = _write(frame, tmp_path / f"t{suffix}")
    want = _whole(path, spec)
    for rows in (1, 2, 10):
        table, fp = read_party_table(path, spec, "rid", party="alice", batch_rows=rows)
        np.testing.assert_array_equal(table.codes, want[0])
        np.testing.assert_array_equal(fp, want[1])
