"""A party's table read in batches: a CSV or Parquet file read and encoded
batch by batch gives exactly the codes, the record-ID fingerprints and the errors of reading
the whole file with pandas and encoding it, whatever the batch size, in far less memory."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv
import pytest

from tests.helpers import ROOT
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import VertimrfError
from vertimrf.party.records import table_input
from vertimrf.party.records.frame import frame_table
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.table_input import input_format, read_frame, read_party_table

N = 300
# Text categories that CSV quoting must carry (a quote, a comma, a newline, spaces) and one
# that looks like a number; integer categories; a numeric column of floats and one of
# integers (pandas reads the two differently).
TEXT = ("a", "b b", "007", 'q"x', "c,d", "ü-x", "n\nl", " pad ")
INTS = (-3, 0, 7, 12, 100_000)
SPEC = DomainSpec(
    [
        ColumnSpec("t", "categorical", TEXT),
        ColumnSpec("i", "categorical", INTS),
        ColumnSpec("x", "numeric", None, -5.5, 1000.0, 7),
        ColumnSpec("k", "numeric", None, 0, 50, 5),
    ]
)
BATCHES = (1, 7, N + 5)


def _table(rng: np.random.Generator, ids: str) -> pd.DataFrame:
    """N random rows of SPEC, in shuffled row order, with text or 64-bit integer IDs."""
    x = rng.uniform(-5.5, 1000.0, N)
    x = np.array([round(v, int(d)) for v, d in zip(x, rng.integers(0, 15, N), strict=True)])
    x[:2] = [-5.5, 1000.0]  # both bounds
    frame = pd.DataFrame(
        {
            "t": rng.choice(np.array(TEXT, dtype=object), N),
            "i": rng.choice(INTS, N),
            "x": x,
            "k": rng.integers(0, 51, N),
        }
    )
    if ids == "text":
        rid = np.array([f"p-{v}" for v in rng.permutation(N)], dtype=object)
    else:  # up to 19 digits, negative too
        rid = rng.choice(np.arange(-(2**62), 2**62, 2**45, dtype=np.int64), N, replace=False)
    frame.insert(int(rng.integers(0, 5)), "rid", rid)
    return frame


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict:
    """Each random table as a CSV file, a Parquet file (text categories as a dictionary
    column) and a Parquet folder of three files; with the frame each was written from."""
    root = tmp_path_factory.mktemp("input")
    rng = np.random.default_rng(23)
    out: dict = {}
    for ids in ("text", "int"):
        frame = _table(rng, ids)
        frame.to_csv(root / f"{ids}.csv", index=False)
        frame.astype({"t": "category"}).to_parquet(root / f"{ids}.parquet")
        (root / ids).mkdir()
        for k, part in enumerate(np.array_split(np.arange(N), 3)):
            frame.iloc[part].to_parquet(root / ids / f"part-{k}.parquet", index=False)
        out["csv", ids] = root / f"{ids}.csv"
        out["parquet", ids] = root / f"{ids}.parquet"
        out["dataset", ids] = root / ids
        out["frame", ids] = frame
    return out


def _pandas_path(frame: pd.DataFrame) -> tuple:
    """The codes and fingerprints of a whole frame (what a party made of its table before)."""
    table, ids = frame_table("alice", SPEC, frame, "rid")
    return table, record_fingerprints(ids)


def _no_pandas(*args, **kwargs):
    raise AssertionError("pandas read the data: a batch did not settle a column's type")


@pytest.mark.parametrize("ids", ["text", "int"])
@pytest.mark.parametrize("fmt", ["csv", "parquet", "dataset"])
def test_batches_give_the_codes_and_fingerprints_of_pandas(files, fmt, ids, monkeypatch):
    path = files[fmt, ids]
    whole = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    want, want_fp = _pandas_path(whole)
    # The files carry the frame they were written from: the reference reads them right.
    original = files["frame", ids]
    np.testing.assert_array_equal(want.codes, TableEncoder(SPEC).encode(original[list(SPEC.names)]))
    np.testing.assert_array_equal(want_fp, record_fingerprints(original["rid"]))
    pd.testing.assert_frame_equal(read_frame(path), whole)
    # Every batch settles its columns' types here: pandas reads no data (only the header).
    monkeypatch.setattr(table_input, "read_frame", _no_pandas)
    monkeypatch.setattr(table_input._Csv, "pandas_columns", _no_pandas)
    monkeypatch.setattr(table_input._Parquet, "pandas_columns", _no_pandas)
    for rows in BATCHES:
        table, fp = read_party_table(path, SPEC, "rid", party="alice", batch_rows=rows)
        assert table.domain == want.domain and table.codes.dtype == want.codes.dtype
        np.testing.assert_array_equal(table.codes, want.codes)
        assert fp.dtype == np.uint64
        np.testing.assert_array_equal(fp, want_fp)


def _outcome(read) -> tuple:
    """("ok", codes, dtype, fingerprints) or ("error", type, message) of ``read()``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a 0- or 1-row table warns
        try:
            table, fp = read()
        except VertimrfError as exc:
            return ("error", type(exc).__name__, str(exc))
    return ("ok", table.codes.tolist(), str(table.codes.dtype), fp.tolist())


