"""Record-ID fingerprints: vectorised, identical across input kinds and processes, strict."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from vertimrf.errors import RecordIDError
from vertimrf.party.records import ids as ids_module
from vertimrf.party.records.ids import record_fingerprints

STRINGS = ["alice", "bob", "Émile", "李", "x" * 200, "0"]
# pandas.util.hash_array of STRINGS[:2]; pinned because every party must agree on it.
PINNED = [2073883683912626804, 16374657433658891730]


def test_int_ids_are_a_bijective_cast():
    values = np.array([0, 1, -1, 2**62, -(2**63), 2**63 - 1], dtype=np.int64)
    got = record_fingerprints(values)
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, values.view(np.uint64))
    for same in (values.tolist(), pd.Series(values), pd.Series(values, dtype="Int64")):
        np.testing.assert_array_equal(record_fingerprints(same), got)
    small = np.array([3, -4, 5], dtype=np.int16)
    np.testing.assert_array_equal(record_fingerprints(small), small.astype(np.int64).view("u8"))
    big = np.array([2**64 - 1, 7], dtype=np.uint64)
    np.testing.assert_array_equal(record_fingerprints(big), big)
    np.testing.assert_array_equal(record_fingerprints([2**64 - 1, 7]), big)


def test_string_ids_agree_across_input_kinds():
    want = record_fingerprints(STRINGS)
    assert want.dtype == np.uint64 and np.unique(want).size == len(STRINGS)
    kinds = [
        np.array(STRINGS),
        np.array(STRINGS, dtype=object),
        pd.Series(STRINGS),
        pd.Series(STRINGS, dtype="category"),
        pd.Series(STRINGS, dtype="string"),
        pd.Index(STRINGS),
    ]
    for kind in kinds:
        np.testing.assert_array_equal(record_fingerprints(kind), want)
    assert record_fingerprints(STRINGS[:2]).tolist() == PINNED


def test_series_index_is_ignored():
    series = pd.Series(["a", "b", "c"], index=[10, 5, 7])
    np.testing.assert_array_equal(record_fingerprints(series), record_fingerprints(["a", "b", "c"]))


def test_fingerprints_are_the_same_in_another_process():
    code = (
        "from vertimrf.party.records.ids import record_fingerprints;"
        f"print(record_fingerprints({STRINGS!r}).tolist())"
    )
    for seed in ("1", "12345"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        assert out.stdout.strip() == str(record_fingerprints(STRINGS).tolist())


def test_large_string_column_is_vectorised():
    ids = pd.Series(np.arange(200_000)).astype(str)
    fps = record_fingerprints(ids)
    assert fps.shape == (200_000,) and np.unique(fps).size == 200_000


def test_empty_column():
    assert record_fingerprints([]).shape == (0,)


@pytest.mark.parametrize(
    ("ids", "count", "example"),
    [
        ([5, 1, 5, 2, 5, 1], 5, "5"),
        (["a", "b", "a", "c"], 2, "'a'"),
        (pd.Series([3, 3], dtype="Int64"), 2, "3"),
    ],
)
def test_duplicates_are_counted_and_shown(ids, count, example):
    with pytest.raises(RecordIDError, match="duplicated") as err:
        record_fingerprints(ids)
    assert str(err.value).startswith(f"{count} rows")
    assert example in str(err.value)


@pytest.mark.parametrize(
    "ids",
    [
        ["a", None, "c", None],
        ["a", "", "c", np.nan],
        [1.0, np.nan, np.nan, 3.0],
        pd.Series([1, None, pd.NA, 4], dtype="Int64"),
        pd.Series(["a", pd.NA, None, "d"], dtype="string"),
    ],
)
def test_missing_ids_are_counted_with_rows(ids):
    with pytest.raises(RecordIDError, match=r"2 of 4 record IDs are missing") as err:
        record_fingerprints(ids)
    assert "rows 1, " in str(err.value) or "rows 2, " in str(err.value)


def test_fingerprint_collision_is_reported(monkeypatch):
    def colliding(values: np.ndarray) -> np.ndarray:
        return np.array([7, 8, 7], dtype=np.uint64)

    monkeypatch.setattr(ids_module, "text_fingerprints", colliding)
    with pytest.raises(RecordIDError, match="share a 64-bit fingerprint") as err:
        record_fingerprints(["x", "y", "z"])
    assert "rows 0, 2" in str(err.value)


@pytest.mark.parametrize(
    "ids",
    [
        [1.5, 2.5],
        np.array([True, False]),
        [1, "a"],
        [b"a", b"b"],
        np.zeros((2, 2), dtype=np.int64),
        "abc",
        7,
        [2**70, 1],
    ],
)
def test_unsupported_ids_are_rejected(ids):
    with pytest.raises(RecordIDError):
        record_fingerprints(ids)
