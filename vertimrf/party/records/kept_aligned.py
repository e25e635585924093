"""A party's aligned records kept in its private state folder, read back by later
step commands; design notes in docs/design/party.md."""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vertimrf.crypto.schedule import mac
from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.io import atomic_open, atomic_write_text
from vertimrf.party.records.aligned import Aligned, chunk_histograms, record_set_key, slot_columns

KEPT_FORMAT = "vertimrf-kept-aligned/1"
_RECORD = "aligned.json"
_DIGEST = "records.json"  # partial record sets: the records' digest, kept before the layout
_TOKENS = "tokens.npy"  # partial record sets: the records' sorted tokens
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
    return mac(record_set_key(secret, context), text).hex()


class _Mapped:
    """The array of an ``.npy`` file (format 1.0, as kept here) mapped read-only;
    :meth:`drop` releases the pages read so far from this process's memory
    (MADV_DONTNEED: the file's bytes stay in the page cache, and a later read maps them
    again), so that reading it by blocks does not keep it resident. ValueError for a file
    that is not such an array."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            if np.lib.format.read_magic(fh) != (1, 0):
                raise ValueError(f"{path.name} is not an .npy file of format 1.0")
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
            offset, size = fh.tell(), os.fstat(fh.fileno()).st_size
            if fortran or dtype.hasobject or size != offset + math.prod(shape) * dtype.itemsize:
                raise ValueError(f"{path.name} does not hold its header's array")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        self.array = np.frombuffer(self._map, dtype, math.prod(shape), offset).reshape(shape)

    def drop(self) -> None:
        """Release the pages read from this process's memory."""
        self._map.madvise(mmap.MADV_DONTNEED)


class KeptAligned:
    """A party's aligned records read back from its state ``folder`` (as ``record``, its
    ``aligned.json``, says): their slots and codes, in row order, mapped from the files."""

    def __init__(self, folder: Path, record: dict) -> None:
        self.n = int(record["n"])
        self._maps = [_Mapped(folder / f"{name}.npy") for name in ("slots", "codes")]
        self._slots, self._codes = (m.array for m in self._maps)
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
            and (_digest(slots, self._drop), _digest(codes, self._drop))
            == (record["slots"], record["codes"])
        )

    def _drop(self) -> None:
        for m in self._maps:
            m.drop()

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`vertimrf.party.records.aligned.slot_columns`)."""
        out = slot_columns(self._slots, self._codes, r0, r1, offsets)
        self._drop()
        return out

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``, summed ``_ROWS`` records at a
        time."""
        return chunk_histograms(self._chunks(), attrs, sizes)

    def _chunks(self) -> Iterator[np.ndarray]:
        """The records' codes, ``_ROWS`` at a time (the mapping dropped after each)."""
        for i0 in range(0, self.n, _ROWS):
            yield np.asarray(self._codes[i0 : i0 + _ROWS])
            self._drop()


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


def keep_records(
    folder: Path, bound: str, digest: str, n: int, tokens: Iterable[np.ndarray]
) -> None:
    """Keep a party's records digest (partial record sets: what its commitment and keyed
    streams are bound to) and its ``n`` records' sorted tokens (given by blocks; what its
    token list is made of) in ``folder`` under the binding ``bound``."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    (folder / _DIGEST).unlink(missing_ok=True)  # no record names a half-written array
    h, count = hashlib.sha256(), 0
    with atomic_open(folder / _TOKENS, sync=False) as fh:
        header = {"descr": "<u8", "shape": (n,), "fortran_order": False}
        np.lib.format.write_array_header_1_0(fh, header)
        for block in tokens:
            data = np.ascontiguousarray(block, "<u8").data
            h.update(data)
            fh.write(data)
            count += len(block)
    if count != n:
        raise ConfigError(f"the sorted tokens are {count}, not the {n} records'.")
    record = {
        "format": KEPT_FORMAT, "binding": bound, "records": digest, "n": n,
        "tokens": h.hexdigest(),
    }  # fmt: skip
    atomic_write_text(folder / _DIGEST, json.dumps(record) + "\n")


@dataclass(frozen=True)
class KeptRecords:
    """A party's records digest and its records' sorted tokens (uint64, mapped from the
    file), kept by an earlier process of the run (:func:`keep_records`)."""

    digest: str
    pages: _Mapped

    @property
    def tokens(self) -> np.ndarray:
        """The sorted tokens (mapped)."""
        return self.pages.array


def load_records(folder: Path, bound: str) -> KeptRecords | None:
    """The records digest and sorted tokens kept in ``folder`` under the binding ``bound``;
    None when there are none, or they are another run's, party's or table's, or altered."""
    try:
        record = json.loads((folder / _DIGEST).read_text(encoding="utf-8"))
        if record["format"] != KEPT_FORMAT or record["binding"] != bound:
            return None
        n = int(record["n"])
        pages = _Mapped(folder / _TOKENS)
        tokens = pages.array
        intact = tokens.shape == (n,) and tokens.dtype == np.dtype("<u8")
        if not intact or _digest(tokens, pages.drop) != record["tokens"]:
            return None
        return KeptRecords(str(record["records"]), pages)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _digest(array: np.ndarray, drop: Callable[[], None]) -> str:
    """SHA-256 (hex) of a mapped array's bytes, ``_ROWS`` rows at a time (``drop`` called
    after each: the pages read are released)."""
    h = hashlib.sha256()
    for i0 in range(0, array.shape[0], _ROWS):
        h.update(np.ascontiguousarray(array[i0 : i0 + _ROWS]).data)
        drop()
    return h.hexdigest()
