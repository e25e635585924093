"""From a CSV of your own to a run: docs/own-data.md runs as written (a table without an ID
column, `vertimrf spec`, the page's fixed spec, `split --add-id`, keys, config, the roles over
folders, `evaluate`); `split` takes column names and refuses positions; `spec` warns that it
is not DP and never overwrites; `evaluate --label` without scikit-learn is one line."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers import ROOT
from vertimrf.cli import main
from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder

PAGE = ROOT / "docs" / "own-data.md"
PARTIES = ["--party", "A=age,sex,smoker", "--party", "B=city,income"]


def _people(path: Path, n: int = 400) -> pd.DataFrame:
    """The page's people.csv: n rows, no ID column, values inside the page's fixed spec."""
    rng = np.random.default_rng(7)
    age = rng.integers(18, 91, n)
    df = pd.DataFrame({
        "age": age,
        "sex": rng.choice(["F", "M"], n),
        "city": rng.choice(["Bergen", "Oslo", "Tromso"], n),
        "income": rng.normal(50_000, 15_000, n).round(2).clip(0, 200_000),
        "smoker": np.where(rng.random(n) < 0.2 + 0.4 * (age < 40), "yes", "no"),
    })  # fmt: skip
    df.to_csv(path, index=False)
    return df


def _blocks() -> tuple[list[str], dict]:
    """The page's runnable bash blocks, in order, and its fixed spec."""
    text = PAGE.read_text(encoding="utf-8")
    bash = re.findall(r"<!-- own-data -->\n```bash\n(.*?)```", text, re.S)
    [spec] = re.findall(r"<!-- own-data spec -->\n```json\n(.*?)```", text, re.S)
    return bash, json.loads(spec)


