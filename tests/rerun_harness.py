"""The re-run harness: two runs of one config from fresh state and message folders, the
second with one input changed, and what every viewer (the server, each party) receives in
both, compared byte by byte.

The promise it checks: two runs of one config share nothing a viewer receives but public
metadata and, at the server, the commitment of a party whose data and key did not change;
with identical inputs every byte is identical (a deterministic re-run spends nothing new).

Shared bytes (:func:`shared_windows`): every 8-byte window, at every byte offset, of what a
viewer received in either run, once the public values are zeroed and leaving out windows of
low entropy (:func:`high_entropy`); the windows found in both runs, less the allowed ones. A
message is read as the bytes it carries (:func:`carried`): a zip container's members rather
than their compressed form, plus the bytes of every hex run (a commitment or a digest in a
JSON message); a SHA-256 of one of those members (a container's manifest lists them) is
zeroed as well, since it says nothing beyond the member, which is compared itself. Besides,
the server opens each party's tokens message of both runs and counts the tokens they share
(:func:`shared_tokens`): real and dummy tokens alike must be fresh.

``python -m tests.rerun_harness`` runs the matrix and writes the table
(``benchmarks/rerun_harness.py`` calls it so).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import re
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from tests.simulation.test_corrected_record import SECRET, _https_run, fixed_key
from vertimrf import load_dataset
from vertimrf.crypto.identity import make_tls_identity
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.protocol import ProtocolConfig, from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.commit import read_commit
from vertimrf.protocol.secure.tokens import read_tokens
from vertimrf.protocol.seeds import SERVER

RECORDS = 300  # NLTCS records in the table
COLUMNS = 9  # its first columns, split over the parties
HELD = 0.7  # partial record sets: the chance that a party holds a record
NONCE = hashlib.sha256(b"vertimrf/rerun-harness").hexdigest()[:32]
OTHER_SECRET = hashlib.sha256(b"vertimrf/rerun-harness/other-secret").digest()
NOTHING = "nothing"
SMALL = 1 << 40  # a window that is a smaller integer (either byte order) is no secret
PRINTABLE = 6  # a window with at least this many printable ASCII bytes is text
REPEATS = 4  # a window with one byte value this many times is structure, not a secret


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Inputs:
    """Everything a user gives one run: the config, each party's data, every role's key
    pair (the server's under ``SERVER``) and the group secret."""

    config: ProtocolConfig
    data: Mapping[str, pd.DataFrame]
    keys: Mapping[str, KeyPair]
    secret: bytes

    def unchanged(self, other: Inputs) -> list[str]:
        """The parties whose data and key pair are the same in ``other``."""
        return [
            name
            for name, frame in self.data.items()
            if frame.equals(other.data[name]) and _same_key(self.keys[name], other.keys[name])
        ]


def _same_key(one: KeyPair, two: KeyPair) -> bool:
    return one.public_bytes == two.public_bytes and one.tls_certificate == two.tls_certificate


@dataclass(frozen=True)
class Scenario:
    """A run's setting: the record sets (``"equal"`` or ``"partial"``), the number of
    parties, whether its roles hold TLS identities (the HTTPS service; the config then
    pins every role's identity), the cross noise ("split", or "coins" at ``coin_weight``)
    and the product backend."""

    record_sets: str
    parties: int
    tls: bool = False
    cross_noise: str = "split"
    coin_weight: float = 1.0
    product: str = "dealer"

    @property
    def names(self) -> list[str]:
        return [chr(ord("A") + i) for i in range(self.parties)]

    def role_key(self, name: str, *, changed: bool = False) -> KeyPair:
        """Role ``name``'s fixed key pair (another fixed one when ``changed``), with a TLS
        identity made once per scenario (the same in both runs of an unchanged role)."""
        key = dataclasses.replace(fixed_key(f"{name}2" if changed else name), name=name)
        if not self.tls:
            return key
        tls_key, certificate = _tls_identity(self, name, changed)
        return dataclasses.replace(key, tls_key=tls_key, tls_certificate=certificate)

    def base(self) -> Inputs:
        """Run 1's inputs: the first ``RECORDS`` NLTCS records over ``COLUMNS`` columns,
        each party's columns with an ``id`` column (with partial record sets, each party a
        random subset, every record held by someone), the fixed keys and ``SECRET``."""
        table = _table()
        columns = [list(c) for c in np.array_split(table.columns[1:], self.parties)]
        spec = load_dataset("nltcs")[1].subset(list(table.columns[1:]))
        cfg = from_preset(
            "default", record_sets=self.record_sets, epsilon=1.0, delta=1e-6, spec=spec,
            max_rows=512 if self.record_sets == "equal" else 4096, run_nonce=NONCE,
            parties=list(zip(self.names, columns, strict=True)), cross_noise=self.cross_noise,
            coin_weight=self.coin_weight, product=self.product,
        )  # fmt: skip
        held = self._held()
        data = {
            name: table.iloc[:RECORDS][["id", *cols]][held[:, i]].reset_index(drop=True)
            for i, (name, cols) in enumerate(zip(self.names, columns, strict=True))
        }
        keys = {name: self.role_key(name) for name in [*self.names, SERVER]}
        return self._inputs(cfg, data, keys, SECRET)

    def _held(self) -> np.ndarray:
        """Which party holds which of the records (all of them with equal record sets)."""
        shape = (RECORDS, self.parties)
        if self.record_sets == "equal":
            return np.ones(shape, bool)
        held = np.random.default_rng(7).random(shape) < HELD
        held[~held.any(axis=1), 0] = True
        return held

    def _inputs(self, cfg: ProtocolConfig, data, keys, secret: bytes) -> Inputs:
        if self.tls:  # the config pins every role's identity
            cfg = cfg.with_identities([k.public() for k in keys.values()])
        return Inputs(cfg, data, keys, secret)

    def changes(self, base: Inputs) -> dict[str, Inputs]:
        """Run 2's inputs by the input changed (one at a time), ``NOTHING`` first.

        Each party's data: one value changed, and with partial record sets one record added
        (one that other parties hold) and one removed; with equal record sets every party
        holds the same records, so a record is added to (removed from) every party at
        once. Then each role's key pair, the server's included, and the group secret."""
        cfg = dataclasses.replace(base.config, identities=None) if self.tls else base.config
        out = {NOTHING: base}

        def with_data(frames: dict[str, pd.DataFrame]) -> Inputs:
            return self._inputs(cfg, {**base.data, **frames}, base.keys, base.secret)

        table = _table()
        for name in self.names:
            frame = base.data[name]
            flipped = frame.copy()
            column = flipped.columns[1]
            flipped.loc[3, column] = 1 - flipped.loc[3, column]  # NLTCS columns are binary
            out[f"{name}: one value changed"] = with_data({name: flipped})
            if self.record_sets == "partial":
                lacked = int(np.flatnonzero(~table.iloc[:RECORDS]["id"].isin(frame["id"]))[0])
                added = table.iloc[[lacked]][list(frame.columns)]
                out[f"{name}: one record added"] = with_data({name: _sorted(frame, added)})
                out[f"{name}: one record removed"] = with_data({name: frame.iloc[1:]})
        if self.record_sets == "equal":
            new = table.iloc[[RECORDS]]
            frames = {n: _sorted(f, new[list(f.columns)]) for n, f in base.data.items()}
            out["every party: one record added"] = with_data(frames)
            out["every party: one record removed"] = with_data(
                {n: f.iloc[1:] for n, f in base.data.items()}
            )
        for name in [*self.names, SERVER]:
            keys = {**base.keys, name: self.role_key(name, changed=True)}
            out[f"{name} key"] = self._inputs(cfg, base.data, keys, base.secret)
        out["group secret"] = self._inputs(cfg, base.data, base.keys, OTHER_SECRET)
        return out


_IDENTITIES: dict[tuple[Scenario, str, bool], tuple[str, str]] = {}


def _tls_identity(scenario: Scenario, name: str, changed: bool) -> tuple[str, str]:
    """Role ``name``'s TLS key and certificate (PEM) in ``scenario``, made once."""
    at = (scenario, name, changed)
    if at not in _IDENTITIES:
        _IDENTITIES[at] = make_tls_identity(name)
    return _IDENTITIES[at]


def _table() -> pd.DataFrame:
    """NLTCS's first ``RECORDS`` + 1 records (the last one for a record added) over its
    first ``COLUMNS`` columns, after an ``id`` column."""
    df, spec = load_dataset("nltcs")
    names = list(spec.names)[:COLUMNS]
    return df.iloc[: RECORDS + 1][names].assign(id=np.arange(RECORDS + 1))[["id", *names]]


def _sorted(frame: pd.DataFrame, extra: pd.DataFrame) -> pd.DataFrame:
    return pd.concat([frame, extra]).sort_values("id").reset_index(drop=True)


# ------------------------------------------------------------------------------- runs


def run_in_process(inputs: Inputs, folder: Path) -> Path:
    """A whole run in this process over the folder transport, unseeded, from fresh state
    folders; the mail folder, where ``<viewer>/`` holds what each viewer received."""
    keys = {name: k for name, k in inputs.keys.items() if name != SERVER}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallTableWarning)
        local_run(
            inputs.data, inputs.config, inputs.secret, message_dir=folder / "mail",
            state_dir=folder / "state", keys=keys, server_key=inputs.keys[SERVER],
        ).run()  # fmt: skip
    return folder / "mail"


