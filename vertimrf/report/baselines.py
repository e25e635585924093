"""MST and AIM (OpenDP's ``extras.mbi``) as report baselines: each run in a child process that is
killed at a time cap, so one slow run cannot stall the report.

About half of a run's time is JAX compiling mbi's inference for each new marginal shape. Runs that
share a ``cache`` folder share JAX's persistent compilation cache, so a run after the first
on the same table compiles little (AIM on Adult at epsilon 1.6 with 100 iterations a fit: 126
s against 239 s, 2 cores). The cache holds compiled code only, no data."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vertimrf.domain import TableEncoder
from vertimrf.privacy.zcdp import epsilon_to_rho

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec

LABELS = {"mst": "MST (OpenDP)", "aim": "AIM (OpenDP)"}


@dataclass(frozen=True)
class CappedRun:
    """A baseline's synthetic table (None unless it finished), its status ("finished",
    "timed out" or "failed: " and the last line the child wrote) and its seconds."""

    synth: pd.DataFrame | None
    status: str
    seconds: float


def run_capped(
    method: str,
    df: pd.DataFrame,
    spec: DomainSpec,
    epsilon: float,
    delta: float,
    seed: int,
    cap: float,
    cache: str | None = None,
) -> CappedRun:
    """``method`` ("mst" or "aim") on ``df`` encoded by ``spec`` at (``epsilon``,
    ``delta``), decoded like our methods' tables with generators seeded by ``seed`` (OpenDP's
    noise itself is not seeded); the child is killed after ``cap`` seconds. ``cache``: a
    folder for JAX's compilation cache, shared by the runs given it."""
    encoder = TableEncoder(spec)
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "codes.npy"), encoder.encode(df[list(spec.names)]))
        np.save(os.path.join(folder, "sizes.npy"), np.asarray(spec.domain.sizes, dtype=np.int64))
        rho = epsilon_to_rho(epsilon, delta)
        command = [sys.executable, "-m", "vertimrf.report.opendp_mechanisms", folder, method]
        command += [repr(rho), str(seed)]
        start = time.perf_counter()
        try:
            subprocess.run(
                command, check=True, timeout=cap, capture_output=True, env=_environment(cache)
            )
        except subprocess.TimeoutExpired:
            return CappedRun(None, "timed out", time.perf_counter() - start)
        except subprocess.CalledProcessError as error:  # one failed run does not stop a report
            lines = error.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"]
            reason = lines[-1].strip()[:200]
            return CappedRun(None, f"failed: {reason}", time.perf_counter() - start)
        seconds = time.perf_counter() - start
        codes = np.load(os.path.join(folder, "synth.npy"), allow_pickle=False)
    rng = np.random.default_rng(seed)
    return CappedRun(encoder.decode(codes, rng), "finished", seconds)


def _environment(cache: str | None) -> dict[str, str]:
    """This process's environment, with JAX's persistent compilation cache in ``cache`` (every
    compiled program kept, however small or quick) when given."""
    env = dict(os.environ)
    if cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
        env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    return env