def _same_as_pandas(path: Path, spec: DomainSpec = SPEC, batches=BATCHES) -> tuple:
    """The batched outcome at every batch size, asserted equal to the pandas path's."""

    def whole():
        table, ids = frame_table("alice", spec, read_frame(path), "rid")
        return table, record_fingerprints(ids)

    want = _outcome(whole)
    for rows in batches:
        got = _outcome(partial(read_party_table, path, spec, "rid", party="alice", batch_rows=rows))
        assert got == want, (path.name, rows)
    return want


SMALL = DomainSpec(
    [
        ColumnSpec("t", "categorical", ("a", "b b", "007", None)),
        ColumnSpec("i", "categorical", (-3, 0, 1, 5, 7)),
        ColumnSpec("x", "numeric", None, -5.5, 100.0, 7),
    ]
)
# CSV text whose batches cannot settle a column's type (or which pyarrow does not parse as
# pandas does): pandas reads that column (or the file), and its answer is the answer.
ODD_CSV = {
    "signs and spaces": "rid,t,i,x\np1,a,+5,2.5\np2,b b, 5,+100\np3,a,-0,-0\n",
    "integers written as floats": "rid,t,i,x\np1,a,1.0,2.5\np2,a,5e0,3\n",
    "missing text matches None": "rid,t,i,x\np1,a,1,2.5\np2,NA,5,3\np3,,0,1\n",
    "text that is all numbers": "rid,t,i,x\np1,007,1,2.5\np2,007,1,3\n",
    "text that is a word pandas reads as a boolean": "rid,t,i,x\np1,True,1,2.5\np2,a,1,3\n",
    "missing integer": "rid,t,i,x\np1,a,1,2.5\np2,a,,3\n",
    "missing number": "rid,t,i,x\np1,a,1,2.5\np2,a,1,\n",
    "not a number": "rid,t,i,x\np1,a,1,2.5\np2,a,1,abc\np3,a,1,xyz\n",
    "out of bounds": "rid,t,i,x\np1,a,1,2.5\np2,a,1,1e9\np3,a,1,1e400\n",
    "integer IDs written with zeros": "rid,t,i,x\n5,a,1,2.5\n-7,a,1,3\n007,a,1,3\n",
    "the same ID twice, written two ways": "rid,t,i,x\n7,a,1,2.5\n-7,a,1,3\n007,a,1,3\n",
    "IDs mixing numbers and text": "rid,t,i,x\n12,a,1,2.5\nab,a,1,3\n13,a,1,3\n",
    "float IDs": "rid,t,i,x\n1.5,a,1,2.5\n2,a,1,3\n",
    "missing IDs": "rid,t,i,x\n1,a,1,2.5\n,a,1,3\nNA,a,1,3\n",
    "IDs past int64": "rid,t,i,x\n9223372036854775808,a,1,2.5\n2,a,1,3\n",
    "IDs past uint64": "rid,t,i,x\n123456789012345678901234,a,1,2.5\n2,a,1,3\n",
    "boolean IDs": "rid,t,i,x\nTrue,a,1,2.5\nFalse,a,1,3\n",
    "a row too long": "rid,t,i,x\np1,a,1,2.5\np2,a,1,3,9\n",
    "a row too short": "rid,t,i,x\np1,a,1,2.5\np2,a,1\n",
    "a trailing comma on each row": "rid,t,i,x\np1,a,1,2.5,\np2,a,0,3,\n",
    "a header repeated": "rid,t,i,x,x\np1,a,1,2.5,0\n",
    "a BOM, CRLF and blank lines": "\ufeffrid,t,i,x\r\n\r\np1,a,1,2.5\r\np2,b b,0,3\r\n",
    "a header only": "rid,t,i,x\n",
    "an empty file": "",
}


