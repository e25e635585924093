"""Empty cells on the command line: `vertimrf spec` proposes "missing": true for
a column with empty cells and says so; `vertimrf evaluate` counts an empty cell as a value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.cli import main
from vertimrf.domain import DomainSpec
from vertimrf.metrics import tvd


def _people(path: Path, n: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "sex": rng.choice(["F", "M"], n),
            "city": rng.choice(np.array(["Oslo", "Bergen", None], dtype=object), n),
            "income": np.where(rng.random(n) < 0.25, np.nan, rng.uniform(0, 1000, n).round(1)),
        }
    )
    frame.to_csv(path, index=False)
    return frame


def test_spec_proposes_missing_for_columns_with_empty_cells(tmp_path, capsys):
    frame = _people(tmp_path / "people.csv")
    out = tmp_path / "people.json"
    assert main(["spec", "--data", str(tmp_path / "people.csv"), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    columns = json.loads(out.read_text())["columns"]
    assert [c.get("missing", False) for c in columns] == [False, True, True]
    assert columns[1]["categories"] == ["Bergen", "Oslo"]
    empty = int(frame.city.isna().sum())
    seen = "categorical, the 2 categories seen in the data"
    assert f'  city: {seen}; {empty} empty cells, so "missing": true' in printed
    assert "  sex: categorical, the 2 categories seen in the data\n" in printed


def test_evaluate_counts_an_empty_cell_as_a_value(tmp_path, capsys):
    real = _people(tmp_path / "real.csv", seed=1)
    _people(tmp_path / "synth.csv", seed=2)
    spec = DomainSpec.from_dict(
        {
            "columns": [
                {"name": "sex", "type": "categorical", "categories": ["F", "M"]},
                {"name": "city", "type": "categorical", "categories": ["Bergen", "Oslo"],
                 "missing": True},
                {"name": "income", "type": "numeric", "lower": 0, "upper": 1000, "bins": 4,
                 "missing": True},
            ]
        }
    )  # fmt: skip
    spec.to_json(tmp_path / "spec.json")
    argv = ["evaluate", "--spec", str(tmp_path / "spec.json"), "--real", str(tmp_path / "real.csv"),
            "--synth", str(tmp_path / "synth.csv"), "--ways", "1,2", "--json",
            str(tmp_path / "m.json")]  # fmt: skip
    assert main(argv) == 0
    figures = json.loads((tmp_path / "m.json").read_text())
    synth = pd.read_csv(tmp_path / "synth.csv")
    for ways in (1, 2):
        assert figures[f"tvd{ways}"] == tvd(real, synth, spec, ways=ways)
    assert "tvd1: " in capsys.readouterr().out
    # Emptying every synthetic city moves its whole city marginal to "empty": that 1-way
    # TVD becomes the real share of rows with a city; the other columns' stay.
    shares = [t.city.value_counts(normalize=True, dropna=False) for t in (real, synth)]
    city_before = 0.5 * shares[0].sub(shares[1], fill_value=0).abs().sum()
    synth.assign(city=None).to_csv(tmp_path / "synth.csv", index=False)
    assert main([*argv, "--force"]) == 0
    emptied = json.loads((tmp_path / "m.json").read_text())["tvd1"]
    city_after = 1 - real.city.isna().mean()
    assert 3 * (emptied - figures["tvd1"]) == pytest.approx(city_after - city_before, abs=1e-12)
