"""``fit_vertical`` and ``simulate``: every party and the server in one process.

``fit_vertical`` returns the fitted :class:`~vertimrf.vertical_model.VerticalModel`;
``simulate`` is ``fit_vertical`` followed by one sample of n_hat rows.

It runs the same path as the separate roles (``vertimrf party release`` per party, then
``vertimrf server synthesize``): messages go through files, every role derives its seed
from (run seed, role name), so ``simulate(df, config=cfg, seed=s, secret=b)`` writes the
same synthetic table, byte for byte, as the command-line roles run with ``--seed s`` and the
secret ``b``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, DomainError
from vertimrf.logs import progress_bar
from vertimrf.party import LocalParty as Party
from vertimrf.party.secure import Blob, SecureParty
from vertimrf.protocol import PartyMessage, ProtocolConfig, ProtocolReport
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure import SecurePlan
from vertimrf.protocol.securemsg import SecureRelease, load_request, save_request
from vertimrf.protocol.seeds import SERVER, role_seed, seeded_nonce, seeded_secret
from vertimrf.server import PaperServer as Server
from vertimrf.server.secure import SecureServer
from vertimrf.vertical_model import VerticalModel

ID_COLUMN = "__record_id__"
# The public bound on the record count that method "secure" pads to when the caller gives
# none: every bundled data set fits, and it sets every message's size, so it must not be
# read off the data (a table with more rows needs an explicit, larger max_rows).
DEFAULT_MAX_ROWS = 1 << 16
# The phases of method "secure" (the select pipeline), each timed in the report.
SECURE_PHASES = ("deal", "features", "release", "select", "measure", "fit")
# The server's phases in the other methods (see Server.fit).
SERVER_PHASES = ("receive", "graphcom", "initmrf", "optmrf")


def fit_vertical(
    df: pd.DataFrame,
    spec: DomainSpec | None = None,
    parties: list[list[str]] | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "secure",
    seed: int | None = None,
    *,
    config: ProtocolConfig | None = None,
    secret: bytes | None = None,
    allow_non_dp: bool = False,
    preset: str = "default",
    progress: bool = False,
    message_dir: str | os.PathLike | None = None,
    **fields: Any,
) -> VerticalModel:
    """Run the protocol on ``df`` split by columns; return the fitted :class:`VerticalModel`.

    Give either ``config`` (a :class:`ProtocolConfig`, e.g. one written by ``vertimrf
    config``) or the pieces to build one: ``spec``, ``parties`` (lists of column names),
    ``epsilon``, ``delta``, ``method``, ``preset`` and ``**fields`` (ProtocolConfig fields).
    ``method="fm"`` is NOT differentially private and needs ``allow_non_dp=True``;
    ``t="auto"`` needs a public ``max_rows``. Method "secure" pads every party's rows to
    ``max_rows``, a public bound (never read off the data): give it, or the default
    :data:`DEFAULT_MAX_ROWS` applies. ``delta`` is public too (e.g. 1e-6), never derived from
    the row count.

    Rows are linked by position (the record ID is the row number). ``seed`` is the run seed
    (experiments only: the report then says the noise is not for release); without
    ``secret`` it also fixes the shared secret and, when the config is built here, the run
    nonce. With ``seed=None`` the noise comes from a cryptographically secure sampler.
    Every message (deals, feature blobs, releases, the request) goes through files in
    ``message_dir`` (a temporary folder by default), and their sizes are reported.
    ``progress`` shows a progress bar. The report's ``seconds`` holds each phase's time.

    The model's :meth:`~VerticalModel.sample` then draws any number of rows at no privacy
    cost; without a seed it continues the run's stream, so a seeded ``fit_vertical`` then
    ``sample()`` gives the rows :func:`simulate` gives.
    """
    if not isinstance(df, pd.DataFrame):
        raise DomainError(f"df must be a pandas DataFrame; got {type(df).__name__}.")
    if config is not None and (spec, parties, epsilon, delta) != (None, None, None, None):
        raise ConfigError("give either config=... or spec, parties, epsilon and delta, not both.")
    cfg = (
        config
        if config is not None
        else _build_config(
            spec, parties, epsilon, delta, method, seed, allow_non_dp, preset, fields
        )
    )
    if not isinstance(cfg, ProtocolConfig):
        raise ConfigError(f"config must be a ProtocolConfig; got {type(cfg).__name__}.")
    if secret is None:
        secret = seeded_secret(seed) if seed is not None else os.urandom(32)
    frame = df.reset_index(drop=True).assign(**{ID_COLUMN: np.arange(len(df))})
    with _folder(message_dir) as folder:
        kind = rules(cfg)
        if kind.selects:
            with _Phases(SECURE_PHASES, progress) as phases:
                return _fit_secure(frame, cfg, secret, seed, folder, phases)
        secure = ("deal", "features", "cross release") if kind.secure_product else ()
        with _Phases(("release", *secure, *SERVER_PHASES), progress) as phases:
            return _fit_messages(frame, cfg, secret, seed, folder, phases, progress)


def simulate(
    df: pd.DataFrame,
    spec: DomainSpec | None = None,
    parties: list[list[str]] | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    method: str = "secure",
    seed: int | None = None,
    *,
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
    :func:`fit_vertical`."""
    fitted = fit_vertical(
        df, spec, parties, epsilon, delta, method, seed, config=config, secret=secret,
        allow_non_dp=allow_non_dp, preset=preset, progress=progress, message_dir=message_dir,
        **fields,
    )  # fmt: skip
    start = time.perf_counter()
    synth = fitted.sample()
    seconds = {**fitted.report.seconds, "sample": time.perf_counter() - start}
    return synth, dataclasses.replace(fitted.report, seconds=seconds)