@pytest.mark.parametrize("case", list(ODD_CSV))
def test_odd_csv_text_gives_what_pandas_gives(tmp_path, case):
    path = tmp_path / "odd.csv"
    path.write_text(ODD_CSV[case], encoding="utf-8", newline="")
    _same_as_pandas(path, SMALL, batches=(1, 2, 50))


def test_bytes_that_are_no_utf8_or_no_csv_give_the_pandas_error(tmp_path):
    (tmp_path / "latin.csv").write_bytes("rid,t,i,x\np1,a\xff,1,2.5\n".encode("latin-1"))
    (tmp_path / "junk.csv").write_bytes(bytes(range(256)) * 4)
    for name in ("latin.csv", "junk.csv"):
        kind, _, message = _same_as_pandas(tmp_path / name, SMALL, batches=(1, 50))
        assert kind == "error" and message.startswith(f"cannot read CSV {tmp_path / name}: ")


def _write(frame: pd.DataFrame, root: Path, fmt: str, name: str) -> Path:
    path = root / f"{name}.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_errors_are_the_pandas_paths_whatever_the_batch(files, tmp_path, fmt):
    """Each bad table gives the pandas path's one-line error: rows counted from the top of
    the file and bad values counted over all of it, though they lie in different batches."""
    frame = files["frame", "text"]
    bad_cells = frame.astype({"i": object})
    bad_cells.loc[[3, 250], "i"] = [8, 9]
    out_of_bounds = frame.copy()
    out_of_bounds.loc[[200, 201], "x"] = [5000.0, -6.0]
    duplicated = frame.copy()
    duplicated.loc[290, "rid"] = duplicated.loc[5, "rid"]
    missing_id = frame.copy()
    missing_id.loc[[100, 120], "rid"] = None
    cases = {
        "no-id": (frame.rename(columns={"rid": "id"}), "no record-ID column 'rid'"),
        "bad-cell": (bad_cells, "column 'i', row 4 (counting from 1 after the header): the value"),
        "bounds": (out_of_bounds, "column 'x', row 201 "),
        "duplicate": (duplicated, "2 rows carry 1 duplicated record ID(s) (e.g. 'p-"),
        "missing-id": (missing_id, "2 of 300 record IDs are missing (None, NaN or empty) at rows"),
    }
    for name, (table, pattern) in cases.items():
        kind, _, message = _same_as_pandas(_write(table, tmp_path, fmt, name))
        assert kind == "error" and pattern in message, (name, message)
        assert "\n" not in message
        if name == "bad-cell":
            assert "; 2 bad rows in all (other values: 9);" in message


