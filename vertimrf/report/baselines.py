"""MST and AIM as report baselines: each run in a child process killed at a
time cap; design notes in docs/design/report.md."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.report import run_store
from vertimrf.report.opendp_mechanisms import CONFIGURATIONS

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec

LABELS = {"mst": "MST (OpenDP)", "aim": "AIM (OpenDP)"}
NOT_RUN = "not run"
"""The status of a run missing from the store when only stored runs were asked for."""


@dataclass(frozen=True)
class CappedRun:
    """A baseline's synthetic table (None unless it finished), its status ("finished",
    "timed out", "failed: " and the last line the child wrote, or :data:`NOT_RUN`), its
    seconds, and whether it was read from a run store rather than run."""

    synth: pd.DataFrame | None
    status: str
    seconds: float
    reused: bool = False


def run_capped(
    method: str,
    df: pd.DataFrame,
    spec: DomainSpec,
    epsilon: float,
    delta: float,
    seed: int,
    cap: float,
    cache: str | None = None,
    store: str | os.PathLike[str] | None = None,
    *,
    run_missing: bool = True,
) -> CappedRun:
    """``method`` ("mst" or "aim") on ``df`` encoded by ``spec`` at (``epsilon``,
    ``delta``), decoded like our methods' tables with generators seeded by ``seed`` (OpenDP's
    noise itself is not seeded); the child is killed after ``cap`` seconds. ``cache``: a
    folder for JAX's compilation cache, shared by the runs given it. ``store``: a folder of
    runs (:mod:`vertimrf.report.run_store`): a run it holds that finished within ``cap``, or
    that timed out at a cap of at least ``cap``, is returned without running (one that
    finished but took longer than ``cap`` as timed out at ``cap``); a finished or timed-out run
    is added to it (a failed one is not). ``run_missing=False``: only read the store; a run it
    does not hold is :data:`NOT_RUN` (no synthetic table, 0 seconds)."""
    if not run_missing and store is None:
        raise ConfigError("Only stored runs were asked for, but no store was given; give one.")
    encoder = TableEncoder(spec)
    codes = encoder.encode(df[list(spec.names)])
    sizes = [int(s) for s in spec.domain.sizes]
    rho = epsilon_to_rho(epsilon, delta)
    if store is not None:
        opendp = run_store.opendp_version()
        configuration = CONFIGURATIONS.get(method, "unknown")
        key = run_store.run_key(codes, sizes, f"{method}: {configuration}", rho, seed, opendp)
        stored = run_store.find(store, key, cap)
        if stored is not None:
            synth = None if stored.codes is None else _decode(encoder, stored.codes, seed)
            return CappedRun(synth, stored.status, stored.seconds, reused=True)
        if not run_missing:
            return CappedRun(None, NOT_RUN, 0.0)
    status, seconds, synth_codes = _run_child(method, codes, sizes, rho, seed, cap, cache)
    if store is not None and status in run_store.STATUSES:
        record: dict[str, object] = {"method": method, "configuration": configuration}
        record |= {"epsilon": float(epsilon), "delta": float(delta)}
        record |= {"rho": rho, "seed": int(seed), "cap": float(cap)}
        record |= {"status": status, "seconds": seconds}
        run_store.save(store, key, record | {"opendp": opendp}, synth_codes)
    synth = None if synth_codes is None else _decode(encoder, synth_codes, seed)
    return CappedRun(synth, status, seconds)


def _decode(encoder: TableEncoder, codes: np.ndarray, seed: int) -> pd.DataFrame:
    """The synthetic codes as a table, numeric bins drawn by a generator seeded by ``seed``."""
    return encoder.decode(codes, np.random.default_rng(seed))


def _run_child(
    method: str,
    codes: np.ndarray,
    sizes: list[int],
    rho: float,
    seed: int,
    cap: float,
    cache: str | None,
) -> tuple[str, float, np.ndarray | None]:
    """Run ``method`` in a child process killed after ``cap`` seconds: its status, seconds
    and synthetic codes (None unless it finished)."""
    with tempfile.TemporaryDirectory() as folder:
        np.save(os.path.join(folder, "codes.npy"), codes, allow_pickle=False)
        np.save(os.path.join(folder, "sizes.npy"), np.asarray(sizes, dtype=np.int64))
        command = [sys.executable, "-m", "vertimrf.report.opendp_mechanisms", folder, method]
        command += [repr(rho), str(seed)]
        start = time.perf_counter()
        try:
            subprocess.run(
                command, check=True, timeout=cap, capture_output=True, env=_environment(cache)
            )
        except subprocess.TimeoutExpired:
            return "timed out", time.perf_counter() - start, None
        except subprocess.CalledProcessError as error:  # one failed run does not stop a report
            lines = error.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"]
            reason = lines[-1].strip()[:200]
            return f"failed: {reason}", time.perf_counter() - start, None
        seconds = time.perf_counter() - start
        return "finished", seconds, np.load(os.path.join(folder, "synth.npy"), allow_pickle=False)


def _environment(cache: str | None) -> dict[str, str]:
    """This process's environment, with JAX's persistent compilation cache in ``cache`` (every
    compiled program kept, however small or quick) when given."""
    env = dict(os.environ)
    if cache is not None:
        env["JAX_COMPILATION_CACHE_DIR"] = cache
        env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
        env["JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"] = "0"
    return env