def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "XDG_STATE_HOME": str(cwd / "xdg")}  # fmt: skip
    return subprocess.run(
        ["bash", "-e", "-c", script], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip


@pytest.mark.slow
def test_the_own_data_page_runs_from_a_csv_to_a_synthetic_table(tmp_path):
    blocks, fixed = _blocks()
    assert [b.split()[1] for b in blocks] == ["spec", "split", "keys", "evaluate"]
    real = _people(tmp_path / "people.csv")
    done = _bash(blocks[0], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "NOT differentially private" in done.stderr and "fix it by hand" in done.stderr.lower()
    proposed = json.loads((tmp_path / "people.json").read_text())["columns"]
    # Read off the data: the data's min and max, the categories seen. The page's fix keeps
    # the columns and their types and replaces those with public knowledge.
    assert (proposed[0]["lower"], proposed[0]["upper"]) == (real.age.min(), real.age.max())
    assert [(c["name"], c["type"]) for c in proposed] == [
        (c["name"], c["type"]) for c in fixed["columns"]
    ]
    assert proposed != fixed["columns"]
    (tmp_path / "people.json").write_text(json.dumps(fixed))  # the fix by hand
    done = _bash("\n".join(blocks[1:]), tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    a = pd.read_csv(tmp_path / "data" / "A.csv")
    assert list(a.columns) == ["rid", "age", "sex", "smoker"] and a.rid.tolist() == list(range(400))
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "data" / "all.csv"), real)
    spec = DomainSpec.from_dict(fixed)
    synth = pd.read_csv(tmp_path / "synth.csv")
    assert list(synth.columns) == list(spec.names)
    TableEncoder(spec).table(synth)  # every value inside the public domain
    assert abs(len(synth) - len(real)) < 100  # the noisy count (sigma about 10 here)
    for figure in ("tvd2", "tvd3", "svm_misclassification"):
        assert re.search(rf"^{figure}: 0\.\d{{4}}$", done.stdout, re.M), done.stdout


@pytest.fixture
def people(tmp_path: Path) -> Path:
    """people.csv and the page's fixed spec as people.json, in ``tmp_path``."""
    _people(tmp_path / "people.csv", n=50)
    (tmp_path / "people.json").write_text(json.dumps(_blocks()[1]))
    return tmp_path


def _split(root: Path, *extra: str) -> list[str]:
    return ["split", "--data", str(root / "people.csv"), "--spec", str(root / "people.json"),
            "--out-dir", str(root / "data"), *extra]  # fmt: skip


def test_split_takes_column_names_and_refuses_positions(people, capsys):
    assert main(_split(people, "--party", "A=0,1", "--party", "B=2", "--add-id", "rid")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--party takes column names, not positions" in err
    assert not (people / "data").exists()
    argv = ["config", "--spec", str(people / "people.json"), "--party", "A=0,1,4", "--party",
            "B=city,income", "--epsilon", "1", "--delta", "1e-6", "--max-rows", "1024",
            "--out", str(people / "config.json")]  # fmt: skip
    assert main(argv) == 2
    assert "--party takes column names, not positions" in capsys.readouterr().err
    assert main(_split(people, *PARTIES, "--add-id", "rid")) == 0
    a, b = (pd.read_csv(people / "data" / f"{n}.csv") for n in "AB")
    assert list(a.columns) == ["rid", "age", "sex", "smoker"]
    assert list(b.columns) == ["rid", "city", "income"]
    joined = a.merge(b, on="rid")[["age", "sex", "city", "income", "smoker"]]
    pd.testing.assert_frame_equal(joined, pd.read_csv(people / "people.csv"))


def test_split_needs_an_id_column_and_checks_the_tables_own(people, capsys):
    assert main(_split(people, *PARTIES)) == 2
    err = capsys.readouterr().err
    assert "needs a record-ID column" in err and "--id-column COL" in err and "--add-id NAME" in err
    df = pd.read_csv(people / "people.csv")
    df.assign(pid=[f"P{i % 49}" for i in range(len(df))]).to_csv(people / "people.csv", index=False)
    assert main(_split(people, *PARTIES, "--id-column", "pid")) == 2
    assert "duplicated record ID" in capsys.readouterr().err
    df.assign(pid=[f"P{i}" for i in range(len(df))]).to_csv(people / "people.csv", index=False)
    assert main(_split(people, *PARTIES, "--id-column", "pid")) == 0
    assert pd.read_csv(people / "data" / "B.csv").pid.tolist() == [f"P{i}" for i in range(50)]


def test_split_refuses_a_value_off_the_spec_before_writing(people, capsys):
    df = pd.read_csv(people / "people.csv")
    df.loc[3, "age"] = 130
    df.to_csv(people / "people.csv", index=False)
    assert main(_split(people, *PARTIES, "--add-id", "rid", "--all")) == 2
    err = capsys.readouterr().err
    assert "column 'age', row 4" in err and "outside its public bounds" in err
    assert not (people / "data").exists()


def test_spec_warns_that_it_is_not_dp_and_never_overwrites(tmp_path, capsys):
    df = _people(tmp_path / "people.csv", n=50)
    df.insert(0, "pid", range(len(df)))
    df.to_csv(tmp_path / "people.csv", index=False)
    out = tmp_path / "proposed.json"
    argv = ["spec", "--data", str(tmp_path / "people.csv"), "--out", str(out), "--id-column", "pid"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "PROPOSED" in captured.out and "NOT DP" in captured.out
    [warning] = captured.err.splitlines()
    assert warning.startswith("vertimrf: warning: ") and "NOT differentially private" in warning
    assert "categories from public knowledge" in warning and "numeric bounds" in warning
    spec = DomainSpec.from_json(out)
    assert spec.names == ("age", "sex", "city", "income", "smoker")  # the IDs left out
    before = out.read_bytes()
    assert main(argv) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert out.read_bytes() == before


BLOCK_SKLEARN = "import sys; sys.modules['sklearn'] = None; from vertimrf.cli import main; "


def test_evaluate_label_without_scikit_learn_is_one_line(people):
    df = pd.read_csv(people / "people.csv")
    df.to_csv(people / "synth.csv", index=False)
    args = ["evaluate", "--spec", "people.json", "--real", "people.csv", "--synth", "synth.csv",
            "--ways", "2"]  # fmt: skip
    run = [sys.executable, "-c", BLOCK_SKLEARN + "sys.exit(main(sys.argv[1:]))"]
    done = subprocess.run([*run, *args, "--label", "smoker"], cwd=people, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "vertimrf: error: --label (the SVM metric) needs scikit-learn: install vertimrf[eval], "
        "or leave out --label for the TVD figures alone.\n"
    )
    done = subprocess.run([*run, *args], cwd=people, capture_output=True, text=True, timeout=300)
    kinds = {"age": "numeric", "city": "categorical", "income": "numeric", "sex": "categorical",
             "smoker": "categorical"}  # fmt: skip
    metric = {"numeric": "KS ", "categorical": "TVD"}
    columns = "".join(f"  {c:<6}  {t:<11}  {metric[t]}       0.0000\n" for c, t in kinds.items())
    pairs = [("age", "city"), ("age", "income"), ("age", "sex"), ("age", "smoker"),
             ("city", "income"), ("city", "smoker"), ("income", "smoker"), ("sex", "city"),
             ("sex", "income"), ("sex", "smoker")]  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "tvd2: 0.0000\n\nColumns, worst first (5 of 5; KS distance of the values for numbers "
        "and times, 1-way TVD otherwise):\n  column  type         metric  distance\n"
        + columns
        + "\nColumn pairs, worst first (10 of 10; 2-way TVD):\n  column 1  column 2    tvd2\n"
        + "".join(f"  {u:<8}  {v:<8}  0.0000\n" for u, v in pairs)
    )


def _flights(path: Path, rows: int = 200) -> pd.DataFrame:
    """A CSV shaped like nycflights13's flights: an ID-like row number, a year that never
    changes, few carriers, many tail numbers, air times and hourly timestamps."""
    rng = np.random.default_rng(5)
    df = pd.DataFrame({
        "rownames": np.arange(1, rows + 1),
        "year": 2013,
        "carrier": rng.choice(["AA", "DL", "UA"], rows),
        "tailnum": [f"N{v}" for v in rng.integers(100, 999, rows)],
        "air_time": rng.uniform(20, 600, rows).round(1),
        "time_hour": [f"2013-01-{1 + i // 24:02d} {i % 24:02d}:00:00" for i in range(rows)],
        "dest": rng.choice(["IAH", "MIA", "BQN"], rows),
    })  # fmt: skip
    df.to_csv(path, index=False)
    return df


def test_spec_warns_of_unwanted_columns_one_line_each_and_ignores_them(tmp_path, capsys):
    _flights(tmp_path / "flights.csv")
    out = tmp_path / "flights.json"
    argv = ["spec", "--data", str(tmp_path / "flights.csv"), "--out", str(out),
            "--max-categories", "50", "--drop", "dest"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    warned = {line.split("'")[1]: line for line in captured.err.splitlines() if "column '" in line}
    assert set(warned) == {"rownames", "year", "tailnum"}  # time_hour: datetime
    assert len(captured.err.splitlines()) == 4  # and the NOT DP warning
    assert all(line.startswith("vertimrf: warning: column '") for line in warned.values())
    assert "like a record ID" in warned["rownames"] and "one value (2013)" in warned["year"]
    assert "more than max categories (50)" in warned["tailnum"]
    columns = json.loads(out.read_text())["columns"]
    types = {c["name"]: c["type"] for c in columns}
    assert types == {"year": "categorical", "carrier": "categorical", "air_time": "numeric",
                     "rownames": "ignore", "tailnum": "ignore", "time_hour": "datetime",
                     "dest": "ignore"}  # fmt: skip
    assert '  dest: "type": "ignore", left out of every table (--drop)' in captured.out
    assert main([*argv[:-2], "--drop", "nope", "--force"]) == 2
    assert "has no column 'nope' (--drop)" in capsys.readouterr().err


def test_ignored_columns_stay_out_of_the_split_and_the_config(tmp_path, capsys):
    _flights(tmp_path / "flights.csv")
    spec = tmp_path / "flights.json"
    argv = ["spec", "--data", str(tmp_path / "flights.csv"), "--out", str(spec),
            "--id-column", "rownames", "--drop", "year", "--drop", "time_hour"]  # fmt: skip
    assert main(argv) == 0
    parties = ["--party", "A=carrier,dest", "--party", "B=air_time"]
    split = ["split", "--data", str(tmp_path / "flights.csv"), "--spec", str(spec),
             "--id-column", "rownames", *parties, "--all", "--out-dir",
             str(tmp_path / "data")]  # fmt: skip
    assert main(split) == 0
    whole = pd.read_csv(tmp_path / "data" / "all.csv")
    assert list(whole.columns) == ["carrier", "air_time", "dest"]  # the spec's, in order
    config = ["config", "--spec", str(spec), *parties, "--epsilon", "1", "--delta", "1e-6",
              "--max-rows", "1024", "--out", str(tmp_path / "config.json")]  # fmt: skip
    capsys.readouterr()
    assert main(config) == 0
    saved = (tmp_path / "config.json").read_text()
    assert all(f'"{c}"' not in saved for c in ("year", "tailnum", "time_hour"))
    # The secure method sends far more than a party's table: one line a party says so.
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("vertimrf: warning: party A sends ")
    assert "times its table (1,024 rows of max_rows x 2 columns x 1 byte a cell" in err[0]


def test_split_names_the_one_bad_cell_of_a_numeric_column(tmp_path, capsys):
    df = _flights(tmp_path / "flights.csv")
    spec = tmp_path / "flights.json"
    spec.write_text(json.dumps({"columns": [
        {"name": "carrier", "type": "categorical", "categories": ["AA", "DL", "UA"]},
        {"name": "air_time", "type": "numeric", "lower": 0, "upper": 800, "bins": 8},
    ]}))  # fmt: skip
    df = df[["rownames", "carrier", "air_time"]].astype({"air_time": object})
    df.loc[[76, 150], "air_time"] = ["12k", "n/a"]
    df.to_csv(tmp_path / "flights.csv", index=False)
    split = ["split", "--data", str(tmp_path / "flights.csv"), "--spec", str(spec),
             "--id-column", "rownames", "--party", "A=carrier", "--party", "B=air_time",
             "--out-dir", str(tmp_path / "data")]  # fmt: skip
    assert main(split) == 2
    err = capsys.readouterr().err
    assert err == (
        "vertimrf: error: column 'air_time', row 77 (counting from 1 after the header): the "
        "value '12k' is not a number; 2 bad rows in all (other values: 'n/a'); fix the cell, "
        'empty it and declare "missing": true in the domain spec, or declare the column '
        "categorical in the domain spec.\n"
    )
