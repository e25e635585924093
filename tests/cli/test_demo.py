"""``vertimrf demo`` on Adult with its real column names and categories: it writes the secure
method's synthetic table to the CSV file it names (never over an existing one unless
--force) and prints three of its rows next to three real ones. Here the demo's secure run is
real, on the first 2,000 rows of the bundled ``adult_labeled``; its FO and Centralized
baselines, most of its time and not what these tests check, are stood in for by copies of
the secure run (the whole demo is tests/test_readme.py's slow run of the quick start)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import vertimrf
from vertimrf.cli import demo as cli_demo
from vertimrf.cli import main
from vertimrf.datasets import load_dataset
from vertimrf.encoding import TableEncoder
from vertimrf.metrics import tvd

ROWS = 2000
ADULT = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
         "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
         "hours_per_week", "native_country", "income"]  # fmt: skip


class _Report:
    """What the demo reads of a protocol report."""

    seconds = {"fit": 0.0}
    message_bytes = {"A": 0}
    n_hat = 10

    def __str__(self) -> str:
        return "a report"

    def to_dict(self) -> dict:
        return {"n_hat": self.n_hat}


def _stand_in(monkeypatch, secure) -> list[str]:
    """The demo on the first ROWS rows of its dataset (the same spec), its secure run
    ``secure`` and its baselines copies of it; the methods the demo ran."""
    df, spec = load_dataset("adult_labeled")
    monkeypatch.setattr(vertimrf, "load_dataset", lambda name: (df.iloc[:ROWS], spec))
    runs: dict = {}
    ran: list[str] = []

    def simulate(*args, method, **kwargs):
        ran.append(method)
        if method == "secure":
            runs["secure"] = secure(*args, method=method, **kwargs)
        return runs["secure"]

    class Central:
        def __init__(self, *args, **kwargs) -> None:
            ran.append(f"central {kwargs.get('selection')}")

        def fit(self, *args):
            return self

        def sample(self):
            return runs["secure"][0]

    monkeypatch.setattr(vertimrf, "simulate", simulate)
    monkeypatch.setattr(vertimrf, "PrivMRF", Central)
    return ran


@pytest.fixture
def small_adult(monkeypatch):
    """The demo with its secure run real (``_stand_in``): the data, its spec, the runs."""
    ran = _stand_in(monkeypatch, vertimrf.simulate)
    return *vertimrf.load_dataset("adult_labeled"), ran


@pytest.fixture
def no_runs(monkeypatch):
    """The demo with every run stood in for: the secure one gives 10 real rows."""
    rows = load_dataset("adult_labeled")[0].iloc[:10]
    return _stand_in(monkeypatch, lambda *args, **kwargs: (rows, _Report()))


def _demo(root: Path, *args: str) -> int:
    before = os.getcwd()
    os.chdir(root)
    try:
        return main(["demo", "--quiet", "--seed", "0", "--epsilon", "4", *args])
    finally:
        os.chdir(before)


def test_the_demo_writes_adult_with_named_columns_and_shows_rows(small_adult, tmp_path, capsys):
    real, spec, ran = small_adult
    assert _demo(tmp_path, "--json", "figures.json") == 0
    assert ran == ["secure", "fo", "central privmrf"]
    out = capsys.readouterr().out
    path = tmp_path / cli_demo.DEFAULT_OUT
    assert cli_demo.DEFAULT_OUT == "adult_synthetic.csv" and path.exists()
    synth = pd.read_csv(path)
    assert list(synth.columns) == ADULT == list(spec.names)
    TableEncoder(spec).table(synth)  # every value one of the spec's categories
    for column in ("workclass", "education", "marital_status", "occupation", "income"):
        assert set(synth[column]) <= set(spec[column].categories), column
    assert set(synth["income"]) <= {"<=50K", ">50K"} and "Private" in set(synth["workclass"])
    figures = json.loads((tmp_path / "figures.json").read_text())
    assert figures["dataset"] == "adult_labeled" and figures["out"] == cli_demo.DEFAULT_OUT
    assert len(synth) == figures["reports"]["VertiMRF-Secure (DP)"]["n_hat"]
    # It names the file, then shows 3 real rows next to the synthetic file's first 3.
    assert f"to {cli_demo.DEFAULT_OUT};" in out and "columns age to relationship" in out
    shown = out.split("real ones:\n", 1)[1].strip().splitlines()
    assert shown[0].split() == ["real", "1", "real", "2", "real", "3",
                                "synthetic", "1", "synthetic", "2", "synthetic", "3"]  # fmt: skip
    assert [line.split()[0] for line in shown[1:]] == ADULT
    income = shown[-1].split()[1:]
    assert income[3:] == [str(v) for v in synth["income"].iloc[:3]]
    assert set(income[:3]) <= {"<=50K", ">50K"}


def test_the_demo_keeps_an_existing_file_unless_forced(no_runs, tmp_path, capsys):
    path = tmp_path / "mine.csv"
    path.write_text("precious\n")
    assert _demo(tmp_path, "--out", "mine.csv") == 2  # refused before any work
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "mine.csv" in err[0] and "--force" in err[0], err
    assert path.read_text() == "precious\n"
    assert no_runs == []
    assert _demo(tmp_path, "--out", "mine.csv", "--force") == 0
    assert no_runs == ["secure", "fo", "central privmrf"]
    assert list(pd.read_csv(path).columns) == ADULT and len(pd.read_csv(path)) == 10
    assert "to mine.csv;" in capsys.readouterr().out


def test_the_tvd_of_the_labeled_table_is_that_of_its_codes():
    """adult_labeled is the integer-coded Adult with each column's codes relabelled (rows
    aligned), and the TVD compares codes: the same rows score the same in both."""
    coded, coded_spec = load_dataset("adult")
    labeled, spec = load_dataset("adult_labeled")
    rows = np.random.default_rng(0).choice(len(coded), 3000, replace=False)
    for ways in (1, 3):
        want = tvd(coded, coded.iloc[rows], coded_spec, ways=ways)
        assert 0 < want < 0.2
        assert tvd(labeled, labeled.iloc[rows], spec, ways=ways) == pytest.approx(want, abs=1e-12)
