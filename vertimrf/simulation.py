"""``fit_vertical`` and ``simulate``: every party and the server in one
process; design notes in docs/design/core.md."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.errors import ConfigError, DomainError, PrivacyBudgetError
from vertimrf.protocol import ProtocolConfig, ProtocolReport
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.methods import rules_of
from vertimrf.protocol.plan import check_plan
from vertimrf.protocol.seeds import seeded_nonce, seeded_secret
from vertimrf.synth.dtypes import column_dtypes
from vertimrf.vertical_model import VerticalModel

ID_COLUMN = "__record_id__"
# The public bound on the record count that method "secure" pads to when the caller gives
# none: every bundled data set fits, and it sets every message's size, so it must not be
# read off the data (a table with more rows needs an explicit, larger max_rows).
DEFAULT_MAX_ROWS = 1 << 16


class _SpentRuns:
    """The runs fitted unseeded in this process, by config hash: a second unseeded fit of
    the same run would draw fresh noise under one config (fresh role keys), so two releases
    charged as one; it is refused instead (a new run: ``config.new_run()``)."""

    def __init__(self) -> None:
        self._hashes: set[str] = set()
        self._lock = threading.Lock()

    def check(self, cfg: ProtocolConfig) -> None:
        with self._lock:
            if cfg.config_hash() in self._hashes:
                raise PrivacyBudgetError(
                    "this config's run was already fitted in this process and spent its "
                    "budget; a run spends it once: fit with config.new_run() (a new run, which "
                    "spends a new budget), or give a seed for a reproducible experiment."
                )

    def add(self, cfg: ProtocolConfig) -> None:
        with self._lock:
            self._hashes.add(cfg.config_hash())


_SPENT = _SpentRuns()


def fit_vertical(
    df: pd.DataFrame | Mapping[str, pd.DataFrame],
    spec: DomainSpec | None = None,
    parties: list[list[str]] | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "secure",
    seed: int | None = None,
    *,
    id_column: str | None = None,
    config: ProtocolConfig | None = None,
    secret: bytes | None = None,
    allow_non_dp: bool = False,
    preset: str = "default",
    progress: bool = False,
    message_dir: str | os.PathLike | None = None,
    **fields: Any,
) -> VerticalModel:
    """Run the protocol on ``df`` split by columns, or on one frame per party; return the
    fitted :class:`VerticalModel`, whose samples take the frames' dtypes.

    ``df`` is one frame (``parties`` then lists each party's columns), or a dict of party
    name to that party's frame: its columns and the record-ID column ``id_column``, which
    links the parties' records (``parties`` then comes from the frames). A party may hold
    records the others do not: a config built here then has ``record_sets="partial"``
    (declared, never read off the IDs) unless the method needs equal sets or
    ``record_sets="equal"`` is given.

    Give either ``config`` (a :class:`ProtocolConfig`, e.g. one written by ``vertimrf
    config``) or the pieces to build one: ``spec``, ``parties`` (lists of column names),
    ``epsilon``, ``delta``, ``method``, ``preset`` and ``**fields`` (ProtocolConfig fields).
    ``method="fm"`` is NOT differentially private and needs ``allow_non_dp=True``;
    ``t="auto"`` needs a public ``max_rows``. Method "secure" pads every party's rows to
    ``max_rows``, a public bound (never read off the data): give it, or the default
    :data:`DEFAULT_MAX_ROWS` applies. ``delta`` is public too (e.g. 1e-6), never derived from
    the row count.

    One frame's rows are linked by position (the record ID is the row number). ``seed`` is
    the run seed (experiments only: the report then says the noise is not for release);
    without ``secret`` it also fixes the shared secret and, when the config is built here,
    the run nonce. With ``seed=None`` the noise comes from a cryptographically secure sampler.
    Every message (deals, feature blobs, releases, the request) goes through the roles'
    drivers, in memory or, with ``message_dir``, through files in its folders (the
    directory transport: ``message_dir/<receiver>/<sender>.<kind>``, a party's large blobs
    streamed through a temporary state folder, never whole in memory); the bytes each party
    sends are reported.
    ``progress`` shows a progress bar. The report's ``seconds`` holds each phase's time.
    One frame gives every party every record, so a config built here has
    ``record_sets="equal"`` unless ``record_sets="partial"`` is given.

    Each run spends its budget: a config (its run nonce) is one run. Fitted unseeded, it
    cannot be fitted again in the same process (PrivacyBudgetError): fresh role keys would
    draw fresh noise, a second release charged as the first. Use ``config.new_run()`` for a
    new run, which spends a new budget. A seeded run (experiments) reproduces its bytes.

    The model's :meth:`~VerticalModel.sample` then draws any number of rows at no privacy
    cost; without a seed it continues the run's stream, so a seeded ``fit_vertical`` then
    ``sample()`` gives the rows :func:`simulate` gives.
    """
    frames = _party_frames(df, parties, id_column)
    if config is not None and (spec, parties, epsilon, delta) != (None, None, None, None):
        raise ConfigError("give either config=... or spec, parties, epsilon and delta, not both.")
    if config is None:
        named = None
        if frames is not None:
            named = [(n, [str(c) for c in f.columns if c != id_column]) for n, f in frames.items()]
            partial = not rules_of(method, fields.get("secure_pipeline")).equal_sets_only
            fields.setdefault("record_sets", "partial" if partial else "equal")
        cfg = _build_config(
            spec, parties, epsilon, delta, method, seed, allow_non_dp, preset, fields, named
        )
    else:
        cfg = config
    if not isinstance(cfg, ProtocolConfig):
        raise ConfigError(f"config must be a ProtocolConfig; got {type(cfg).__name__}.")
    check_plan(cfg)
    if secret is None:
        secret = seeded_secret(seed) if seed is not None else os.urandom(32)
    if frames is None:
        assert isinstance(df, pd.DataFrame)
        frame = df.reset_index(drop=True).assign(**{ID_COLUMN: np.arange(len(df))})
        data = {p.name: frame[[ID_COLUMN, *p.columns]] for p in cfg.parties}
        id_column = ID_COLUMN
    else:
        names = [p.name for p in cfg.parties]
        if sorted(frames) != sorted(names):
            raise ConfigError(
                f"the frames are those of parties {sorted(frames)}, the config's parties are "
                f"{names}; give one frame per party of the config, keyed by its name."
            )
        data = dict(frames)
    assert id_column is not None
    dtypes = {k: v for f in data.values() for k, v in column_dtypes(f, cfg.spec).items()}
    model = _fit(data, id_column, cfg, secret, seed, message_dir, progress)
    return model.with_dtypes(dtypes)


def simulate(
    df: pd.DataFrame | Mapping[str, pd.DataFrame],
    spec: DomainSpec | None = None,
    parties: list[list[str]] | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "secure",
    seed: int | None = None,
    *,
    id_column: str | None = None,
    config: ProtocolConfig | None = None,
    secret: bytes | None = None,
    allow_non_dp: bool = False,
    preset: str = "default",
    progress: bool = False,
    message_dir: str | os.PathLike | None = None,
    **fields: Any,
) -> tuple[pd.DataFrame, ProtocolReport]:
    """:func:`fit_vertical`, then n_hat rows from the model; returns the synthetic frame and
    the report (whose ``seconds`` include the sampling). Same arguments as
    :func:`fit_vertical`; each run spends its budget, so an unseeded config is simulated
    once per process (``config.new_run()`` for another run)."""
    fitted = fit_vertical(
        df, spec, parties, epsilon, delta, method, seed, id_column=id_column, config=config,
        secret=secret, allow_non_dp=allow_non_dp, preset=preset, progress=progress,
        message_dir=message_dir, **fields,
    )  # fmt: skip
    start = time.perf_counter()
    synth = fitted.sample()
    seconds = {**fitted.report.seconds, "sample": time.perf_counter() - start}
    return synth, dataclasses.replace(fitted.report, seconds=seconds)


def _party_frames(
    df: object, parties: object, id_column: str | None
) -> dict[str, pd.DataFrame] | None:
    """The frames of ``df`` by party when it is a dict of them (None for one frame);
    DomainError or ConfigError (one line) for anything else."""
    if isinstance(df, pd.DataFrame):
        if id_column is not None:
            raise ConfigError(
                "id_column links one frame per party; one frame's rows are linked by "
                "position: drop id_column, or give a dict of frames by party."
            )
        return None
    if not isinstance(df, Mapping) or not df:
        raise DomainError(
            f"df must be a pandas DataFrame or a dict of party name to DataFrame; got "
            f"{type(df).__name__}."
        )
    bad = [
        str(n) for n, f in df.items() if not isinstance(n, str) or not isinstance(f, pd.DataFrame)
    ]
    if bad:
        raise DomainError(f"df must map party names (str) to DataFrames; not so for {bad}.")
    if id_column is None:
        raise ConfigError(
            "one frame per party needs the record-ID column that links them: give id_column=..."
        )
    if parties is not None:
        raise ConfigError(
            "with one frame per party each party's columns are its frame's: drop parties."
        )
    return dict(df)


def _fit(
    data: dict[str, pd.DataFrame],
    id_column: str,
    cfg: ProtocolConfig,
    secret: bytes,
    seed: int | None,
    message_dir: str | os.PathLike | None,
    progress: bool,
) -> VerticalModel:
    """Every party's and the server's driver, each party with its frame in ``data`` (its
    columns and ``id_column``), run in this process over one transport (files in
    ``message_dir`` when given: then each party keeps its state in a temporary folder, so a
    large message is written to its kept copy as it is made and sent from it, never held
    whole); the server's fitted model."""
    if seed is None:
        _SPENT.check(cfg)
    kept = (
        contextlib.nullcontext(None)
        if message_dir is None
        else tempfile.TemporaryDirectory(prefix="vertimrf-state-")
    )
    with kept as state:
        run = local_run(
            data, cfg, secret, seed=seed, id_column=id_column, message_dir=message_dir,
            state_dir=state, progress=progress,
        )  # fmt: skip
        try:
            return run.fitted(run.run(progress=progress))
        finally:
            if seed is None and (message_dir is not None or any(d.done for d in run.parties)):
                _SPENT.add(cfg)  # released: files written, or a party has run a step


def _build_config(
    spec: DomainSpec | None,
    parties: list[list[str]] | None,
    epsilon: float | None,
    delta: float | None,
    method: str,
    seed: int | None,
    allow_non_dp: bool,
    preset: str,
    fields: dict[str, Any],
    named: list[tuple[str, list[str]]] | None = None,
) -> ProtocolConfig:
    """The config of ``fit_vertical``'s pieces; ``named`` are (name, columns) of the
    parties of frames by party, in place of ``parties``."""
    if named is not None:
        if spec is None or epsilon is None or delta is None:
            raise ConfigError("give config=..., or spec, epsilon and delta to build one.")
    elif spec is None or parties is None or epsilon is None or delta is None:
        raise ConfigError("give config=..., or spec, parties, epsilon and delta to build one.")
    elif not isinstance(parties, list | tuple) or not all(
        isinstance(p, list | tuple) for p in parties
    ):
        raise ConfigError("parties must be a list of column-name lists, one per party.")
    if seed is not None:
        fields.setdefault("run_nonce", seeded_nonce(seed))
    fields.setdefault("record_sets", "equal")  # one frame: every party holds every record
    padded = rules_of(method, fields.get("secure_pipeline")).secure_product
    if padded and fields.get("max_rows") is None:
        fields["max_rows"] = DEFAULT_MAX_ROWS  # public: never read off the data
    return from_preset(
        preset,
        epsilon=epsilon,
        delta=delta,
        spec=spec,
        parties=named if named is not None else [list(p) for p in parties or ()],
        method=method,
        allow_non_dp=allow_non_dp,
        **fields,
    )
