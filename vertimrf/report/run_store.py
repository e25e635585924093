"""A folder of MST and AIM runs kept across processes, read back instead of
made again; design notes in docs/design/report.md."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError

STATUSES = ("finished", "timed out")


@dataclass(frozen=True)
class StoredRun:
    """A stored run's status ("finished" or "timed out"), its seconds and cap, and its
    synthetic codes (None unless it finished)."""

    status: str
    seconds: float
    cap: float
    codes: np.ndarray | None


def opendp_version() -> str:
    """The installed OpenDP's version, or "not installed"."""
    try:
        return importlib.metadata.version("opendp")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def run_key(
    codes: np.ndarray, sizes: list[int], method: str, rho: float, seed: int, opendp: str
) -> str:
    """The hex SHA-256 naming one run: over ``codes`` (dtype, shape and bytes), the domain
    ``sizes``, ``method``, ``repr(rho)``, ``seed`` and the OpenDP version ``opendp``."""
    head = {
        "dtype": np.asarray(codes).dtype.str,
        "shape": list(np.shape(codes)),
        "sizes": [int(s) for s in sizes],
        "method": method,
        "rho": repr(rho),
        "seed": int(seed),
        "opendp": opendp,
    }
    text = json.dumps(head, sort_keys=True).encode("utf-8")
    digest = hashlib.sha256(len(text).to_bytes(8, "big") + text)
    digest.update(np.ascontiguousarray(codes).tobytes())
    return digest.hexdigest()


def find(store: str | os.PathLike[str], key: str, cap: float) -> StoredRun | None:
    """The stored run of ``key`` that answers a run capped at ``cap``: the finished one (as
    timed out at ``cap`` if it took longer), else
    one that timed out at a cap of at least ``cap`` (the longest such); None if neither.
    A corrupt entry raises ConfigError naming its file."""
    folder = Path(store)
    record_path = folder / f"{key}.finished.json"
    if record_path.exists():
        record = _read_record(record_path, "finished")
        codes_path = folder / f"{key}.finished.npy"
        try:
            data = codes_path.read_bytes()
            if hashlib.sha256(data).hexdigest() != record["codes_sha256"]:
                raise ValueError("its SHA-256 is not the record's")
            codes = np.load(codes_path, allow_pickle=False)
            if codes.ndim != 2 or codes.dtype.kind not in "iu":
                raise ValueError(f"codes of shape {codes.shape} and dtype {codes.dtype}")
        except (OSError, ValueError, EOFError) as error:
            raise _corrupt(codes_path, error) from None
        if record["seconds"] > cap:  # slower than the cap asked for: timed out at it
            return StoredRun("timed out", float(cap), float(cap), None)
        return StoredRun("finished", record["seconds"], record["cap"], codes)
    timed_out = [_read_record(p, "timed out") for p in folder.glob(f"{key}.timed-out-*.json")]
    longest = max((r for r in timed_out if r["cap"] >= cap), key=lambda r: r["cap"], default=None)
    if longest is None:
        return None
    return StoredRun("timed out", longest["seconds"], longest["cap"], None)


def save(
    store: str | os.PathLike[str],
    key: str,
    record: dict[str, Any],
    codes: np.ndarray | None,
) -> None:
    """Keep a run of ``key``: its ``record`` (JSON; "status", "seconds" and "cap" at least,
    the time it was made added) and, for a finished run, its synthetic ``codes``. An entry
    already there is kept as it is."""
    if record.get("status") not in STATUSES:
        raise ValueError(f"only {STATUSES} runs are stored; got {record.get('status')!r}")
    folder = Path(store)
    folder.mkdir(parents=True, exist_ok=True)
    record = {"key": key, **record, "made": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    if record["status"] == "finished":
        if codes is None:
            raise ValueError("a finished run needs its codes")
        record_path = folder / f"{key}.finished.json"
        if record_path.exists():
            return
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".tmp", delete=False) as fh:
            np.save(fh, compact(codes), allow_pickle=False)
        record["codes_sha256"] = hashlib.sha256(Path(fh.name).read_bytes()).hexdigest()
        # The codes go first: a record names codes that are in place.
        os.replace(fh.name, folder / f"{key}.finished.npy")
    else:
        record_path = folder / f"{key}.timed-out-{float(record['cap'])!r}.json"
    _write_new(record_path, (json.dumps(record, indent=2) + "\n").encode("utf-8"))


def compact(codes: np.ndarray) -> np.ndarray:
    """``codes`` (non-negative integers) in the smallest unsigned dtype that holds them: the
    same values in as few bytes (a row of Adult's 15 codes in 15 bytes, not 120)."""
    codes = np.asarray(codes)
    if codes.dtype.kind not in "iu" or (codes.size and codes.min() < 0):
        low = codes.min() if codes.size else None
        raise ValueError(f"codes must be non-negative integers; got {codes.dtype}, min {low}")
    top = int(codes.max()) if codes.size else 0
    return codes.astype(np.min_scalar_type(top), copy=False)


def _write_new(path: Path, data: bytes) -> None:
    """Write ``data`` at ``path`` through a temporary file beside it, unless ``path`` exists."""
    if path.exists():
        return
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp", delete=False) as fh:
        fh.write(data)
    os.replace(fh.name, path)


def _read_record(path: Path, status: str) -> dict[str, Any]:
    """The JSON record at ``path``, checked to be a ``status`` run's (ConfigError if not)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(record, dict) or record.get("status") != status:
            raise ValueError(f"not a {status!r} run's record")
        record["seconds"], record["cap"] = float(record["seconds"]), float(record["cap"])
        if status == "finished" and not isinstance(record.get("codes_sha256"), str):
            raise ValueError("no codes_sha256")
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise _corrupt(path, error) from None
    return record


def _corrupt(path: Path, error: Exception) -> ConfigError:
    reason = " ".join(str(error).split())[:200]
    return ConfigError(
        f"{path} is not a readable baseline run ({reason}): delete it (the run is then made again)."
    )
