"""Cheap commands start fast: ``vertimrf --help``, ``keys``, ``secret``, ``config`` and
``status`` import no Numba. Each runs in a fresh interpreter, which
then reports the heavy modules it loaded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vertimrf.datasets import load_dataset

PROBE = """
import json, runpy, sys
sys.argv = ["vertimrf", *sys.argv[1:]]
try:
    runpy.run_module("vertimrf", run_name="__main__")
except SystemExit:
    pass
print(json.dumps({m: m in sys.modules for m in ("numba", "pandas", "scipy")}), file=sys.stderr)
"""


def _loaded(cwd: Path, *args: str) -> dict[str, bool]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=cwd, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    return json.loads(proc.stderr.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("startup")
    spec = load_dataset("nltcs")[1]
    spec.to_json(root / "spec.json")
    names = list(spec.names)
    subprocess.run(
        [sys.executable, "-m", "vertimrf", "config", "--spec", "spec.json",
         "--party", f"A={','.join(names[:8])}", "--party", f"B={','.join(names[8:])}",
         "--epsilon", "1", "--delta", "1e-6", "--max-rows", "4096", "--out", "config.json"],
        cwd=root, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "vertimrf", "keys", "--name", "B", "--out-dir", "B"],
        cwd=root, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return root


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["keys", "--name", "A", "--out-dir", "keys"],
        ["secret", "--out", "group.secret"],
        ["config", "--help"],
        ["status", "--help"],
    ],
    ids=["help", "keys", "secret", "config-help", "status-help"],
)
def test_a_cheap_command_imports_no_numba_pandas_or_scipy(folder, args):
    assert _loaded(folder, *args) == {"numba": False, "pandas": False, "scipy": False}


def test_config_and_status_import_no_numba(folder):
    """`config` reads the spec and checks the budget (pandas and scipy), `status` the
    config; neither loads the kernels."""
    names = list(load_dataset("nltcs")[1].names)
    config = ["config", "--spec", "spec.json", "--party", f"A={','.join(names[:4])}",
              "--party", f"B={','.join(names[4:])}", "--epsilon", "1", "--delta", "1e-6",
              "--max-rows", "1024", "--out", "c2.json"]  # fmt: skip
    assert not _loaded(folder, *config)["numba"]
    assert (folder / "c2.json").exists()
    status = ["status", "--server", "https://127.0.0.1:9", "--config", "config.json",
              "--keys", "B/B.key"]  # fmt: skip
    assert not _loaded(folder, *status)["numba"]


def test_the_protocol_imports_neither_pandas_nor_numba():
    """Every module of ``vertimrf.protocol``, imported in a fresh interpreter, loads neither
    pandas nor Numba: what every role agrees on is light to import."""
    probe = (
        "import importlib, json, pkgutil, sys\n"
        "import vertimrf.protocol as protocol\n"
        "for m in pkgutil.iter_modules(protocol.__path__):\n"
        "    importlib.import_module(f'vertimrf.protocol.{m.name}')\n"
        "print(json.dumps({m: m in sys.modules for m in ('numba', 'pandas')}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(proc.stdout) == {"numba": False, "pandas": False}
