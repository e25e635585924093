"""A party's aligned records kept in its private state folder for the run, so that a later step
command (a new process) reads them back instead of aligning its table again.

The folder (mode 0700) holds the records' padded row slots and their codes, in row order, as
raw ``.npy`` files (mode 0600, never pickled), read back memory-mapped, and ``aligned.json``:
the SHA-256 of each array's bytes, the record count, the record-set and data digests, and the
binding, an HMAC under the run's record-set key
(:func:`~vertimrf.party.aligned.record_set_key`: the group secret and the run) of the party,
its ID column and the SHA-256 of its table (of a file's bytes, or of an in-memory table's codes
and ID fingerprints). Records kept for another run, secret, party or table, or altered since,
are not read: the table is aligned again and kept anew.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Literal

import numpy as np

from vertimrf.domain import DomainSpec, TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.io import atomic_open, atomic_write_text
from vertimrf.party.aligned import Aligned, code_histogram, record_set_key, slot_columns

KEPT_FORMAT = "vertimrf-kept-aligned/1"
_RECORD = "aligned.json"
_DIGEST = "records.json"  # partial record sets: the records' digest, kept before the layout
_CHUNK = 1 << 20  # bytes of a file hashed at once
_ROWS = 1 << 16  # padded rows (or records) streamed at once


def source_digest(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of a table's bytes: a file's, or a folder's files (each one's path in
    the folder, size and bytes, in path order), read in chunks."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    h = hashlib.sha256()
    for p in files:
        if root.is_dir():
            h.update(f"{p.relative_to(root).as_posix()}\0{p.stat().st_size}\0".encode())
        with open(p, "rb") as fh:
            while chunk := fh.read(_CHUNK):
                h.update(chunk)
    return h.hexdigest()


def binding(secret: bytes, context: bytes, party: str, id_column: str, source: str) -> str:
    """What kept records are bound to: HMAC-SHA256 under the run's record-set key of the
    party, its ID column and its table's digest ``source`` (hex)."""
    text = json.dumps([KEPT_FORMAT, party, id_column, source]).encode()
    return hmac.new(record_set_key(secret, context), text, hashlib.sha256).hexdigest()


class KeptAligned:
    """A party's aligned records read back from its state ``folder`` (as ``record``, its
    ``aligned.json``, says): their slots and codes, in row order, mapped from the files."""

    def __init__(self, folder: Path, record: dict) -> None:
        self.n = int(record["n"])
        mode: Literal["r"] | None = "r" if self.n else None  # an empty file cannot be mapped
        self._slots, self._codes = (
            np.load(folder / f"{name}.npy", mmap_mode=mode, allow_pickle=False)
            for name in ("slots", "codes")
        )
        self.record_digest = bytes.fromhex(record["record_digest"])
        self.data_digest: str = record["data"]

    def intact(self, record: dict, spec: DomainSpec) -> bool:
        """Whether the arrays have the shapes and types of records over ``spec``'s columns
        and the digests of ``record``."""
        slots, codes = self._slots, self._codes
        shapes = slots.shape == (self.n,) and codes.shape == (self.n, len(spec))
        types = slots.dtype == np.int64 and codes.dtype == TableEncoder(spec).dtype
        return (
            shapes
            and types
            and (_digest(slots), _digest(codes)) == (record["slots"], record["codes"])
        )

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`vertimrf.party.aligned.slot_columns`)."""
        return slot_columns(self._slots, self._codes, r0, r1, offsets)

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``, summed ``_ROWS`` records at a
        time."""
        totals = [np.zeros(tuple(sizes[a] for a in attr), np.int64) for attr in attrs]
        for i0 in range(0, self.n if attrs else 0, _ROWS):
            chunk = np.asarray(self._codes[i0 : i0 + _ROWS])
            for total, attr in zip(totals, attrs, strict=True):
                total += code_histogram(chunk, attr, sizes)
        return totals


