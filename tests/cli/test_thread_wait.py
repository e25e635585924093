"""The ``vertimrf`` program lets its idle kernel threads sleep (OMP_WAIT_POLICY=passive) unless
the user's environment says otherwise; calling :func:`vertimrf.cli.main` in a process leaves
that process's environment alone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# The child replaces main (the command itself is not what is tested) and prints the policy
# that command() left in its environment.
CHILD = (
    "import os, vertimrf.cli.app as app; "
    "app.main = lambda: print(os.environ.get('OMP_WAIT_POLICY')) or 0; "
    "raise SystemExit(app.command())"
)


@pytest.mark.parametrize(("given", "seen"), [(None, "passive"), ("active", "active")])
def test_the_program_sleeps_idle_threads_unless_the_user_says(given, seen):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given is not None:
        env["OMP_WAIT_POLICY"] = given
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == seen


def test_main_in_process_leaves_the_environment_alone(monkeypatch, capsys):
    from vertimrf.cli import main

    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "OMP_WAIT_POLICY" not in os.environ


def test_python_m_vertimrf_runs_the_program():
    """``python -m vertimrf`` goes through command(), like the installed script."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = CHILD.replace("raise SystemExit(app.command())", "")
    code += "import runpy; runpy.run_module('vertimrf', run_name='__main__')"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "passive"
