"""`vertimrf evaluate` lists the columns of highest 1-way TVD, worst first, next to the
averages (issue 59, finding 6: a mean of 0.039 hid one column at 0.29)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.cli import main
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.metrics import column_tvd, tvd

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
    # Then a table of the 2 worst of 4 columns, worst first. air_time (bins of 50) lost a
    # fifth of its mass to "empty" and the rest moved by two bins: its 1-way TVD is
    # (0.2 + 2/6 + 4 * 0.2/6 + 2 * 0.8/6) / 2 = 0.467 in expectation; a resample of 2,000
    # rows moves any other column's by less than 0.05.
    by_column = column_tvd(real, synth, SPEC)
    assert by_column["air_time"] > 0.4
    assert max(v for k, v in by_column.items() if k != "air_time") < 0.05
    assert lines[2] == "1-way TVD by column, worst first (2 of 4):"
    assert lines[3].split() == ["column", "tvd1"]
    assert lines[4].split() == ["air_time", f"{by_column['air_time']:.4f}"]
    second = max((k for k in by_column if k != "air_time"), key=by_column.__getitem__)
    assert lines[5].split()[0] == second
    assert len(lines) == 6
    # Every column in the JSON; their mean is the 1-way average.
    assert figures["tvd1_by_column"] == pytest.approx(by_column)
    assert np.mean(list(by_column.values())) == pytest.approx(figures["tvd1"])


def test_evaluate_worst_zero_prints_averages_only(tmp_path, capsys):
    _tables(tmp_path)
    args = ["evaluate", "--spec", str(tmp_path / "spec.json"), "--real",
            str(tmp_path / "real.csv"), "--synth", str(tmp_path / "synth.csv"),
            "--ways", "1", "--worst", "0"]  # fmt: skip
    assert main(args) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("tvd1: ")