def load_kept(folder: Path, bound: str, spec: DomainSpec) -> KeptAligned | None:
    """The records kept in ``folder`` under the binding ``bound`` over ``spec``'s columns;
    None when there are none, or they are another run's, party's or table's, or were
    altered."""
    try:
        record = json.loads((folder / _RECORD).read_text(encoding="utf-8"))
        if record["format"] != KEPT_FORMAT or record["binding"] != bound:
            return None
        kept = KeptAligned(folder, record)
        return kept if kept.intact(record, spec) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def kept_or_aligned(
    folder: Path, bound: str, spec: DomainSpec, rows: int, align: Callable[[], Aligned]
) -> KeptAligned:
    """The records kept in ``folder`` under the binding ``bound``, or else those ``align``
    makes, kept there anew (``rows`` padded rows over ``spec``'s columns)."""
    kept = load_kept(folder, bound, spec)
    return kept if kept is not None else keep_aligned(align(), folder, bound, spec, rows)


def keep_aligned(
    aligned: Aligned, folder: Path, bound: str, spec: DomainSpec, rows: int
) -> KeptAligned:
    """Write ``aligned``'s records (``rows`` padded rows over ``spec``'s columns) into
    ``folder`` under the binding ``bound``, ``_ROWS`` padded rows at a time; the records
    read back from there."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # private: the party's records
    (folder / _RECORD).unlink(missing_ok=True)  # no record names half-written arrays
    n, width = aligned.n, len(spec)
    shapes = {"slots": (n,), "codes": (n, width)}
    dtypes: dict[str, np.dtype] = {"slots": np.dtype(np.int64), "codes": TableEncoder(spec).dtype}
    hashes, count = {name: hashlib.sha256() for name in shapes}, 0
    with ExitStack() as stack:
        files = {}
        for name, shape in shapes.items():  # each made with mode 0600
            files[name] = stack.enter_context(atomic_open(folder / f"{name}.npy", sync=False))
            header = {"descr": np.lib.format.dtype_to_descr(dtypes[name]), "shape": shape}
            np.lib.format.write_array_header_1_0(files[name], {**header, "fortran_order": False})
        offsets = np.zeros(width, np.int64)
        for r0 in range(0, rows, _ROWS):
            columns = aligned.columns(r0, min(rows, r0 + _ROWS), offsets)
            real = np.flatnonzero(columns[:, 0] >= 0)
            count += real.size
            for name, values in (("slots", r0 + real), ("codes", columns[real])):
                data = np.ascontiguousarray(values, dtypes[name]).data
                hashes[name].update(data)
                files[name].write(data)
        if count != n:
            raise ConfigError(f"the aligned rows hold {count} records, not {n}.")
    record = {
        "format": KEPT_FORMAT, "binding": bound, "n": n,
        **{name: h.hexdigest() for name, h in hashes.items()},
        "record_digest": aligned.record_digest.hex(), "data": aligned.data_digest,
    }  # fmt: skip
    atomic_write_text(folder / _RECORD, json.dumps(record) + "\n")
    return KeptAligned(folder, record)


def keep_records_digest(folder: Path, bound: str, digest: str) -> None:
    """Keep a party's records digest (partial record sets: what its commitment and keyed
    streams are bound to) in ``folder`` under the binding ``bound``."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    record = {"format": KEPT_FORMAT, "binding": bound, "records": digest}
    atomic_write_text(folder / _DIGEST, json.dumps(record) + "\n")


def load_records_digest(folder: Path, bound: str) -> str | None:
    """The records digest kept in ``folder`` under the binding ``bound``; None when there
    is none, or it is another run's, party's or table's."""
    try:
        record = json.loads((folder / _DIGEST).read_text(encoding="utf-8"))
        if record["format"] != KEPT_FORMAT or record["binding"] != bound:
            return None
        return str(record["records"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _digest(array: np.ndarray) -> str:
    """SHA-256 (hex) of an array's bytes, ``_ROWS`` rows at a time."""
    h = hashlib.sha256()
    for i0 in range(0, array.shape[0], _ROWS):
        h.update(np.ascontiguousarray(array[i0 : i0 + _ROWS]).data)
    return h.hexdigest()
