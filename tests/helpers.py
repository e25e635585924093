"""Shared test helpers: small tables, configs and messages, the roles as processes, and the
one check that a run wrote simulate's synthetic CSV byte for byte."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from vertimrf import simulate
from vertimrf.datasets import load_dataset
from vertimrf.domain import DomainSpec
from vertimrf.party import LocalParty as Party
from vertimrf.protocol import ProtocolConfig

ROOT = Path(__file__).resolve().parent.parent  # the repository
SECRET = bytes(range(32))
SEED = 5
TWO_PARTIES = {"A": ["c0", "c1", "c2"], "B": ["c3", "c4"]}
T_SMALL = 256
NONCE = "5eed" * 8  # a fixed run nonce, so that two configs of one test are the same run


def small_adult(n: int = 3000, cols: int = 8) -> tuple[pd.DataFrame, object]:
    """The first ``n`` rows and ``cols`` columns of bundled Adult (some domains > 4, binned)."""
    df, spec = load_dataset("adult")
    names = list(spec.names)[:cols]
    return df[names].iloc[:n].reset_index(drop=True), spec.subset(names)


def string_ids(n: int) -> np.ndarray:
    return np.array([f"person-{i:06d}" for i in range(n)], dtype=object)


def party_frames(df: pd.DataFrame, parties: list[list[str]], seed: int) -> list[pd.DataFrame]:
    """Each party's columns plus string IDs, rows in a different random order per party."""
    ids = string_ids(len(df))
    rng = np.random.default_rng(seed)
    out = []
    for cols in parties:
        order = rng.permutation(len(df))
        frame = df[cols].iloc[order].reset_index(drop=True)
        frame.insert(0, "rid", ids[order])
        out.append(frame)
    return out


def make_config(spec, parties, *, epsilon=1.6, method="fm", **kw) -> ProtocolConfig:
    """A config for tests; FM (NOT DP) is accepted here explicitly with allow_non_dp."""
    kw.setdefault("run_nonce", NONCE)
    kw.setdefault("allow_non_dp", method == "fm")
    t = kw.pop("t", T_SMALL)
    if method == "fm":  # the sketch repetitions: a setting of FM alone
        kw["t"] = t
    return ProtocolConfig.from_preset(
        "default",
        epsilon=epsilon,
        delta=1e-5,
        spec=spec,
        parties=parties,
        method=method,
        **kw,
    )


def release_all(df, spec, parties, *, seed=0, method="fm", secret=SECRET, **kw):
    """Config, parties and messages of a full run (count party first)."""
    cfg = make_config(spec, parties, method=method, **kw)
    frames = party_frames(df, parties, seed)
    members = [
        Party(p.name, f, cfg, secret, id_column="rid", seed=seed, progress=False)
        for p, f in zip(cfg.parties, frames, strict=True)
    ]
    n_hat = members[0].release_count()
    messages = [m.release(noisy_count=n_hat) for m in members]
    return cfg, members, messages


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
    return ProtocolConfig.from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(TWO_PARTIES.items()),
        max_rows=512, run_nonce="cd" * 16, **fields,
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


def vertimrf_process(cwd: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """``vertimrf ARGS`` as its own process in ``cwd`` (text pipes; ``env`` added to
    :func:`role_env`)."""
    return subprocess.Popen(
        [sys.executable, "-m", "vertimrf", *args], cwd=cwd, env=role_env(cwd, **(env or {})),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(procs: list[subprocess.Popen], seconds: float = 600) -> list[tuple[int, str, str]]:
    """Each process's exit code, stdout and stderr (bounded wait; none is left running)."""
    try:
        outs = [p.communicate(timeout=seconds) for p in procs]
        return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]
    finally:
        for p in procs:
            p.kill()


# Every value of the reference table (method analysis section 1.2), delta = 1e-5.
PRIVMRF_TABLE = {
    0.05: 2.99630e-4,
    0.06: 4.17107e-4,
    0.07: 5.52018e-4,
    0.08: 7.03963e-4,
    0.09: 8.72589e-4,
    0.095: 9.63067e-4,
    0.098: 1.01930e-3,
    0.10: 1.05761e-3,
    0.12: 1.47577e-3,
    0.14: 1.95666e-3,
    0.16: 2.49880e-3,
    0.18: 3.10091e-3,
    0.20: 3.76188e-3,
    0.24: 5.25654e-3,
    0.28: 6.97593e-3,
    0.32: 8.91426e-3,
    0.36: 1.10665e-2,
    0.40: 1.34283e-2,
    0.48: 1.87647e-2,
    0.56: 2.48952e-2,
    0.64: 3.17957e-2,
    0.72: 3.94449e-2,
    0.80: 4.78237e-2,
    0.96: 6.67015e-2,
    1.12: 8.83054e-2,
    1.28: 1.12527e-1,
    1.44: 1.39272e-1,
    1.60: 1.68452e-1,
    1.92: 2.33809e-1,
    2.24: 0.30804,
    2.56: 0.39064,
    2.88: 0.48120,
    3.04: 0.52934,
    3.2: 0.57932,
}
