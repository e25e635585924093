"""The network walkthrough of docs/two-organisations.md runs as written: keys, fingerprints,
the pinned config, the server and each party, each its own process on loopback (the port
swapped for a free one); the run writes a synthetic table with Adult's named columns and
categories, and ends with ``vertimrf evaluate``."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from vertimrf.datasets import load_dataset
from vertimrf.encoding import TableEncoder
from vertimrf.metrics import tvd

PAGE = Path(__file__).resolve().parent.parent / "docs" / "two-organisations.md"


def _walkthrough(mark: str = "walkthrough") -> str:
    text = PAGE.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {mark} -->\n```bash\n(.*?)```", text, re.S)
    assert found, f"docs/two-organisations.md has no {mark} block"
    return found.group(1)


def _ran(folder: Path, mark: str = "walkthrough") -> str:
    """The block ``mark`` run by bash in ``folder`` (its port a free one); its stdout."""
    script = _walkthrough(mark).replace("8443", str(_free_port()))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=folder, env=env, capture_output=True, text=True,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_the_walkthrough_names_every_step():
    block = _walkthrough()
    for step in ("vertimrf split --dataset adult_labeled", "vertimrf keys", "vertimrf config",
                 "--pin", "vertimrf server run --config", "--listen",
                 "vertimrf party run --server"):  # fmt: skip
        assert step in block
    # named columns, and the last command evaluates the synthetic table
    assert "A=age,workclass," in block and "--dataset adult " not in block
    last = block.strip().splitlines()[-1]
    assert last.startswith("vertimrf evaluate --dataset adult_labeled --real data/shared.csv")


@pytest.mark.slow
def test_the_walkthrough_runs(tmp_path):
    out = _ran(tmp_path)
    for name in ("A", "B"):  # each party ran all of its steps and says what it sent
        assert re.search(
            rf"^{name}: ran commit, tokens, features, release, groups, measure; sent [\d,]+ "
            "bytes",
            out,
            re.M,
        )
    assert "pinned identities" in out
    real, spec = load_dataset("adult_labeled")
    synth = pd.read_csv(tmp_path / "synth.csv")
    assert list(synth.columns) == list(spec.names) and spec.names[:2] == ("age", "workclass")
    TableEncoder(spec).table(synth)  # every value one of the spec's categories
    assert set(synth["income"]) <= {"<=50K", ">50K"}
    # evaluate's figures are those of the synthetic table against the rows both hold
    shared_rows = pd.read_csv(tmp_path / "data" / "shared.csv")
    got = float(re.search(r"^tvd3: ([0-9.]+)$", out, re.M).group(1))
    assert got == pytest.approx(tvd(shared_rows, synth, spec, ways=3), abs=5e-5)
    assert "Columns, worst first" in out
    # The rows are those both parties hold, as many as the noisy count of that region
    # (discrete Gaussian, sigma well under 1,000 at this budget): far inside 10% of the
    # true count, the rows of shared.csv (about 30,000 of the 45,222).
    shared = len(shared_rows)
    assert shared < 0.7 * len(real) and abs(len(synth) - shared) < 0.1 * shared


@pytest.mark.slow
def test_the_walkthrough_with_no_neutral_server_runs(tmp_path):
    """A runs the server and its party on its machine, B its party; product "paillier" over
    HTTPS from the two CSVs: each party runs the reply steps, the synthetic table has
    Adult's columns and categories, and the server's report bounds the server with each
    party."""
    out = _ran(tmp_path, "walkthrough-paillier")
    steps = "commit, tokens, features, reply, release, groups, group-reply, measure"
    for name in ("A", "B"):
        assert re.search(rf"^{name}: ran {steps}; sent [\d,]+ bytes", out, re.M), out[-3000:]
    assert "product paillier, " in out and "encrypts" in out  # the plan's lines
    real, spec = load_dataset("adult_labeled")
    synth = pd.read_csv(tmp_path / "synth.csv")
    assert list(synth.columns) == list(spec.names)
    TableEncoder(spec).table(synth)
    report = json.loads((tmp_path / "A" / "server" / "state" / "report.json").read_text())
    viewers = report["viewers"]
    assert {"server+A", "server+B"} <= set(viewers)
    assert viewers["server+A"]["epsilon"] > viewers["server"]["epsilon"] > 0
