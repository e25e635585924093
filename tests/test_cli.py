"""The ``vertimrf`` command: roles as separate processes exchanging files, evaluate, help."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.vertical_fixtures import party_frames, small_adult
from vertimrf.domain import TableEncoder


def _run(*args, cwd):
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc


@pytest.mark.parametrize("method", ["fm", "fo"])
def test_roles_run_as_separate_processes(tmp_path, method):
    df, spec = small_adult(1500, 6)
    spec.to_json(tmp_path / "spec.json")
    parties = [["0", "2", "5"], ["1", "3", "4"]]
    for name, frame in zip(("alice", "bob"), party_frames(df, parties, seed=1), strict=True):
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    df.to_csv(tmp_path / "real.csv", index=False)
    steps = [
        ["secret", "--out", "secret.hex"],
        [
            "config",
            "--spec",
            "spec.json",
            "--party",
            "alice=0,2,5",
            "--party",
            "bob=1,3,4",
            "--epsilon",
            "2.0",
            "--delta",
            "1e-5",
            "--method",
            method,
            "--t",
            "256",
            "--out",
            "config.json",
        ],
        [
            "party",
            "encode",
            "--config",
            "config.json",
            "--party",
            "alice",
            "--data",
            "alice.csv",
            "--id-column",
            "rid",
            "--secret-file",
            "secret.hex",
            "--out",
            "alice.vmrf",
            "--quiet",
        ],
        [
            "party",
            "encode",
            "--config",
            "config.json",
            "--party",
            "bob",
            "--data",
            "bob.csv",
            "--id-column",
            "rid",
            "--secret-file",
            "secret.hex",
            "--out",
            "bob.vmrf",
            "--quiet",
            "--count-from",
            "alice.vmrf",
        ],
        [
            "server",
            "synthesize",
            "alice.vmrf",
            "bob.vmrf",
            "--config",
            "config.json",
            "--out",
            "synth.csv",
            "--report",
            "report.json",
            "--quiet",
        ],
        [
            "evaluate",
            "--spec",
            "spec.json",
            "--real",
            "real.csv",
            "--synth",
            "synth.csv",
            "--ways",
            "2,3",
            "--json",
            "metrics.json",
        ],
    ]
    for step in steps:
        proc = _run(*step, cwd=tmp_path)
        assert proc.returncode == 0, (step, proc.stderr[-2000:])
    synth = pd.read_csv(tmp_path / "synth.csv")
    synth.columns = [str(c) for c in synth.columns]
    assert list(synth.columns) == list(spec.names)
    codes = TableEncoder(spec).encode(synth)  # raises on any value off the domain
    assert codes.shape[0] > 1000 and np.all(codes.max(axis=0) < np.array(spec.domain.sizes))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["total_epsilon"] <= 2.0 * (1 + 1e-9)
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert 0 <= metrics["tvd2"] <= 1 and 0 <= metrics["tvd3"] <= 1


def test_bad_input_gives_a_clear_error_and_exit_code_2(tmp_path):
    (tmp_path / "junk.vmrf").write_bytes(b"not a zip")
    df, spec = small_adult(100, 4)
    spec.to_json(tmp_path / "spec.json")
    _run(
        "config",
        "--spec",
        "spec.json",
        "--party",
        "a=0,1",
        "--party",
        "b=2,3",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--out",
        "c.json",
        cwd=tmp_path,
    )
    proc = _run(
        "server", "synthesize", "junk.vmrf", "--config", "c.json", "--out", "s.csv", cwd=tmp_path
    )
    assert proc.returncode == 2 and "vertimrf: error:" in proc.stderr
    assert not (tmp_path / "s.csv").exists()


@pytest.mark.parametrize(
    "cmd",
    [
        [],
        ["demo"],
        ["secret"],
        ["config"],
        ["party", "encode"],
        ["server", "synthesize"],
        ["evaluate"],
    ],
)
def test_every_command_has_help(cmd):
    proc = _run(*cmd, "--help", cwd=".")
    assert proc.returncode == 0 and "usage: vertimrf" in proc.stdout
