"""A party's CSV file: only an empty cell is missing (pandas' default missing strings such as
"n/a" and "NA" are text), and a bad numeric cell is named by its row in the file, whatever
the batch size and whether pandas or the batches read the column."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.errors import DomainError
from vertimrf.party.records.table_input import read_frame, read_party_table

SPEC = DomainSpec(
    [
        ColumnSpec("carrier", "categorical", ("AA", "NA", "UA"), missing=True),
        ColumnSpec("air_time", "numeric", lower=0, upper=800, bins=8, missing=True),
    ]
)


def _csv(path: Path, air_time: list[str], carrier: list[str] | None = None) -> Path:
    rows = len(air_time)
    carrier = carrier or ["UA"] * rows
    lines = ["rid,carrier,air_time", *(f"r{i},{c},{a}" for i, (c, a) in
             enumerate(zip(carrier, air_time, strict=True)))]  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("batch_rows", [1, 7, 1000])
@pytest.mark.parametrize("text", ["n/a", "NA", "NaN", "null", "12k"])
def test_a_numeric_cell_of_text_is_named_not_read_as_missing(tmp_path, batch_rows, text):
    air = [f"{v:.1f}" for v in np.linspace(20, 600, 300)]
    air[122], air[200] = text, ""  # the empty cell is missing, as the spec allows
    path = _csv(tmp_path / "flights.csv", air)
    with pytest.raises(DomainError) as caught:
        read_party_table(path, SPEC, "rid", party="A", batch_rows=batch_rows)
    message = str(caught.value)
    assert message.startswith(
        f"column 'air_time', row 123 (counting from 1 after the header): the value {text!r} is "
        "not a number"
    )
    assert (
        "; 1 bad row in all; fix the cell, empty it, or declare the column categorical" in message
    )
    assert "\n" not in message


@pytest.mark.parametrize("batch_rows", [1, 1000])
def test_only_an_empty_cell_is_missing(tmp_path, batch_rows):
    path = _csv(tmp_path / "t.csv", ["227.0", "", '""', "160"], ["NA", "AA", "", "n/a"])
    frame = read_frame(path)
    assert frame["carrier"].tolist()[:2] == ["NA", "AA"] and frame["carrier"].tolist()[3] == "n/a"
    assert pd.isna(frame["carrier"][2]) and frame["air_time"].isna().tolist() == [0, 1, 1, 0]
    with pytest.raises(DomainError, match=r"row 4 .*the value 'n/a' is not one of its categories"):
        read_party_table(path, SPEC, "rid", party="A", batch_rows=batch_rows)
    path = _csv(tmp_path / "t.csv", ["227.0", "", '""', "160"], ["NA", "AA", "", "UA"])
    table, _ = read_party_table(path, SPEC, "rid", party="A", batch_rows=batch_rows)
    # "NA" is the category "NA"; an empty cell is the missing code, after the values.
    assert table.codes.tolist() == [[1, 2], [0, 8], [3, 8], [2, 1]]
