"""`vertimrf evaluate` that a person can read: each column's distance and
the worst pairs as aligned tables, `--report DIR` (a PNG per column, a heatmap of the pair
trends, report.md), and sdmetrics' QualityReport from the same spec with `--sdmetrics`."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import ROOT
from vertimrf.cli import main
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.evaluation import SDMETRICS_FILES, figure_names, sdmetrics_metadata
from vertimrf.timecols import TimeAxis

SPEC = DomainSpec(
    [
        ColumnSpec("color", "categorical", ("red", "blue")),
        ColumnSpec("size", "numeric", None, 0, 10, 2),
    ]
)
REAL = pd.DataFrame({"color": ["red", "red", "blue", "blue"], "size": [1.0, 2, 3, 4]})
SYNTH = pd.DataFrame({"color": ["red", "blue", "blue", "blue"], "size": [3.0, 4, 5, 6]})
PNG = b"\x89PNG\r\n\x1a\n"


def _files(
    path: Path, real: pd.DataFrame = REAL, synth: pd.DataFrame = SYNTH, spec: DomainSpec = SPEC
) -> list[str]:
    """The command's arguments, over a spec and two tables written into ``path``."""
    spec.to_json(path / "spec.json")
    real.to_csv(path / "real.csv", index=False)
    synth.to_csv(path / "synth.csv", index=False)
    return ["evaluate", "--spec", str(path / "spec.json"), "--real", str(path / "real.csv"),
            "--synth", str(path / "synth.csv"), "--ways", "1"]  # fmt: skip


def _one_line_error(capsys: pytest.CaptureFixture[str], code: int, pattern: str) -> str:
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("vertimrf: error: "), err
    assert pattern in err, err
    return err


def _is_png(data: bytes) -> tuple[int, int]:
    """The width and height of a PNG file (its signature and IHDR chunk checked)."""
    assert data[:8] == PNG and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert width > 0 and height > 0 and data.endswith(b"IEND\xaeB`\x82")
    return width, height


def test_evaluate_prints_each_column_and_the_worst_pairs_as_tables(tmp_path, capsys):
    assert main([*_files(tmp_path), "--json", str(tmp_path / "m.json")]) == 0
    # color: red 1/2 against 1/4, TVD 1/4. size as numbers: real 1..4, synthetic 3..6, the
    # CDFs 1/2 apart at 2, 3 and 4: KS 1/2 (in bins of 5 its 1-way TVD is 1/2 too, so tvd1
    # is 3/8). The pair in (color, size bin): real (red, 0) 1/2, (blue, 0) 1/2; synthetic
    # (red, 0) 1/4, (blue, 0) 1/4, (blue, 1) 1/2: 2-way TVD 1/2.
    assert capsys.readouterr().out == (
        "tvd1: 0.3750\n"
        "\n"
        "Columns, worst first (2 of 2; KS distance of the values for numbers and times, 1-way "
        "TVD otherwise):\n"
        "  column  type         metric  distance\n"
        "  size    numeric      KS        0.5000\n"
        "  color   categorical  TVD       0.2500\n"
        "\n"
        "Column pairs, worst first (1 of 1; 2-way TVD):\n"
        "  column 1  column 2    tvd2\n"
        "  color     size      0.5000\n"
    )
    figures = json.loads((tmp_path / "m.json").read_text())
    assert figures["tvd1_by_column"] == {"color": 0.25, "size": 0.5}
    assert figures["columns"] == {
        "color": {"type": "categorical", "metric": "tvd", "distance": 0.25},
        "size": {"type": "numeric", "metric": "ks", "distance": 0.5},
    }
    [pair] = figures["pairs"]
    assert pair["columns"] == ["color", "size"] and pair["tvd2"] == pytest.approx(0.5)
    # Cramér's V: every real size in one bin (0); synthetic counts [[1, 0], [1, 2]].
    assert pair["trend"] == "cramers_v" and pair["real"] == 0.0
    assert pair["synthetic"] == pytest.approx(np.sqrt(1 / 3))


