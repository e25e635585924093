"""MST and AIM (OpenDP's ``extras.mbi``) as report baselines: each run in a child process that is
killed at a time cap, so one slow run cannot stall the report."""

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

LABELS = {"mst": "MST (OpenDP)", "aim": "AIM (OpenDP, 100 iterations a fit)"}


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
) -> CappedRun:
    """``method`` ("mst" or "aim") on ``df`` encoded by ``spec`` at (``epsilon``,
    ``delta``), decoded like our methods' tables with generators seeded by ``seed`` (OpenDP's
    noise itself is not seeded); the child is killed after ``cap`` seconds."""
    encoder = TableEncoder(spec)
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "codes.npy"), encoder.encode(df[list(spec.names)]))
        np.save(os.path.join(folder, "sizes.npy"), np.asarray(spec.domain.sizes, dtype=np.int64))
        rho = epsilon_to_rho(epsilon, delta)
        command = [sys.executable, "-m", "vertimrf.report.opendp_mechanisms", folder, method]
        command += [repr(rho), str(seed)]
        start = time.perf_counter()
        try:
            subprocess.run(command, check=True, timeout=cap, capture_output=True)
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
