"""``simulate``: every party and the server in one process, for research and tests."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, DomainError
from vertimrf.vertical.config import ProtocolConfig
from vertimrf.vertical.message import PartyMessage
from vertimrf.vertical.party import Party
from vertimrf.vertical.report import ProtocolReport
from vertimrf.vertical.server import Server

_ID = "__record_id__"


def simulate(
    df: pd.DataFrame,
    spec: DomainSpec,
    parties: list[list[str]],
    epsilon: float,
    delta: float,
    method: str = "fo",
    seed: int | None = None,
    *,
    allow_non_dp: bool = False,
    preset: str = "default",
    progress: bool = False,
    server_iters: int = 100,
    local_options: dict[str, Any] | None = None,
    message_dir: str | os.PathLike | None = None,
    **config: Any,
) -> tuple[pd.DataFrame, ProtocolReport]:
    """Split ``df`` by ``parties`` (lists of column names), run the protocol, and return the
    synthetic frame and the report. ``**config`` overrides ProtocolConfig fields.

    Rows are linked by their position (the record ID is the row number). ``seed`` fixes the
    shared secret, the run nonce and all noise (experiments only: the report then says the
    noise is not for release); None draws the noise from a cryptographically secure sampler.
    ``method="fm"`` is NOT differentially private and needs ``allow_non_dp=True``.
    ``t="auto"`` needs ``max_rows``, a public upper bound on the record count. With
    ``message_dir`` the messages go through files there (saved, then loaded by the server)
    and their sizes are reported.
    """
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"df must be a pandas DataFrame; got {type(df).__name__}.")
    if not isinstance(parties, list | tuple) or not all(
        isinstance(p, list | tuple) for p in parties
    ):
        raise ConfigError("parties must be a list of column-name lists, one per party.")
    rng = np.random.default_rng(seed)
    if seed is not None:
        config.setdefault("run_nonce", rng.bytes(16).hex())
    cfg = ProtocolConfig.from_preset(
        preset,
        epsilon=epsilon,
        delta=delta,
        spec=spec,
        parties=[list(p) for p in parties],
        method=method,
        allow_non_dp=allow_non_dp,
        **config,
    )
    secret = rng.bytes(32) if seed is not None else os.urandom(32)
    seeds = (
        rng.integers(0, 2**63, len(cfg.parties) + 1)
        if seed is not None
        else [None] * (len(cfg.parties) + 1)
    )
    frame = df.reset_index(drop=True).assign(**{_ID: np.arange(len(df))})

    def make(p, config: ProtocolConfig, s) -> Party:
        return Party(
            p.name,
            frame[[_ID, *p.columns]],
            config,
            secret,
            id_column=_ID,
            seed=s,
            progress=progress,
            local_options=local_options,
        )

    members = [make(p, cfg, s) for p, s in zip(cfg.parties, seeds[:-1], strict=True)]
    (count_party,) = [m for m in members if m.name == cfg.count_party]
    n_hat = count_party.release_count()
    messages = [m.encode(noisy_count=n_hat) for m in members]
    sizes = {}
    if message_dir is not None:
        paths = [Path(message_dir) / f"{m.party}.vmrf" for m in messages]
        for m, path in zip(messages, paths, strict=True):
            m.save(path)
            sizes[m.party] = path.stat().st_size
        messages = [PartyMessage.load(path) for path in paths]
    synth, report = Server(cfg, iters=server_iters, progress=progress).synthesize(
        messages, seed=seeds[-1]
    )
    report.message_bytes.update(sizes)
    for m in members:
        for phase, s in m.timings.items():
            report.seconds[f"{m.name} {phase}"] = s
    return synth, report
