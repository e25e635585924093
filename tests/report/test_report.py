"""``vertimrf report``: every registered figure, at its tiny level, writes a PNG (or a table)
and its data; the command's refusals; the privacy audit's attacks on exact inputs."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest

from vertimrf.cli import main
from vertimrf.datasets import load_dataset
from vertimrf.report import FIGURES, LEVELS
from vertimrf.report.figures.audit import secure_fires, secure_sigma
from vertimrf.report.figures.cost import by_role
from vertimrf.report.figures.scaling import linear_projection
from vertimrf.report.figures.svm import svm_figure, training_rows
from vertimrf.report.figures.theta import split_shares

pytest.importorskip("matplotlib")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_tiny_report_writes_every_figure_with_data(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "--tiny", "--quiet", "--out", str(out)]) == 0
    report = (out / "REPORT.md").read_text()
    assert "delta = 1e-06 everywhere" in report and "NOT differentially private" in report
    for name, fig in FIGURES.items():
        data = json.loads((out / f"{name}.json").read_text())
        assert data["figure"] == name and data["delta"] == 1e-6
        assert f"## {name}\n\n{fig.caption}" in report
        if fig.plotted:
            assert (out / f"{name}.png").read_bytes().startswith(PNG_MAGIC)
            assert f"![{name}]({name}.png)" in report
            assert data["panels"]
            for panel in data["panels"]:
                assert panel["series"]
                for s in panel["series"]:
                    assert len(s["x"]) == len(s["mean"]) == len(s["err"]) > 0
                    assert all(math.isfinite(v) and v >= 0 for v in s["mean"] + s["err"])
        else:
            assert not (out / f"{name}.png").exists()
            assert data["table"]["rows"]
            assert all(len(r) == len(data["table"]["columns"]) for r in data["table"]["rows"])
    tvd = json.loads((out / "tvd.json").read_text())["panels"][0]["series"]
    labels = {s["label"]: s["dashed"] for s in tvd}
    assert labels == {
        "Secure": False,
        "Centralized PrivMRF": False,
        "FO": False,
        "FM (NOT DP)": True,
    }
    # Without --force nothing is overwritten.
    assert main(["report", "--tiny", "--quiet", "--out", str(out), "--figures", "cost"]) == 2
    assert "--force" in capsys.readouterr().err


def test_report_runs_on_a_table_of_ones_own(tmp_path):
    df, spec = load_dataset("nltcs")
    df.iloc[:1500].to_csv(tmp_path / "people.csv", index=False)
    (tmp_path / "people.json").write_text(json.dumps(spec.to_dict()))
    out = tmp_path / "rep"
    argv = ["report", "--tiny", "--quiet", "--out", str(out), "--figures", "cost"]
    argv += ["--data", str(tmp_path / "people.csv"), "--spec", str(tmp_path / "people.json")]
    assert main(argv) == 0
    data = json.loads((out / "cost.json").read_text())
    assert (data["dataset"], data["rows"]) == ("people.csv", 1500)
    assert sorted(p.name for p in out.iterdir()) == ["REPORT.md", "cost.json"]


def test_every_figure_has_parameters_for_every_level():
    assert list(FIGURES) == ["tvd", "audit", "svm", "parties", "theta", "splits", "cost", "scaling"]
    for fig in FIGURES.values():
        assert set(fig.params) == set(LEVELS)
        assert fig.caption.endswith(".") and "\n" not in fig.caption


@pytest.mark.parametrize(
    "args, message",
    [
        (["--figures", "tvd,nope"], "--figures takes a comma-separated subset"),
        (["--data", "x.csv"], "give --data CSV and --spec JSON together"),
        (["--seeds", "0"], "--seeds must be at least 1"),
        (["--update"], "--update needs a report in"),
        (["--baselines", "mst,nope"], "--baselines takes a comma-separated subset"),
        (["--baselines", "mst,mst"], "--baselines takes a comma-separated subset"),
        (["--cap", "0"], "--cap must be a positive number of seconds"),
    ],
)
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    assert main(["report", "--tiny", "--out", str(tmp_path / "r"), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


def test_baselines_and_cap_reach_the_tvd_figure(tmp_path, capsys):
    """--baselines mst --cap 0.5 at the tiny level (which runs none): MST runs at the
    figure's epsilon, is killed after half a second, and the JSON and notes say so."""
    pytest.importorskip("mbi")
    out = tmp_path / "r"
    argv = ["report", "--tiny", "--quiet", "--out", str(out), "--figures", "tvd"]
    assert main([*argv, "--baselines", "mst", "--cap", "0.5"]) == 0
    record = json.loads((out / "tvd.json").read_text())
    assert record["params"]["baselines"] == ["mst"] and record["params"]["cap"] == 0.5
    assert "killed after 0.5 s" in record["notes"][0]
    assert "eps 1.6 seed 0: timed out" in record["notes"][1]


