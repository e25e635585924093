"""Small tables and messages shared by the vertical-protocol tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from vertimrf.datasets import load_dataset
from vertimrf.party import LocalParty as Party
from vertimrf.protocol import ProtocolConfig, from_preset

ROOT = Path(__file__).resolve().parent.parent  # the repository
SECRET = bytes(range(32))
# A Dask scheduler's HTTP server on a free port: two test workers' clusters never collide.
DASHBOARD = "127.0.0.1:0"
T_SMALL = 256
NONCE = "5eed" * 8  # a fixed run nonce, so that two configs of one test are the same run


def small_adult(n: int = 3000, cols: int = 8) -> tuple[pd.DataFrame, object]:
    """The first ``n`` rows and ``cols`` columns of bundled Adult (some domains > 4, binned)."""
    df, spec = load_dataset("adult")
    names = list(spec.names)[:cols]
    return df[names].iloc[:n].reset_index(drop=True), spec.subset(names)


def onehot_columns(
    rng: np.random.Generator, sizes: list[int], rows: int, *, absent: bool = False
) -> np.ndarray:
    """Rows of one uniform value an attribute (-1, absent, too where ``absent``), as one-hot
    column numbers at the attributes' offsets (rows x attributes; -1 stays -1)."""
    offsets = np.cumsum([0, *sizes[:-1]])
    values = [rng.integers(-1 if absent else 0, s, rows) for s in sizes]
    return np.stack([np.where(v >= 0, v + o, -1) for v, o in zip(values, offsets, strict=True)], 1)


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
    kw.setdefault("record_sets", "equal")
    kw.setdefault("allow_non_dp", method == "fm")
    t = kw.pop("t", T_SMALL)
    if method == "fm":  # the sketch repetitions: a setting of FM alone
        kw["t"] = t
    return from_preset(
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