def run_over_https(inputs: Inputs, folder: Path) -> Path:
    """A whole run as real processes on 127.0.0.1 over the HTTPS service, unseeded, from
    fresh state folders (the server's too); the server's message store, where
    ``<viewer>/`` holds what each viewer received (the group secret is ``SECRET``)."""
    if inputs.secret != SECRET:
        raise ValueError("the HTTPS runs take the group secret SECRET")
    return _https_run(folder, inputs.config, dict(inputs.data), dict(inputs.keys))


TRANSPORTS: dict[str, Callable[[Inputs, Path], Path]] = {
    "in process": run_in_process,
    "https": run_over_https,
}


# ------------------------------------------------------------------------ shared bytes


HEX_RUN = re.compile(rb"[0-9a-fA-F]{16,}")


def members(data: bytes) -> list[bytes]:
    """A message's members: a zip container's (each expanded alike), else the message."""
    if data[:4] != b"PK\x03\x04":
        return [data]
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return [m for name in archive.namelist() for m in members(archive.read(name))]


def carried(member: bytes, known: Iterable[bytes]) -> list[bytes]:
    """The bytes one member carries, every ``known`` value zeroed: an array's header text
    (dtype and shape) and data, else the member and the bytes of every run of at least 16
    hex digits (an odd run at both alignments: it may start or end one letter off)."""
    if member[:6] == b"\x93NUMPY":
        size = 2 if member[6] == 1 else 4  # the header's length field (format 1.0: 2 bytes)
        start = 8 + size + int.from_bytes(member[8 : 8 + size], "little")
        return [_zeroed(member[8 + size : start], known), _zeroed(member[start:], known)]
    text = _zeroed(member, known)
    runs = HEX_RUN.findall(text)
    decoded = [
        bytes.fromhex(r[i : i + (len(r) - i) // 2 * 2].decode())
        for r in runs
        for i in ((0, 1) if len(r) % 2 else (0,))
    ]
    return [text, *(_zeroed(d, known) for d in decoded)]


def _zeroed(data: bytes, known: Iterable[bytes]) -> bytes:
    for value in known:
        data = data.replace(value, bytes(len(value)))
    return data


def high_entropy(data: bytes) -> np.ndarray:
    """Every 8-byte window of ``data`` (at every offset, as little-endian uint64) that could
    carry a secret: not an integer below 2**40 in magnitude read either way (zero
    included), not mostly printable ASCII, no byte value 4 or more times."""
    raw = np.frombuffer(data, np.uint8)
    if raw.size < 8:
        return np.empty(0, np.uint64)
    rows = np.lib.stride_tricks.sliding_window_view(raw, 8)
    words = np.ascontiguousarray(rows).view("<u8").ravel()
    small = np.zeros(words.size, bool)
    for value in (words.view(np.int64), words.byteswap().view(np.int64)):
        small |= (value > -SMALL) & (value < SMALL)
    text = ((rows >= 0x20) & (rows < 0x7F)) | (rows == 9) | (rows == 10) | (rows == 13)
    ordered = np.sort(rows, axis=1)
    repeated = np.any(ordered[:, REPEATS - 1 :] == ordered[:, : 9 - REPEATS], axis=1)
    return _unique(words[~(small | (text.sum(axis=1) >= PRINTABLE) | repeated)])


def _unique(values: np.ndarray) -> np.ndarray:
    """np.unique by a sort (numpy 2.4's hashed unique of uint64 is about 100x slower)."""
    out = np.sort(values)
    return out[np.concatenate(([True], out[1:] != out[:-1]))] if out.size else out


def message_windows(data: bytes, public: Iterable[bytes]) -> np.ndarray:
    """The high-entropy windows of the bytes a message carries (:func:`carried`), every
    ``public`` value and every SHA-256 of one of its members zeroed first, so that no
    window straddling one counts either."""
    parts = members(data)
    known = {v for v in public if len(v) >= 4} | {hashlib.sha256(m).digest() for m in parts}
    ordered = sorted(known, key=len, reverse=True)  # a longer value first: it may hold one
    found = [high_entropy(piece) for m in parts for piece in carried(m, ordered)]
    return _unique(np.concatenate([np.empty(0, np.uint64), *found]))


def public_values(*runs: Inputs) -> set[bytes]:
    """What every viewer may know of the ``runs``: the config hashes (as hex text and as
    bytes), the run nonce, the roles' names, public keys and TLS certificates (PEM and
    DER)."""
    out: set[bytes] = set()
    for inputs in runs:
        digest = inputs.config.config_hash()
        out |= {digest.encode(), bytes.fromhex(digest), inputs.config.run_context()}
        out |= {inputs.config.run_nonce.encode(), bytes.fromhex(inputs.config.run_nonce)}
        for name, key in inputs.keys.items():
            out |= {name.encode(), key.public_bytes}
            if key.tls_certificate is not None:
                pem = key.tls_certificate.encode()
                der = x509.load_pem_x509_certificate(pem).public_bytes(Encoding.DER)
                out |= {pem, der}
    return out


def received(mail: Path, viewer: str) -> dict[str, bytes]:
    """What ``viewer`` received in the run of ``mail``: its file names and bytes."""
    folder = mail / viewer
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def viewers(*mails: Path) -> list[str]:
    """The viewers of the runs: every folder of ``mails`` (not a hidden one), the server
    first."""
    names = {p.name for m in mails for p in m.iterdir() if p.is_dir() and p.name[0] != "."}
    return sorted(names, key=lambda n: (n != SERVER, n))


def shared_windows(
    first: Mapping[str, bytes],
    second: Mapping[str, bytes],
    public: Iterable[bytes],
    allowed: Iterable[bytes] = (),
) -> dict[str, int]:
    """The high-entropy windows (:func:`message_windows`) that one viewer's messages of two
    runs (file name -> bytes) share, beyond the windows of the ``allowed`` values: their
    count in each message of the second run that holds any (empty: nothing shared)."""
    public = list(public)
    one = _unique(
        np.concatenate(
            [np.empty(0, np.uint64), *(message_windows(d, public) for d in first.values())]
        )
    )
    exempt = np.concatenate([np.empty(0, np.uint64), *(high_entropy(v) for v in allowed)])
    common = np.setdiff1d(one, _unique(exempt), assume_unique=True)
    out = {}
    for name, data in second.items():
        hits = int(np.isin(message_windows(data, public), common, assume_unique=True).sum())
        if hits:
            out[name] = hits
    return out


def read_token_list(data: bytes, inputs: Inputs, party: str) -> np.ndarray:
    """Every token (real and dummy) of ``party``'s tokens message in the run of ``inputs``,
    opened as the server opens it, with its key pair."""
    cfg, server = inputs.config, inputs.keys[SERVER]
    most = secure_plan(cfg).max_tokens
    return np.asarray(read_tokens(data, cfg.config_hash(), party, most, server), np.uint64)


def shared_tokens(
    first: Mapping[str, bytes], second: Mapping[str, bytes], runs: tuple[Inputs, Inputs]
) -> int | None:
    """How many tokens the parties' tokens messages of the two runs share (any party's of
    one run against any party's of the other), as the server reads them; None without
    tokens messages (equal record sets)."""
    lists = []
    for mail, inputs in zip((first, second), runs, strict=True):
        found = [
            read_token_list(mail[f"{name}.tokens"], inputs, name)
            for name in inputs.data
            if f"{name}.tokens" in mail
        ]
        lists.append(_unique(np.concatenate([np.empty(0, np.uint64), *found])))
    if not any(t.size for t in lists):
        return None
    return int(np.intersect1d(*lists, assume_unique=True).size)


def commitments(mail: Mapping[str, bytes], inputs: Inputs, parties: Iterable[str]) -> list[bytes]:
    """The data commitments in the server's commit messages of ``parties``."""
    cfg_hash = inputs.config.config_hash()
    return [read_commit(mail[f"{p}.commit"], cfg_hash, p) for p in parties if f"{p}.commit" in mail]


# ---------------------------------------------------------------------------- findings


@dataclass
class Finding:
    """One viewer's comparison of two runs: the windows shared beyond the allowed ones
    (by message), the tokens shared (the server, partial record sets), whether every byte
    is identical (the identical-input row), or the error that stopped the runs."""

    transport: str
    record_sets: str
    parties: int
    change: str
    viewer: str
    where: dict[str, int] = field(default_factory=dict)
    tokens: int | None = None
    identical: bool | None = None
    error: str = ""

    @property
    def shared(self) -> int:
        return sum(self.where.values())

    @property
    def ok(self) -> bool:
        if self.error:
            return False
        if self.change == NOTHING:
            return bool(self.identical)
        return self.shared == 0 and not self.tokens

    def row(self) -> dict:
        return {**dataclasses.asdict(self), "shared": self.shared, "ok": self.ok}


def compare(
    change: str, runs: tuple[Inputs, Inputs], mails: tuple[Path, Path], setting: dict
) -> list[Finding]:
    """Every viewer's finding for two runs (their inputs and mail folders); ``setting``:
    the transport, record sets and parties, for the findings."""
    public = public_values(*runs)
    unchanged = runs[0].unchanged(runs[1])
    out = []
    for viewer in viewers(*mails):
        one, two = (received(m, viewer) for m in mails)
        finding = Finding(change=change, viewer=viewer, **setting)
        if change == NOTHING:
            finding.identical = one == two
        else:
            allowed = commitments(one, runs[0], unchanged) if viewer == SERVER else []
            finding.where = shared_windows(one, two, public, allowed)
            if viewer == SERVER:
                finding.tokens = shared_tokens(one, two, runs)
        out.append(finding)
    return out


def rerun_matrix(
    scenario: Scenario,
    root: Path,
    transport: str = "in process",
    only: Iterable[str] | None = None,
) -> list[Finding]:
    """Run 1, then run 2 for every input changed (``only``: those), each from fresh folders
    under ``root``, over ``transport``; every viewer's finding."""
    run = TRANSPORTS[transport]
    setting = {"transport": transport, "record_sets": scenario.record_sets,
               "parties": scenario.parties}  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    base = scenario.base()
    first = run(base, root / "run-1")
    out = []
    for i, (change, inputs) in enumerate(scenario.changes(base).items()):
        if only is not None and change not in only:
            continue
        try:
            second = run(inputs, root / f"run-2-{i}")
            out += compare(change, (base, inputs), (first, second), setting)
        except Exception as error:  # a failed run is a failed row, the others still run
            reason = " ".join(traceback.format_exception_only(error)[-1].split())
            out.append(Finding(change=change, viewer="-", error=reason[:300], **setting))
    return out


# ------------------------------------------------------------------------------- table

IN_PROCESS = [Scenario(r, p) for r in ("equal", "partial") for p in (2, 3)]
# the coins' streams too; a tenth of sigma^2 in coins keeps their blobs (and the comparison) small
IN_PROCESS.append(Scenario("partial", 2, cross_noise="coins", coin_weight=0.1))
# the dealer-free product's streams (E's key and randomisers, G's masks, the replies' nonces)
IN_PROCESS.append(Scenario("equal", 2, product="paillier"))
# and its coins (weight 1: E's encrypted coins, G's coin reply)
IN_PROCESS.append(Scenario("equal", 2, cross_noise="coins", product="paillier"))
# Over HTTPS, each record-set layout and party count once: the audit's rows (partial record
# sets, two parties) and equal record sets over three parties.
HTTPS = [
    (Scenario("partial", 2, tls=True), (NOTHING, "A: one value changed", f"{SERVER} key")),
    (Scenario("equal", 3, tls=True), (NOTHING, "B: one value changed")),
]


def markdown(findings: Iterable[Finding]) -> str:
    """The table: input changed x viewer, with the shared windows (beyond the allowed),
    the shared tokens (the server) and where, for each record sets x parties x transport."""
    lines = [
        "| record sets | parties | transport | input changed | viewer | shared windows "
        "| shared tokens | where | verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in findings:
        if f.error:
            shared, where = "run failed", f.error.replace("|", "/")
        elif f.change == NOTHING:
            shared, where = "identical" if f.identical else "BYTES DIFFER", ""
        else:
            shared = str(f.shared)
            where = ", ".join(f"{name}: {n}" for name, n in f.where.items())
        tokens = "" if f.tokens is None else str(f.tokens)
        verdict = "ok" if f.ok else "**LEAK**" if not f.error else "**FAILED**"
        lines.append(
            f"| {f.record_sets} | {f.parties} | {f.transport} | {f.change} | {f.viewer} "
            f"| {shared} | {tokens} | {where} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the in-process matrix (and with ``--https`` the HTTPS rows); print the table,
    write the findings as JSON (``--json``) and the table (``--markdown``)."""
    parser = argparse.ArgumentParser(prog="python -m tests.rerun_harness")
    parser.add_argument("--https", action="store_true", help="also the rows over HTTPS")
    parser.add_argument("--json", type=Path, help="write the findings here")
    parser.add_argument("--markdown", type=Path, help="write the table here")
    args = parser.parse_args(argv)
    findings, seconds = [], {}
    plans = [(s, "in process", None) for s in IN_PROCESS]
    if args.https:
        plans += [(scenario, "https", changes) for scenario, changes in HTTPS]
    with tempfile.TemporaryDirectory(prefix="rerun-harness-") as tmp:
        for i, (scenario, transport, only) in enumerate(plans):
            start = time.perf_counter()
            findings += rerun_matrix(scenario, Path(tmp) / str(i), transport, only)
            label = f"{scenario.record_sets}, {scenario.parties} parties, {transport}"
            seconds[label] = round(time.perf_counter() - start, 1)
    table = markdown(findings)
    print(table)
    if args.json:
        rows = [f.row() for f in findings]
        args.json.write_text(json.dumps({"seconds": seconds, "findings": rows}, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
