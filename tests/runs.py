"""Whole runs, shared by the tests of every transport: a small correlated table and its
two-party config, each role as a ``vertimrf`` process, and the one check that a run wrote
simulate's synthetic CSV byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from vertimrf import simulate
from vertimrf.domain import DomainSpec
from vertimrf.protocol import ProtocolConfig
from vertimrf.protocol.factory import from_preset

SEED = 5
TWO_PARTIES = {"A": ["c0", "c1", "c2"], "B": ["c3", "c4"]}


def correlated_table(rows: int = 300) -> tuple[pd.DataFrame, DomainSpec]:
    """A small correlated table: every column a noisy function of one latent code."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 6, rows)
    sizes = [6, 2, 3, 4, 5]
    df = pd.DataFrame(
        {
            f"c{j}": np.where(rng.random(rows) < 0.7, latent % u, rng.integers(0, u, rows))
            for j, u in enumerate(sizes)
        }
    )
    return df, DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(sizes)})


def two_party_config(spec: DomainSpec, **fields) -> ProtocolConfig:
    """The default method over ``TWO_PARTIES`` (any other ``fields``), a fixed run nonce."""
    return from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(TWO_PARTIES.items()),
        max_rows=512, run_nonce="cd" * 16, **{"record_sets": "equal", **fields},
    )  # fmt: skip


def same_as_simulate(
    got: bytes | Path, df: pd.DataFrame, config: ProtocolConfig, *, seed: int, secret: bytes
) -> tuple[pd.DataFrame, object]:
    """Assert that ``got`` (a synthetic CSV's bytes or path) is simulate's synthetic CSV with
    the same config, seed and secret, byte for byte; simulate's table and report."""
    want, report = simulate(df, config=config, seed=seed, secret=secret)
    data = got.read_bytes() if isinstance(got, Path) else got
    assert data == want.to_csv(index=False).encode(), "not simulate's synthetic CSV"
    return want, report


def role_env(cwd: Path, **extra: str) -> dict[str, str]:
    """A role process's environment: the per-user state folder under ``cwd/xdg``."""
    return {**os.environ, "XDG_STATE_HOME": str(cwd / "xdg"), **extra}


# Every process the running test started (:func:`started`), reaped when it ends
# (tests/conftest.py), so that none outlives it and no pipe is left to the collector.
STARTED: list[subprocess.Popen] = []


def started(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen:
    """``args`` as a process in ``cwd`` with text pipes, reaped when the test ends."""
    proc = subprocess.Popen(
        args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    STARTED.append(proc)
    return proc


def vertimrf_process(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``vertimrf ARGS`` as its own process in ``cwd`` (text pipes; ``env`` added to
    :func:`role_env`)."""
    return started([sys.executable, "-m", "vertimrf", *args], cwd, role_env(cwd, **(env or {})))


def finish(procs: list[subprocess.Popen], seconds: float = 600) -> list[tuple[int, str, str]]:
    """Each process's exit code, stdout and stderr (bounded wait; none is left running)."""
    try:
        outs = [p.communicate(timeout=seconds) for p in procs]
        return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]
    finally:
        for p in procs:
            reap(p)


def reap(proc: subprocess.Popen) -> None:
    """Kill ``proc`` if it still runs, wait for its end and close its pipes (none is left
    to the collector)."""
    proc.kill()
    proc.wait(timeout=60)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def reap_started() -> None:
    """Reap every process the test started."""
    while STARTED:
        reap(STARTED.pop())
