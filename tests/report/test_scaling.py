"""The scaling figure at its tiny level: the server and each party really ran as their own
processes (seconds, CPU seconds, peak memory and bytes of each), and a run that fails stops
every role and says why."""

from __future__ import annotations

import re

import numpy as np
import pytest

from vertimrf.datasets import load_dataset
from vertimrf.errors import RunFailedError
from vertimrf.protocol.factory import from_preset
from vertimrf.report import FIGURES
from vertimrf.report.context import ReportContext
from vertimrf.report.role_processes import run_roles

MB = 1 << 20
ROLES = ["party A", "party B", "server"]
BALLAST_BYTES = 1 << 30


@pytest.fixture(scope="module")
def tiny():
    df, spec = load_dataset("nltcs")
    ctx = ReportContext("nltcs", df.iloc[:3000], spec, seeds=1, progress=False)
    fig = FIGURES["scaling"]
    ballast = np.ones(BALLAST_BYTES // 8)  # this process's memory, which no role's peak counts
    data = fig.compute(ctx, fig.params["tiny"])
    assert ballast.sum() > 0
    return fig.params["tiny"], data


def test_every_role_ran_as_a_process_at_every_size(tiny):
    params, data = tiny
    assert [p.title for p in data.panels] == ["wall seconds", "CPU seconds", "bytes sent"]
    for panel in data.panels:
        measured = {s["label"]: s for s in panel.series if not s["dashed"]}
        assert list(measured) == [f"{r}, measured" for r in ROLES]
        for s in measured.values():
            assert s["x"] == params["rows"]
            assert all(v > 0 for v in s["mean"])
    # Only the sizes above the measured ones are projected, never below the largest measured.
    for s in data.panels[0].series:
        if s["dashed"]:
            assert s["x"] == [*params["rows"], 10_000_000, 100_000_000]
            assert min(s["mean"][2:]) >= max(s["mean"][:2])
    # A party sends its feature blobs (at least a byte per row to its peer); the server
    # only its deals.
    sent = {s["label"]: s["mean"] for s in data.panels[2].series if not s["dashed"]}
    for party in ROLES[:2]:
        assert all(b >= n for b, n in zip(sent[f"{party}, measured"], params["rows"], strict=True))
    # The peak RSS of every role at every size, its own: a Python process with NumPy takes
    # more than 50 MB, and none of these small runs takes the 1 GB this process holds.
    peaks = next(n for n in data.notes if n.startswith("Peak RSS"))
    for n in params["rows"]:
        row = re.search(rf"{n:,} rows ([^;.]*)", peaks).group(1)
        mb = [float(v.replace(",", "")) for v in re.findall(r"([\d,]+) \(", row)]
        assert len(mb) == 3 and all(50 < v < BALLAST_BYTES / MB for v in mb)


def test_a_failed_role_stops_the_others_and_says_why(tmp_path):
    df, spec = load_dataset("nltcs")
    parties = [("A", list(spec.names[:8])), ("B", list(spec.names[8:]))]
    # max_rows 1024 cannot hold 3,000 records: a party or the server refuses the run.
    config = from_preset("default", epsilon=1.0, delta=1e-6, spec=spec, parties=parties,
                         max_rows=1024)  # fmt: skip
    rng = np.random.default_rng(0)
    with pytest.raises(RunFailedError, match=r"(?s)failed \(exit 2\).*larger public max_rows"):
        run_roles(tmp_path, df.iloc[:3000], config, rng, seed=0, timeout=120)
    assert sorted(p.name for p in tmp_path.glob("*.log")) == ["A.log", "B.log", "server.log"]