def test_update_makes_some_figures_again_and_keeps_the_others(tmp_path, capsys):
    out = tmp_path / "rep"
    base = ["report", "--tiny", "--quiet", "--out", str(out)]
    assert main([*base, "--figures", "audit,cost"]) == 0
    audit = (out / "audit.json").read_bytes()
    assert main([*base, "--figures", "cost", "--update"]) == 0
    report = (out / "REPORT.md").read_text()
    assert report.index("## audit") < report.index("## cost") and "![audit](audit.png)" in report
    assert (out / "audit.json").read_bytes() == audit
    assert json.loads((out / "cost.json").read_text())["level"] == "tiny"
    # A kept figure from another run (here: other seeds) is refused before any run.
    record = json.loads(audit) | {"seeds": 2}
    (out / "audit.json").write_text(json.dumps(record))
    before = (out / "cost.json").read_bytes()
    capsys.readouterr()
    assert main([*base, "--figures", "cost", "--update"]) == 2
    err = capsys.readouterr().err.strip()
    assert "is from another report" in err and "\n" not in err
    assert (out / "cost.json").read_bytes() == before


def test_missing_matplotlib_says_how_to_install(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises
    assert main(["report", "--tiny", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith('pip install "vertimrf[report]".') and "\n" not in err
    assert not (tmp_path / "r").exists()


def test_a_missing_optional_module_stops_before_any_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)
    assert main(["report", "--tiny", "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        'vertimrf: error: the svm figure needs sklearn: pip install "vertimrf[eval]", or '
        "leave it out with --figures."
    )
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("rows", [7, 600, 2000, 3000, 3001])
@pytest.mark.parametrize("folds", [2, 3, 5])
def test_training_rows_is_the_largest_training_set(rows, folds):
    sizes = [len(f) for f in np.array_split(np.arange(rows), folds)]
    assert training_rows(rows, folds) == max(rows - s for s in sizes)


def test_svm_figure_gives_the_secure_method_the_training_sets_bound(monkeypatch):
    # The secure method's budget split reads max_rows as the table's size; the default
    # (65,536) on small folds gave its first release a share planned for a larger table.
    from vertimrf.report.context import ReportContext, Run

    df, spec = load_dataset("nltcs")
    ctx = ReportContext("nltcs", df.iloc[:600], spec, seeds=1, progress=False)
    seen: list[tuple[str, int, dict]] = []

    def run(method, epsilon, seed, *, df=None, **overrides):
        seen.append((method, len(df), overrides))
        return Run(df.sample(n=len(df), replace=True, random_state=seed), 0.0, {}, {})

    monkeypatch.setattr(ctx, "run", run)
    params = {"epsilons": [1.6], "rows": 600, "folds": 3, "methods": ["secure", "central"]}
    data = svm_figure.compute(ctx, params)
    assert {(m, n) for m, n, _ in seen} == {("secure", 400), ("central", 400)}
    assert all(o == ({"max_rows": 400} if m == "secure" else {}) for m, _, o in seen)
    assert "max_rows is 400" in data.notes[0]


def test_theta_split_keeps_the_other_shares():
    shares = split_shares(0.25)
    expected = {"locmrf": 0.19, "locenc": 0.57, "count": 0.04, "binning": 0.2}
    assert shares == pytest.approx(expected, abs=1e-12)


def test_secure_attack_sees_the_record_through_small_noise():
    # At sigma 1 the 28 cells' noise sum has sd sqrt(28) ~ 5.3, far below the margin of 14
    # either side of the threshold (P(|N| >= 14) < 1e-2 per run; fixed seeds, checked exact).
    assert all(secure_fires(run, True, sigma=1.0) for run in range(20))
    assert not any(secure_fires(run, False, sigma=1.0) for run in range(20))


def test_secure_attack_noise_is_the_plan_s():
    # sigma(select, K) = sqrt(K / (2 rho_select)) * safety: it falls as epsilon grows.
    low, high = secure_sigma(0.5, 1e-6), secure_sigma(2.0, 1e-6)
    assert low > high > 1
    assert np.isfinite(low)


def test_cost_table_gives_each_phase_to_its_role():
    phases = {"deal": 0.5, "commit": 0.25, "fit": 1.0, "local": 2.0, "party1 LocEnc": 0.125}
    assert by_role(phases, ["party0", "party1"]) == {
        "server": "deal 0.50, fit 1.00",
        "parties": "commit 0.25, local 2.00",
        "party1": "LocEnc 0.12",
    }


def test_scaling_line_is_least_squares_and_never_falls():
    assert linear_projection([1, 2], [3.0, 5.0], [10]) == pytest.approx([21.0])
    # A falling line (fixed costs at tiny sizes) projects the largest measured value.
    assert linear_projection([1, 2], [5.0, 3.0], [10]) == [5.0]


def test_the_not_yet_section_goes_once_the_tvd_figure_runs_aim():
    """REPORT.md says AIM is not in the report until the TVD figure ran it as a baseline."""
    from vertimrf.report.build import NOT_YET, not_yet

    def tvd(baselines: list[str]) -> dict:
        return {"tvd": {"params": {"baselines": baselines}}}

    assert not_yet({}) == [NOT_YET]
    assert not_yet(tvd(["mst"])) == [NOT_YET]
    assert not_yet(tvd(["mst", "aim"])) == []