def _fit_messages(
    frame: pd.DataFrame,
    cfg: ProtocolConfig,
    secret: bytes,
    seed: int | None,
    folder: Path,
    phases: _Phases,
    progress: bool,
) -> VerticalModel:
    """Methods "fo", "fm" and the secure paper pipeline: every party's message, the paper
    pipeline's secure cross release, and the server's fit."""
    members = [
        Party(p.name, frame[[ID_COLUMN, *p.columns]], cfg, secret, id_column=ID_COLUMN,
              seed=seed, progress=progress)
        for p in cfg.parties
    ]  # fmt: skip
    messages, sizes = _exchange(members, cfg, folder)
    phases.lap("release")
    releases = None
    if rules(cfg).secure_product:  # the secure paper pipeline's cross release
        bins = {m.party: m.bins for m in messages}
        parties, server, inbox, blob_bytes = _secure_setup(
            frame, cfg, secret, seed, folder, phases, bins
        )
        made = {n: m.release(inbox[n]) for n, m in parties.items()}
        releases = _post(folder, "cross", made, server.plan, blob_bytes)
        phases.lap("cross release")
        sizes = {n: sizes[n] + blob_bytes[n] for n in sizes}
    model, report = Server(cfg, progress=progress, keypair=KeyPair.generate(SERVER)).fit(
        messages, seed=seed, callback=phases.tick, secure_releases=releases
    )
    party_seconds = {f"{m.name} {phase}": s for m in members for phase, s in m.timings.items()}
    report = dataclasses.replace(
        report,
        seconds={**phases.seconds, **party_seconds, **report.seconds},
        message_bytes=sizes,
    )
    rng = np.random.default_rng(None if seed is None else role_seed(seed, SERVER))
    return VerticalModel(model, cfg.spec, report, rng=rng)


def _fit_secure(
    frame: pd.DataFrame,
    cfg: ProtocolConfig,
    secret: bytes,
    seed: int | None,
    folder: Path,
    phases: _Phases,
) -> VerticalModel:
    """method="secure": deal, feature exchange, first release, selection, re-measurement and
    the fit; every message passes through files in ``folder``, as between the roles."""
    members, server, inbox, sizes = _secure_setup(frame, cfg, secret, seed, folder, phases)
    made = {n: m.release(inbox[n]) for n, m in members.items()}
    first = _post(folder, "select", made, server.plan, sizes)
    phases.lap("release")
    request = server.select(first)
    path = folder / "request.json"
    save_request(path, cfg.config_hash(), request)
    request = load_request(path, server.plan, cfg.config_hash())
    phases.lap("select")
    made = {n: m.measure(request) for n, m in members.items()}
    second = _post(folder, "measure", made, server.plan, sizes)
    phases.lap("measure")
    rng = server.fit(second)
    phases.lap("fit")
    report = server.report(seconds=dict(phases.seconds), message_bytes=sizes)
    return VerticalModel(server.model, cfg.spec, report, rng=rng)


