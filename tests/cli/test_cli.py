"""The ``vertimrf`` command: roles as separate processes exchanging files, evaluate, help."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from tests.helpers import party_frames, small_adult
from vertimrf.encoding import TableEncoder


def _run(*args, cwd):
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return proc


@pytest.mark.slow
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
        ["keys", "--name", "alice", "--out-dir", "k"],
        ["keys", "--name", "bob", "--out-dir", "k"],
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
            *(["--t", "256", "--allow-non-dp"] if method == "fm" else []),
            "--out",
            "config.json",
        ],
        [
            "party",
            "local",
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
            "--keys",
            "k/alice.key",
            "--out",
            "alice.vmrf",
            "--quiet",
        ],
        [
            "party",
            "local",
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
            "--keys",
            "k/bob.key",
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
    if method == "fm":
        assert report["dp_guarantee"] is False and report["total_epsilon"] is None
    else:
        assert report["dp_guarantee"] is True and report["total_epsilon"] <= 2.0 * (1 + 1e-9)
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
        "--method",
        "fo",
        "--out",
        "c.json",
        cwd=tmp_path,
    )
    assert (tmp_path / "c.json").exists()
    proc = _run(
        "server", "synthesize", "junk.vmrf", "--config", "c.json", "--out", "s.csv", cwd=tmp_path
    )
    assert proc.returncode == 2 and "vertimrf: error:" in proc.stderr
    assert not (tmp_path / "s.csv").exists()


def _config_args(*extra):
    return (
        "config", "--spec", "spec.json", "--party", "a=0,1", "--party", "b=2,3",
        "--epsilon", "1", "--delta", "1e-5", *extra,
    )  # fmt: skip


def _one_line_error(proc, pattern):
    """Exit 2 and one line on stderr naming the problem: no traceback."""
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vertimrf: error:"), proc.stderr
    assert "Traceback" not in proc.stderr and pattern in lines[0], lines[0]


def test_fm_is_refused_without_allow_non_dp(tmp_path):
    df, spec = small_adult(100, 4)
    spec.to_json(tmp_path / "spec.json")
    proc = _run(*_config_args("--method", "fm", "--out", "c.json"), cwd=tmp_path)
    _one_line_error(proc, "allow_non_dp")
    assert not (tmp_path / "c.json").exists()
    proc = _run(*_config_args("--method", "fm", "--allow-non-dp", "--out", "c.json"), cwd=tmp_path)
    assert proc.returncode == 0 and "NOT differentially private" in proc.stdout
    assert json.loads((tmp_path / "c.json").read_text())["allow_non_dp"] is True


@pytest.mark.slow
def test_config_defaults_to_the_secure_method_which_needs_max_rows(tmp_path):
    df, spec = small_adult(100, 4)
    spec.to_json(tmp_path / "spec.json")
    proc = _run(*_config_args("--out", "c.json"), cwd=tmp_path)
    _one_line_error(proc, "--max-rows")
    assert not (tmp_path / "c.json").exists()
    proc = _run(*_config_args("--max-rows", "1024", "--out", "c.json"), cwd=tmp_path)
    assert proc.returncode == 0 and "method secure" in proc.stdout
    assert json.loads((tmp_path / "c.json").read_text())["method"] == "secure"
    proc = _run(*_config_args("--preset", "paper", "--out", "p.json"), cwd=tmp_path)
    assert json.loads((tmp_path / "p.json").read_text())["method"] == "fo"
    proc = _run(*_config_args("--method", "fo", "--feature-width", "8", "--out", "f.json"),
                cwd=tmp_path)  # fmt: skip
    _one_line_error(proc, "--feature-width")
    assert not (tmp_path / "f.json").exists()
    proc = _run(*_config_args("--method", "fo", "--binning", "off", "--out", "f.json"),
                cwd=tmp_path)  # fmt: skip
    _one_line_error(proc, "--binning")
    assert not (tmp_path / "f.json").exists()
    proc = _run(*_config_args("--method", "fo", "--pipeline", "paper", "--out", "f.json"),
                cwd=tmp_path)  # fmt: skip
    _one_line_error(proc, "--pipeline")
    assert not (tmp_path / "f.json").exists()
    proc = _run(*_config_args("--max-rows", "128", "--binning", "off", "--pipeline", "paper",
                              "--out", "o.json"), cwd=tmp_path)  # fmt: skip
    _one_line_error(proc, "--binning")  # the paper pipeline does not read it
    proc = _run(*_config_args("--max-rows", "1024", "--binning", "off", "--out", "o.json"),
                cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and "pipeline select, binning off" in proc.stdout
    written = json.loads((tmp_path / "o.json").read_text())["options"]
    assert (written["type"], written["binning"]) == ("SecureOptions", "off")
    proc = _run(*_config_args("--max-rows", "128", "--pipeline", "paper", "--out", "q.json"),
                cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0 and "pipeline paper" in proc.stdout
    written = json.loads((tmp_path / "q.json").read_text())["options"]
    assert written["type"] == "SecurePaperOptions" and "binning" not in written
    defaults = json.loads((tmp_path / "c.json").read_text())["options"]
    assert (defaults["type"], defaults["binning"]) == ("SecureOptions", "auto")


@pytest.mark.slow
def test_every_unreadable_input_is_a_one_line_error(tmp_path):
    df, spec = small_adult(100, 4)
    spec.to_json(tmp_path / "spec.json")
    assert _run(*_config_args("--method", "fo", "--out", "c.json"), cwd=tmp_path).returncode == 0
    assert _run("secret", "--out", "s.hex", cwd=tmp_path).returncode == 0
    frame = party_frames(df, [["0", "1"], ["2", "3"]], seed=0)[0]
    frame.to_csv(tmp_path / "a.csv", index=False)
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "bad.hex").write_text("zz-not-hex")
    (tmp_path / "bin.csv").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "junk.vmrf").write_bytes(b"not a zip")

    assert _run("keys", "--name", "a", "--out-dir", "k", cwd=tmp_path).returncode == 0

    def encode(**over):
        args = {
            "--config": "c.json",
            "--data": "a.csv",
            "--secret-file": "s.hex",
            "--keys": "k/a.key",
            **over,
        }
        flat = [x for kv in args.items() for x in kv]
        return _run("party", "local", "--party", "a", "--id-column", "rid", *flat,
                    "--out", "m.vmrf", "--quiet", cwd=tmp_path)  # fmt: skip

    cases = [
        (encode(**{"--secret-file": "missing.hex"}), "missing.hex"),
        (encode(**{"--secret-file": "bad.hex"}), "not a hex secret"),
        (encode(**{"--config": "missing.json"}), "missing.json"),
        (encode(**{"--config": "bad.json"}), "config file is not valid JSON"),
        (encode(**{"--data": "missing.csv"}), "missing.csv"),
        (encode(**{"--data": "bin.csv"}), "bin.csv"),
        (encode(**{"--count-from": "junk.vmrf"}), "junk.vmrf"),
        (
            _run(
                "server",
                "synthesize",
                "missing.vmrf",
                "--config",
                "c.json",
                "--out",
                "o.csv",
                cwd=tmp_path,
            ),
            "missing.vmrf",
        ),  # fmt: skip
        (
            _run(
                "server",
                "synthesize",
                "junk.vmrf",
                "--config",
                "c.json",
                "--out",
                "o.csv",
                cwd=tmp_path,
            ),
            "junk.vmrf",
        ),  # fmt: skip
        (
            _run(
                "config",
                "--spec",
                "missing.json",
                "--party",
                "a=0",
                "--party",
                "b=1",
                "--epsilon",
                "1",
                "--delta",
                "1e-5",
                "--out",
                "x.json",
                cwd=tmp_path,
            ),
            "missing.json",
        ),  # fmt: skip
    ]
    for proc, pattern in cases:
        _one_line_error(proc, pattern)
    assert not any((tmp_path / f).exists() for f in ("m.vmrf", "o.csv", "x.json"))


@pytest.mark.parametrize(
    "cmd",
    [
        [],
        ["demo"],
        ["secret"],
        ["config"],
        ["party", "local"],
        ["server", "synthesize"],
        ["evaluate"],
        ["spec"],
        ["split"],
        ["report"],
    ],
)
def test_every_command_has_help(cmd):
    proc = _run(*cmd, "--help", cwd=".")
    assert proc.returncode == 0 and "usage: vertimrf" in proc.stdout
