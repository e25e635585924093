"""The synthetic CSV's rows, built by Arrow (:func:`vertimrf.synth.csv_rows.write_rows`), are
the bytes pandas' ``to_csv`` writes: integers, floats, booleans, text that needs quotes,
categories, dates and missing cells, in frames of one column and of many; dtypes Arrow does
not write the same way go through pandas."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.synth.csv_rows import write_rows
from vertimrf.synth.table_file import save_table

TEXT = ["plain", "a,b", 'say "hi"', "two\nlines", "cr\rhere", "", " padded ", "é ✓", "'q'", ";"]
FLOATS = [0.1, 1e-7, 1e-5, 0.0001, 2.5e20, 1e16, 9999999999999998.0, 123456789012.0, 1.0]
FLOATS += [-0.0, 0.0, -2.5e-8, np.inf, -np.inf, np.nan, 5e-324, 1.7976931348623157e308, 100.0]


def _rows(frame: pd.DataFrame) -> bytes:
    fh = io.BytesIO()
    write_rows(fh, frame)
    return fh.getvalue()


def _same(frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch | None = None) -> None:
    """``frame``'s rows, whole and each column alone (a lone empty cell is written ""), are
    pandas' bytes; with ``monkeypatch``, none of them written by pandas."""
    parts = [frame, *(frame[[name]] for name in frame.columns)]
    want = [part.to_csv(index=False, header=False).encode() for part in parts]
    if monkeypatch is not None:
        monkeypatch.setattr(pd.DataFrame, "to_csv", None)
    assert [_rows(part) for part in parts] == want


def _columns(n: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(TEXT), n)
    gaps = rng.random(n) < 0.2
    text = np.array(TEXT, dtype=object)[pick]
    text[gaps] = np.nan
    scale = 10.0 ** rng.integers(-9, 22, n)
    cats = pd.Categorical.from_codes(np.where(gaps, -1, pick), categories=TEXT)
    return {
        "int": rng.integers(-(10**12), 10**12, n),
        "int32": rng.integers(-100, 100, n).astype(np.int32),
        "uint64": rng.integers(0, 2**64 - 1, n, dtype=np.uint64),
        "Int64": pd.array(np.where(gaps, None, rng.integers(0, 9, n)), dtype="Int64"),
        "float": np.where(gaps, np.nan, np.round(rng.random(n) * scale, rng.integers(0, 9))),
        "float_edges": np.array(FLOATS)[rng.integers(0, len(FLOATS), n)],
        "bool": rng.random(n) < 0.5,
        "boolean": pd.array(np.where(gaps, None, rng.random(n) < 0.5), dtype="boolean"),
        "str": pd.Series(text, dtype="str"),
        "object": pd.Series(text, dtype=object),
        "category": cats,
        "ordered": pd.Categorical(cats, ordered=True),
        "int_category": pd.Categorical.from_codes(np.where(gaps, -1, pick % 3), [7, 8, 9]),
        "float_category": pd.Categorical.from_codes(pick % 3, [0.1, 1e-7, 2.0]),
        "bool_category": pd.Categorical.from_codes(pick % 2, [False, True]),
        "int_object": pd.Series(np.where(gaps, None, pick.astype(object)), dtype=object),
        "dates_as_text": np.where(gaps, None, "2024-01-0" + (pick % 9 + 1).astype(str)),
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [1, 7, 500])
def test_the_rows_are_pandas_bytes(n, seed, monkeypatch):
    _same(pd.DataFrame(_columns(n, seed)), monkeypatch)


@pytest.mark.parametrize(
    "column",
    [
        pd.to_datetime(["2024-01-01", None, "2024-03-05"]),
        pd.to_datetime(["2024-01-01 10:30", "2024-02-01 00:00", None]),
        pd.Categorical(pd.to_datetime(["2024-01-01", "2024-02-01", None])),
        np.array([0.1, 1e-7, np.nan], np.float32),
        pd.array([0.1, None, 3.0], dtype="Float64"),
        pd.Series([1, "a", 2.5], dtype=object),
        pd.Series([1, True, None], dtype=object),
        pd.Series([0.5, 1.0, None], dtype=object),
        pd.timedelta_range("1 day", periods=3),
    ],
    ids=[
        "dates",
        "datetimes",
        "date_category",
        "float32",
        "Float64",
        "mixed",
        "int_bool",
        "floats",
        "timedelta",
    ],
)
def test_other_dtypes_go_through_pandas(column):
    _same(pd.DataFrame({"x": column, "n": [1, 2, 3], "t": ["a,b", None, "c"]}))


def test_empty_frames_are_written_as_pandas_writes_them():
    _same(pd.DataFrame({"a": pd.Series([], dtype=np.int64), "b": pd.Series([], dtype="str")}))
    _same(pd.DataFrame({"a": [np.nan, np.nan], "b": [None, ""]}))
    _same(pd.DataFrame({"a": ["", ""]}))


def test_a_decoded_table_file_is_pandas_csv(tmp_path):
    """Every column kind ``decode`` gives (text and integer categories, numbers, dates as
    text), with empty cells, reads back as the frame pandas' own CSV does."""
    spec = DomainSpec.from_dict(
        {
            "columns": [
                {
                    "name": "t",
                    "type": "categorical",
                    "categories": ["a", "b,c", 'd"e'],
                    "missing": True,
                },
                {"name": "k", "type": "categorical", "categories": [0, 1, 5], "missing": True},
                {
                    "name": "x",
                    "type": "numeric",
                    "lower": -1e-6,
                    "upper": 1e12,
                    "bins": 8,
                    "missing": True,
                },
                {
                    "name": "d",
                    "type": "datetime",
                    "lower": "2020-01-01",
                    "upper": "2020-03-01",
                    "unit": "hour",
                    "format": "%Y-%m-%d %H:%M",
                    "missing": True,
                },
            ]
        }
    )
    encoder = TableEncoder(spec)
    rng = np.random.default_rng(5)
    codes = rng.integers(0, spec.domain.sizes, (300, len(spec)))
    chunks = [encoder.decode(codes[:200], rng), encoder.decode(codes[200:], rng)]
    path = tmp_path / "s.csv"
    assert save_table(path, iter(chunks), spec) == 300
    whole = pd.concat(chunks, ignore_index=True)
    assert path.read_bytes() == whole.to_csv(index=False).encode()
    pd.testing.assert_frame_equal(
        pd.read_csv(path), pd.read_csv(io.StringIO(whole.to_csv(index=False)))
    )