def _secure_setup(
    frame: pd.DataFrame,
    cfg: ProtocolConfig,
    secret: bytes,
    seed: int | None,
    folder: Path,
    phases: _Phases,
    bins: dict[str, Any] | None = None,
) -> tuple[dict[str, SecureParty], SecureServer, dict[str, dict[str, Blob]], dict[str, int]]:
    """Keys, the parties' SecureParty objects, the deal and the feature exchange (through
    files in ``folder``): the parties, the server, each party's inbox of blobs and its bytes
    sent."""
    keys = {p.name: KeyPair.generate(p.name) for p in cfg.parties}
    public = {name: k.public() for name, k in keys.items()}
    members = {
        p.name: SecureParty(
            p.name, frame[[ID_COLUMN, *p.columns]], cfg, secret, keys[p.name],
            {q: k for q, k in public.items() if q != p.name}, id_column=ID_COLUMN, seed=seed,
            bins=None if bins is None else bins[p.name],
        )
        for p in cfg.parties
    }  # fmt: skip
    server = SecureServer(cfg, seed=seed, keypair=KeyPair.generate(SERVER))
    deals = _through_files(
        {folder / f"{name}.deal": deal for name, deal in server.deal(public).items()}
    )
    phases.lap("deal")
    sizes: dict[str, int] = {}
    inbox: dict[str, dict[str, Blob]] = {n: {} for n in members}
    for name, member in members.items():
        blobs = member.features(deals[folder / f"{name}.deal"])
        sizes[name] = sum(len(b) for b in blobs.values())
        sent = _through_files(
            {folder / f"{name}-to-{q}.blob": b for q, b in blobs.items()}, bytearray
        )
        for q in blobs:
            inbox[q][name] = sent[folder / f"{name}-to-{q}.blob"]
    phases.lap("features")
    return members, server, inbox, sizes


def _through_files(
    messages: Mapping[Path, bytes | bytearray], kind: type = bytes
) -> dict[Path, Any]:
    """Each message written to its file and read back as ``kind`` (feature blobs as a
    bytearray: they are decrypted in place)."""
    for path, data in messages.items():
        path.write_bytes(data)
    return {path: kind(path.read_bytes()) for path in messages}


def _post(
    folder: Path, step: str, made: dict[str, SecureRelease], plan: SecurePlan, sizes: dict[str, int]
) -> list[SecureRelease]:
    """Releases through files, as between the roles; adds each file's size to ``sizes``."""
    paths = {n: folder / f"{n}.{step}.vmrf" for n in made}
    for n, release in made.items():
        release.save(paths[n])
        sizes[n] += paths[n].stat().st_size
    return [SecureRelease.load(path, plan) for path in paths.values()]


def _exchange(
    members: list[Party], cfg: ProtocolConfig, folder: Path
) -> tuple[list[PartyMessage], dict[str, int]]:
    """The count party releases its count, every party releases its message, and the messages go
    through files in ``folder`` to the server; their sizes."""
    (count_party,) = [m for m in members if m.name == cfg.count_party]
    n_hat = count_party.release_count()
    paths = {}
    for member in members:
        paths[member.name] = folder / f"{member.name}.vmrf"
        member.release(noisy_count=n_hat).save(paths[member.name])
    sizes = {name: path.stat().st_size for name, path in paths.items()}
    return [PartyMessage.load(path, cfg) for path in paths.values()], sizes


@contextlib.contextmanager
def _folder(message_dir: str | os.PathLike | None) -> Iterator[Path]:
    """``message_dir``, or a temporary folder removed afterwards."""
    if message_dir is not None:
        yield Path(message_dir)
        return
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


class _Phases:
    """The seconds of each phase of a run, and a progress bar over them when asked for."""

    def __init__(self, names: Sequence[str], progress: bool) -> None:
        self.seconds: dict[str, float] = {}
        self._bar = progress_bar(total=len(names), desc="vertimrf fit", progress=progress)
        self._clock = time.perf_counter()

    def lap(self, phase: str) -> None:
        """Record the time since the last lap as ``phase``'s."""
        now = time.perf_counter()
        self.seconds[phase] = now - self._clock
        self._clock = now
        self.tick(phase)

    def tick(self, phase: str, seconds: float | None = None) -> None:
        """Advance the progress bar past ``phase`` (timed elsewhere when ``seconds`` is given)."""
        self._bar.set_postfix_str(phase, refresh=False)
        self._bar.update()

    def __enter__(self) -> _Phases:
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.close()


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
) -> ProtocolConfig:
    if spec is None or parties is None or epsilon is None or delta is None:
        raise ConfigError("give config=..., or spec, parties, epsilon and delta to build one.")
    if not isinstance(parties, list | tuple) or not all(
        isinstance(p, list | tuple) for p in parties
    ):
        raise ConfigError("parties must be a list of column-name lists, one per party.")
    if seed is not None:
        fields.setdefault("run_nonce", seeded_nonce(seed))
    if method == "secure" and fields.get("max_rows") is None:
        fields["max_rows"] = DEFAULT_MAX_ROWS  # public: never read off the data
    return ProtocolConfig.from_preset(
        preset,
        epsilon=epsilon,
        delta=delta,
        spec=spec,
        parties=[list(p) for p in parties],
        method=method,
        allow_non_dp=allow_non_dp,
        **fields,
    )
