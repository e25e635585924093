"""The Python examples that docs/ marks as checked here run as written, and give what they
promise (docs that run): the sketch engine (docs/accuracy.md), PrivMRF and the vertical
protocol in one process (docs/synthesizers.md), and both synthesizers side by side
(docs/api.md). tests/test_docs.py runs every other example.

The examples are unseeded, as a user would run them, so each bound below is one that a correct
run breaks with probability below 1e-8 (six standard deviations, or twenty Laplace scales), and
says where it comes from.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf import FitReport, PrivMRF, VerticalModel
from vertimrf.encoding import TableEncoder

DOCS = Path(__file__).resolve().parent.parent / "docs"
MARK = "<!-- checked: tests/test_doc_examples.py -->\n"


def checked_blocks(page: Path) -> list[str]:
    """The Python blocks of a docs page that follow this file's marker."""
    text = page.read_text(encoding="utf-8")
    return re.findall(re.escape(MARK) + r"```python\n(.*?)```", text, re.S)


BLOCKS = [(p.name, b) for p in sorted(DOCS.glob("*.md")) for b in checked_blocks(p)]


def _kind(block: str) -> str:
    for kind in ("locenc", "fit_vertical(", "PrivMRF(", "simulate("):
        if kind in block:
            return kind
    raise AssertionError(f"a checked example without a check here:\n{block}")


def test_the_docs_have_the_checked_examples():
    assert sorted((page, _kind(b)) for page, b in BLOCKS) == [
        ("accuracy.md", "locenc"),
        ("api.md", "fit_vertical("),
        ("synthesizers.md", "PrivMRF("),
        ("synthesizers.md", "simulate("),
    ]


def _check_sketches(ns: dict, printed: str) -> None:
    df, ledger = ns["df"], ns["ledger"]
    estimate = np.asarray(ns["estimate"])
    exact = np.zeros((2, 2))
    np.add.at(exact, (df["0"].to_numpy(int), df["8"].to_numpy(int)), 1)
    assert estimate.shape == (2, 2) and np.isfinite(estimate).all()
    # A CarEst cell's standard deviation is about 1.04 (n - T(v) + k_p sum(u_i - 1)) / sqrt(t)
    # (docs/accuracy.md): its union estimate has relative deviation 1.04 / sqrt(t).
    n, t = len(df), ns["t"]
    k_p = math.ceil(1 / ns["eps_prime"])
    sd = 1.04 * (n - exact + k_p * 2) / math.sqrt(t)
    assert (np.abs(estimate - exact) <= 6 * sd).all(), (estimate, exact, sd)
    assert "NOT differentially private" in printed and "NOT differentially private" in str(
        ledger.report()
    )


def _check_privmrf(ns: dict, printed: str) -> None:
    df, spec, fake, synth = ns["df"], ns["spec"], ns["fake"], ns["synth"]
    assert list(fake.columns) == list(spec.names)
    TableEncoder(spec).table(fake)  # every value inside the public domain
    # The default selection is the engine. n_hat = n + discrete Gaussian noise of sigma 176.5
    # at epsilon 0.8, delta 1e-6 (the report's engine.count line).
    assert synth.selection == "engine" and "engine.count" in str(synth.report)
    assert len(fake) == round(synth.n_hat) and abs(len(fake) - len(df)) <= 6 * 176.5
    report = synth.report
    assert not report.seeded and report.epsilon <= 0.8 and report.delta == 1e-6
    # The last line is the 3-way TVD: about 0.006 at epsilon 0.8 on NLTCS (0.0060 seeded at
    # 0); 0.02 leaves room for an unseeded run.
    tvd = float(printed.strip().splitlines()[-1])
    assert 0 < tvd < 0.02, tvd


def _check_simulate(ns: dict, printed: str) -> None:
    df, spec, synth, report = ns["df"], ns["spec"], ns["synth"], ns["report"]
    assert list(synth.columns) == list(spec.names)
    TableEncoder(spec).table(synth)
    assert report.method == "secure" and report.dp_guarantee and not report.seeded
    assert report.total_epsilon <= 1.6 * (1 + 1e-9) and report.delta == 1e-6
    # The count is discrete Laplace with epsilon 0.01081 (scale < 93): twenty scales.
    assert len(synth) == report.n_hat and abs(report.n_hat - len(df)) <= 20 * 93
    assert "differentially private" in printed and "colludes with no party" in printed


def _check_api(ns: dict, printed: str) -> None:
    central, vertical, folder = ns["central"], ns["vertical"], ns["folder"]
    for name, model, cls in [
        ("centralized", central, PrivMRF),
        ("vertical", vertical, VerticalModel),
    ]:
        report = model.report
        assert isinstance(report, FitReport) and report.dp_guarantee and not report.seeded
        assert report.total_epsilon is not None and report.total_epsilon <= 1.0 * (1 + 1e-9)
        again = cls.load(folder / f"{name}.vmrf")
        assert again.report.to_dict() == report.to_dict()
        rows = model.sample(50, seed=0)
        assert rows.dtypes.to_dict() == {
            **ns["df"].dtypes.to_dict(),
            "workclass": pd.CategoricalDtype(ns["spec"]["workclass"].values),
        }
        line = next(x for x in printed.splitlines() if x.startswith(f"{name}: "))
        assert line.startswith(f"{name}: 1000 rows, workclass category, age Int64; DP True, ")
    # B lacks 500 of the 3000 records: A's region count is 500 plus two noises of the
    # report's region_sigma each (6 standard deviations).
    report = vertical.report
    assert list(report.regions) == ["A", "B", "A+B"] and report.region_sigma is not None
    assert abs(report.regions["A"] - 500) <= 6 * math.sqrt(2) * report.region_sigma


CHECKS = {
    "locenc": _check_sketches,
    "fit_vertical(": _check_api,
    "PrivMRF(": _check_privmrf,
    "simulate(": _check_simulate,
}


@pytest.mark.parametrize(
    "index",
    [
        pytest.param(i, marks=pytest.mark.slow) if _kind(b) in ("simulate(", "fit_vertical(") else i
        for i, (_, b) in enumerate(BLOCKS)
    ],
)
def test_docs_example_runs(index, capsys):
    page, block = BLOCKS[index]
    ns: dict = {}
    exec(compile(block, f"docs/{page} example", "exec"), ns)
    CHECKS[_kind(block)](ns, capsys.readouterr().out)
