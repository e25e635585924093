"""A value off a numeric column's spec is named cell by cell, and a spec may leave columns
out: one-line errors that name the first bad cell's row, column and value, count the bad
rows and give every fix; ``"type": "ignore"`` read, skipped by the encoder and kept out of
the domain, the config's spec and the proposal's columns; ``infer_spec``'s warnings."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec, SpecWarning
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.propose import infer_spec

AIR = ColumnSpec("air_time", "numeric", lower=0, upper=800, bins=8)


def _error(spec: DomainSpec, frame: pd.DataFrame) -> str:
    with pytest.raises(DomainError) as caught:
        TableEncoder(spec).encode(frame)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_one_bad_text_cell_in_a_column_read_as_text_is_the_one_named():
    # One cell "12k" makes pandas read the whole CSV column as text: the numbers stay good.
    values = pd.Series([f"{v:.1f}" for v in np.linspace(20, 600, 300)], dtype=object)
    values[122] = "12k"
    message = _error(DomainSpec([AIR]), pd.DataFrame({"air_time": values}))
    assert message == (
        "column 'air_time', row 123 (counting from 1 after the header): the value '12k' is not "
        'a number; 1 bad row in all; fix the cell, empty it and declare "missing": true in the '
        "domain spec, or declare the column categorical in the domain spec."
    )


def test_bad_cells_are_counted_and_a_missing_string_is_told_apart():
    spec = DomainSpec([ColumnSpec("air_time", "numeric", lower=0, upper=800, bins=8, missing=True)])
    values = pd.Series(["227.0", None, "n/a", "160", "NA", "x"], dtype=object)
    message = _error(spec, pd.DataFrame({"air_time": values}))
    assert message.startswith(
        "column 'air_time', row 3 (counting from 1 after the header): the value 'n/a' is not a "
        "number (only an empty cell is missing); 3 bad rows in all (other values: 'NA', 'x'); "
    )
    assert message.endswith(
        "fix the cell, empty it, or declare the column categorical in the domain spec."
    )


@pytest.mark.parametrize(
    "column",
    [
        ColumnSpec("c", "numeric", lower=0, upper=800, bins=8),
        ColumnSpec("c", "categorical", ("a", "b")),
    ],
)
def test_an_empty_cell_names_the_missing_fix(column):
    values = ["a", "b", "a", None] if column.kind == "categorical" else [1.0, 2.0, 3.0, np.nan]
    message = _error(DomainSpec([column]), pd.DataFrame({"c": pd.Series(values, dtype=object)}))
    assert "row 4 (counting from 1 after the header)" in message and "1 bad row in all" in message
    assert 'declare "missing": true for the column in the domain spec' in message


def test_numbers_written_as_text_are_still_refused_by_name():
    frame = pd.DataFrame({"air_time": pd.Series(["1", "2"], dtype=object)})
    message = _error(DomainSpec([AIR]), frame)
    assert "row 1 " in message and "'1' is not a number (it is text" in message
    assert "2 bad rows in all" in message


SPEC_FILE = {
    "columns": [
        {"name": "tailnum", "type": "ignore"},
        {"name": "carrier", "type": "categorical", "categories": ["AA", "UA"]},
        {"name": "air_time", "type": "numeric", "lower": 0, "upper": 800, "bins": 8},
    ]
}


def test_an_ignored_column_is_read_skipped_and_never_in_the_domain(tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC_FILE))
    spec = DomainSpec.from_json(path)
    assert spec.names == ("carrier", "air_time") and spec.ignored == ("tailnum",)
    assert spec.domain.names == ("carrier", "air_time")
    assert "tailnum" not in json.dumps(spec.to_dict())  # what a config carries
    with pytest.raises(DomainError, match="'tailnum' is ignored in the spec"):
        spec["tailnum"]
    frame = pd.DataFrame({"tailnum": ["N1", "N2"], "carrier": ["UA", "AA"], "air_time": [1.0, 700]})
    np.testing.assert_array_equal(TableEncoder(spec).encode(frame), [[1, 0], [0, 7]])
    spec.to_json(tmp_path / "again.json")  # the spec file keeps its ignored columns
    again = DomainSpec.from_json(tmp_path / "again.json")
    assert again == spec and again.ignored == ("tailnum",)


def test_a_config_built_from_a_spec_with_an_ignored_column_does_not_hold_it(tmp_path):
    from vertimrf.protocol.factory import from_preset, load_config

    spec = DomainSpec.from_dict(SPEC_FILE)
    cfg = from_preset("default", epsilon=1, delta=1e-6, spec=spec,
                      parties=[("A", ["carrier"]), ("B", ["air_time"])], max_rows=1024)  # fmt: skip
    cfg.save(tmp_path / "config.json")
    assert "tailnum" not in (tmp_path / "config.json").read_text()
    assert load_config(tmp_path / "config.json").spec.names == ("carrier", "air_time")


def test_an_ignore_entry_needs_a_name_and_only_the_four_types_are_read():
    with pytest.raises(DomainError, match=r"needs the keys \['name'\]"):
        DomainSpec.from_dict({"columns": [{"type": "ignore"}]})
    with pytest.raises(DomainError, match="'categorical', 'numeric', 'datetime' or 'ignore'"):
        DomainSpec.from_dict({"columns": [{"name": "a", "type": "date"}]})
    with pytest.raises(DomainError, match="every column is ignored"):
        DomainSpec.from_dict({"columns": [{"name": "a", "type": "ignore"}]})


def _flights(rows: int = 200) -> pd.DataFrame:
    """A table shaped like nycflights13's flights: every kind of column infer_spec warns of."""
    rng = np.random.default_rng(3)
    return pd.DataFrame({
        "rownames": np.arange(1, rows + 1),
        "year": 2013,
        "carrier": rng.choice(["AA", "UA", "DL"], rows),
        "tailnum": [f"N{v}" for v in rng.integers(100, 999, rows)],
        "air_time": rng.uniform(20, 600, rows).round(1),
        "time_hour": [f"2013-01-{1 + i // 24:02d} {i % 24:02d}:00:00" for i in range(rows)],
    })  # fmt: skip


def test_infer_spec_warns_of_each_column_a_user_would_not_want():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = infer_spec(_flights(), max_categories=50)
    said = {
        str(w.message).split("'")[1]: str(w.message) for w in caught if w.category is SpecWarning
    }
    assert set(said) == {"rownames", "year", "tailnum"}  # time_hour: datetime
    assert "like a record ID" in said["rownames"] and "--id-column" in said["rownames"]
    assert "holds one value (2013) in every row" in said["year"]
    assert "distinct text values, more than max categories (50)" in said["tailnum"]
    assert all('proposed as "type": "ignore"' in said[c] for c in ("rownames", "tailnum"))
    assert spec.names == ("year", "carrier", "air_time", "time_hour")
    assert spec["time_hour"].kind == "datetime" and spec["time_hour"].time.unit == "hour"
    assert spec.ignored == ("rownames", "tailnum")


def test_infer_spec_names_the_text_cell_in_a_column_of_numbers():
    frame = pd.DataFrame({"air_time": [f"{v}.5" for v in range(100)], "carrier": "AA"})
    frame.loc[41, "air_time"] = "12k"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        infer_spec(frame)
    texts = [str(w.message) for w in said if issubclass(w.category, SpecWarning)]
    first = r"holds numbers, but 1 cell holds none \(the first: row 42"
    assert any(re.search(first, t) for t in texts), texts