def test_a_corrupt_file_gives_the_pandas_paths_error(files, tmp_path):
    text = files["csv", "text"].read_text(encoding="utf-8")
    text += "p-x,a,0,1.0,2,surplus\n"  # one field too many, in the last batch
    (tmp_path / "ragged.csv").write_text(text, encoding="utf-8")
    kind, _, message = _same_as_pandas(tmp_path / "ragged.csv")
    assert kind == "error" and "Expected 5 fields in line" in message and "\n" not in message
    raw = files["parquet", "text"].read_bytes()
    (tmp_path / "cut.parquet").write_bytes(raw[: len(raw) // 2])  # the footer lost
    kind, _, message = _same_as_pandas(tmp_path / "cut.parquet")
    assert kind == "error" and message.startswith(f"cannot read Parquet {tmp_path / 'cut.parquet'}")
    assert "\n" not in message


def test_the_format_is_told_by_content_suffix_or_folder(files, tmp_path):
    (tmp_path / "table.data").write_bytes(files["parquet", "int"].read_bytes())
    (tmp_path / "table.pq").write_text("not yet written")
    assert input_format(tmp_path / "table.data") == "parquet"  # Parquet's magic bytes
    assert input_format(tmp_path / "table.pq") == "parquet"  # the suffix
    assert input_format(files["dataset", "int"]) == "parquet"  # a folder
    assert input_format(files["csv", "int"]) == "csv"
    _, want_fp = _pandas_path(pd.read_parquet(files["parquet", "int"]))
    _, fp = read_party_table(tmp_path / "table.data", SPEC, "rid", party="alice")
    np.testing.assert_array_equal(fp, want_fp)


def test_the_missing_values_are_pandas_defaults():
    from pandas._libs.parsers import STR_NA_VALUES

    assert set(table_input.NA_STRINGS) == STR_NA_VALUES


# The peak memory of a child process reading a 400k-row CSV file (a text ID, ten integer and
# two numeric columns; 21 MB), over its memory just before: the batched reader (batches of
# 10k rows), then the pandas path (pandas.read_csv, the encoding and the fingerprints).
# Measured: batched ~20 MB; the pandas path ~110 MB, pandas.read_csv alone ~105 MB. The
# pandas path goes second, so it may reuse memory the batched reader freed: its figure can
# only come out lower, and the bound (a third) holds with room.
_MEMORY = """
import sys
import numpy as np, pandas as pd
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.frame import frame_table
from vertimrf.party.records.table_input import read_party_table

path, small = sys.argv[1], sys.argv[2]
spec = DomainSpec(
    [ColumnSpec(str(j), "categorical", tuple(range(5))) for j in range(10)]
    + [ColumnSpec(f"x{j}", "numeric", None, 0.0, 1.0, 8) for j in range(2)]
)

def pandas_path(p):
    table, ids = frame_table("a", spec, pd.read_csv(p), "rid")
    return table, record_fingerprints(ids)

def batched(p):
    return read_party_table(p, spec, "rid", party="a", batch_rows=10_000)

def status(field):  # kB; not getrusage's ru_maxrss, which may be the forking parent's
    return int(open("/proc/self/status").read().split(field + ":")[1].split()[0])

def peak_over(read):
    try:  # the peak (VmHWM) from now on, where Linux allows
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass
    before = status("VmRSS")
    out = read(path)
    return status("VmHWM") - before, out

batched(small), pandas_path(small)  # warm: both paths' code loaded
b, (table, fp) = peak_over(batched)
p, (want, want_fp) = peak_over(pandas_path)
assert (table.codes == want.codes).all() and (fp == want_fp).all()
print(b, p)
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_batches_take_a_fraction_of_the_memory_of_pandas(tmp_path):
    rng = np.random.default_rng(5)
    n = 400_000
    frame = pd.DataFrame({str(j): rng.integers(0, 5, n) for j in range(10)})
    for j in range(2):
        frame[f"x{j}"] = rng.random(n).round(6)
    frame.insert(0, "rid", [f"person-{i:07d}" for i in rng.permutation(n)])
    pa_csv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), tmp_path / "big.csv")
    frame.iloc[:2000].to_csv(tmp_path / "small.csv", index=False)
    root = str(ROOT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", _MEMORY, str(tmp_path / "big.csv"), str(tmp_path / "small.csv")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    batched_kb, pandas_kb = map(int, proc.stdout.split())
    assert batched_kb < pandas_kb / 3, (batched_kb, pandas_kb)