def test_report_writes_a_png_per_column_a_heatmap_and_a_page_naming_every_column(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(0)
    n = 60
    real = pd.DataFrame(
        {
            "color": rng.choice(["red", "blue"], n),
            "size": rng.uniform(0, 10, n).round(2),
            "air time (min)": rng.integers(0, 500, n),
            "a|b/c": rng.choice(["x", "y", "z"], n),
        }
    )
    synth = real.sample(n, replace=True, random_state=1).reset_index(drop=True)
    spec = DomainSpec(
        [
            *SPEC.columns,
            ColumnSpec("air time (min)", "numeric", None, 0, 500, 10),  # no file name holds
            ColumnSpec("a|b/c", "categorical", ("x", "y", "z")),  # these names as they are
        ]
    )
    out = tmp_path / "report"
    assert main([*_files(tmp_path, real, synth, spec), "--report", str(out), "--worst", "2"]) == 0
    printed = capsys.readouterr().out
    assert printed.endswith(f"\nwrote the report to {out / 'report.md'} and 5 files beside it\n")
    names = figure_names(spec)
    assert list(names.values()) == [
        "column-1-color.png", "column-2-size.png", "column-3-air-time-min.png",
        "column-4-a-b-c.png",
    ]  # fmt: skip
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted([*names.values(), "pair-trends.png", "report.md"])
    sizes = {name: _is_png((out / name).read_bytes()) for name in [*names.values()]}
    heat = _is_png((out / "pair-trends.png").read_bytes())
    assert all(w > 300 and h > 200 for w, h in [*sizes.values(), heat])
    page = (out / "report.md").read_text()
    for column, png in names.items():
        assert f"### {column}\n" in page and f"]({png})" in page
    assert "a\\|b/c | categorical | TVD" in page  # a pipe in a table cell is escaped
    assert "](pair-trends.png)" in page and "## Column pairs, worst first (2 of 6)" in page
    assert "sdmetrics" not in page


def test_report_refuses_a_folder_that_is_not_empty_unless_forced(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    args = _files(tmp_path)
    out = tmp_path / "report"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _one_line_error(capsys, main([*args, "--report", str(out)]), "folder that is not empty")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    _one_line_error(capsys, main([*args, "--report", str(tmp_path / "file")]), "names a file")
    assert main([*args, "--report", str(out), "--force"]) == 0
    assert (out / "notes.txt").read_text() == "mine"  # not the report's: left alone
    assert (out / "report.md").is_file()
    before = (out / "report.md").read_bytes()
    _one_line_error(capsys, main([*args, "--report", str(out)]), "--force")
    assert (out / "report.md").read_bytes() == before


def test_a_failed_report_leaves_no_file(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    import vertimrf.evaluation as evaluation
    from vertimrf.errors import ConfigError

    def fail(*args: object) -> bytes:
        raise ConfigError("the heatmap failed")

    monkeypatch.setattr(evaluation, "heatmap_png", fail)
    out = tmp_path / "new" / "report"
    args = [*_files(tmp_path), "--report", str(out), "--json", str(tmp_path / "m.json")]
    _one_line_error(capsys, main(args), "the heatmap failed")
    assert not (tmp_path / "new").exists() and not (tmp_path / "m.json").exists()


def test_report_without_matplotlib_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises
    out = tmp_path / "report"
    err = _one_line_error(capsys, main([*_files(tmp_path), "--report", str(out)]), "matplotlib")
    assert 'pip install "vertimrf[report]"' in err and not out.exists()


def test_sdmetrics_without_the_extra_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "sdmetrics", None)  # import sdmetrics raises
    err = _one_line_error(capsys, main([*_files(tmp_path), "--sdmetrics"]), "sdmetrics")
    assert err == (
        "vertimrf: error: evaluate --sdmetrics needs the sdmetrics package, which is not "
        'installed: pip install "vertimrf[quality]", or leave out --sdmetrics.\n'
    )
    assert capsys.readouterr().out == ""


def test_sdmetrics_metadata_follows_the_spec():
    assert sdmetrics_metadata(SPEC) == {
        "columns": {"color": {"sdtype": "categorical"}, "size": {"sdtype": "numerical"}}
    }


def test_sdmetrics_quality_report_from_the_same_spec(tmp_path, capsys):
    pytest.importorskip("sdmetrics")
    pytest.importorskip("matplotlib")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from sdmetrics.reports.single_table import QualityReport
    rng = np.random.default_rng(1)
    n = 200
    size = rng.uniform(0, 10, n).round(2)
    real = pd.DataFrame({"color": np.where(size > 5, "red", "blue"), "size": size})
    synth = pd.DataFrame({"color": rng.choice(["red", "blue"], n), "size": rng.uniform(0, 10, n)})
    out = tmp_path / "report"
    args = [*_files(tmp_path, real, synth), "--sdmetrics", "--report", str(out), "--json",
            str(tmp_path / "m.json")]  # fmt: skip
    assert main(args) == 0
    expected = QualityReport()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected.generate(
            pd.read_csv(tmp_path / "real.csv"), pd.read_csv(tmp_path / "synth.csv"),
            sdmetrics_metadata(SPEC), verbose=False,
        )  # fmt: skip
    scores = expected.get_properties().set_index("Property")["Score"]
    shapes, trends = scores["Column Shapes"], scores["Column Pair Trends"]
    assert 0 < shapes < 1 and 0 <= trends < 1  # color follows size in the real table only
    line = f"sdmetrics QualityReport: Column Shapes {shapes:.4f}, Column Pair Trends {trends:.4f}"
    assert line in capsys.readouterr().out
    figures = json.loads((tmp_path / "m.json").read_text())["sdmetrics"]
    assert figures["column_shapes"] == pytest.approx(shapes)
    assert figures["column_pair_trends"] == pytest.approx(trends)
    for prop, name in SDMETRICS_FILES.items():
        details = pd.read_csv(out / name)
        assert len(details) == (2 if prop == "Column Shapes" else 1)
        assert f"[{name}]({name})" in (out / "report.md").read_text()


def test_a_datetime_column_is_drawn_and_described_as_times(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    axis = TimeAxis("2013-01-01", "2013-12-31 23:00", "day", format="%Y-%m-%d %H:%M:%S")
    spec = DomainSpec([*SPEC.columns, ColumnSpec("time_hour", "datetime", time=axis)])
    stamps = pd.Timestamp("2013-01-01") + pd.to_timedelta(np.arange(4) * 1000, unit="h")
    real = REAL.assign(time_hour=stamps.strftime(axis.format))
    synth = SYNTH.assign(time_hour=(stamps + pd.Timedelta(hours=2000)).strftime(axis.format))
    out = tmp_path / "report"
    assert main([*_files(tmp_path, real, synth, spec), "--report", str(out)]) == 0
    # Hours 0, 1000, 2000, 3000 against 2000..5000: the CDFs part by 1/2 at 1000 and 3000.
    assert "  time_hour  datetime     KS        0.5000\n" in capsys.readouterr().out
    _is_png((out / figure_names(spec)["time_hour"]).read_bytes())
    assert sdmetrics_metadata(spec)["columns"]["time_hour"] == {
        "sdtype": "datetime",
        "datetime_format": "%Y-%m-%d %H:%M:%S",
    }


def test_evaluate_without_a_report_imports_neither_matplotlib_nor_sdmetrics(tmp_path):
    args = _files(tmp_path)
    code = (
        "import sys; from vertimrf.cli import main; code = main(sys.argv[1:]); "
        "print(code, sorted({'matplotlib', 'sdmetrics'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.stdout.splitlines()[-1] == "0 []", done.stderr
