"""`vertimrf evaluate` lists the worst columns (KS distance for numbers, 1-way TVD otherwise)
and column pairs, worst first, next to the averages: a mean of 0.039 once hid
one column at 0.29."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.cli import main
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.metrics import column_distances, column_tvd, ks_distance, tvd

SPEC = DomainSpec(
    [
        ColumnSpec("sex", "categorical", ("F", "M")),
        ColumnSpec("city", "categorical", ("Bergen", "Oslo", "Rome"), missing=True),
        ColumnSpec("age", "numeric", None, 0, 100, 10),
        ColumnSpec("air_time", "numeric", None, 0, 500, 10, missing=True),
    ]
)


def _tables(path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A real table and a synthetic one that is a resample of it, but for ``air_time``:
    its values are shifted by 100 and a fifth of them emptied (the known bad column)."""
    rng = np.random.default_rng(0)
    n = 2000
    real = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "city": rng.choice(np.array(["Bergen", "Oslo", "Rome", None], dtype=object), n),
            "age": rng.uniform(0, 100, n).round(1),
            "air_time": rng.uniform(0, 300, n).round(1),
        }
    )
    synth = real.sample(n, replace=True, random_state=1).reset_index(drop=True)
    synth["air_time"] = np.where(rng.random(n) < 0.2, np.nan, synth["air_time"] + 100)
    SPEC.to_json(path / "spec.json")
    real.to_csv(path / "real.csv", index=False)
    synth.to_csv(path / "synth.csv", index=False)
    return real, synth


def test_evaluate_prints_the_worst_columns_first(tmp_path, capsys):
    real, synth = _tables(tmp_path)
    args = ["evaluate", "--spec", str(tmp_path / "spec.json"), "--real",
            str(tmp_path / "real.csv"), "--synth", str(tmp_path / "synth.csv"),
            "--ways", "1,2", "--worst", "2", "--json", str(tmp_path / "m.json")]  # fmt: skip
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    figures = json.loads((tmp_path / "m.json").read_text())
    # The averages stay.
    assert lines[0] == f"tvd1: {tvd(real, synth, SPEC, ways=1):.4f}"
    assert lines[1].startswith("tvd2: ")
    # Then a table of the 2 worst of 4 columns, worst first: numbers by their KS distance,
    # categories by their 1-way TVD. air_time lost a fifth of its values to "empty" and the
    # rest moved up by 100: real uniform on 0..300, synthetic 0.8 uniform on 100..400, the
    # CDFs part most at 300, by 1 - 0.8 * 2/3 = 0.467 in expectation; a resample of 2,000
    # rows moves any other column's by less than 0.05.
    by_column = column_tvd(real, synth, SPEC)
    ks = ks_distance(real["air_time"], synth["air_time"])
    assert ks == pytest.approx(0.467, abs=0.03)
    assert max(v for k, v in by_column.items() if k != "air_time") < 0.05
    assert lines[2] == ""
    assert lines[3].startswith("Columns, worst first (2 of 4; ")
    assert lines[4].split() == ["column", "type", "metric", "distance"]
    assert lines[5].split() == ["air_time", "numeric", "KS", f"{ks:.4f}"]
    assert len(lines[5]) == len(lines[4])  # one width a column, numbers to the right
    distances = column_distances(real, synth, SPEC)
    second = max((k for k in by_column if k != "air_time"), key=lambda k: distances[k].distance)
    assert lines[6].split()[0] == second
    # Then the 2 worst of 6 pairs: the three with air_time lead.
    assert lines[7:9] == ["", "Column pairs, worst first (2 of 6; 2-way TVD):"]
    assert lines[9].split() == ["column", "1", "column", "2", "tvd2"]
    assert all("air_time" in line for line in lines[10:12]) and len(lines) == 12
    # Every column in the JSON; their 1-way TVDs' mean is the 1-way average.
    assert figures["tvd1_by_column"] == pytest.approx(by_column)
    assert np.mean(list(by_column.values())) == pytest.approx(figures["tvd1"])
    assert figures["columns"]["air_time"] == {"type": "numeric", "metric": "ks", "distance": ks}


def test_evaluate_worst_zero_prints_averages_only(tmp_path, capsys):
    _tables(tmp_path)
    args = ["evaluate", "--spec", str(tmp_path / "spec.json"), "--real",
            str(tmp_path / "real.csv"), "--synth", str(tmp_path / "synth.csv"),
            "--ways", "1", "--worst", "0"]  # fmt: skip
    assert main(args) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("tvd1: ")
