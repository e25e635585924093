"""A versioned, checksummed, pickle-free file container for data crossing a
trust boundary; design notes in docs/design/core.md."""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.io import atomic_open

FORMAT = "vertimrf-container"
VERSION = 1
_MANIFEST = "manifest.json"
_MANIFEST_SUM = "manifest.sha256"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest zip time stamp: no clock in the bytes

_MAX_ENTRIES = 10_000  # entries in one container (two manifest files + the arrays)
_MAX_DIRECTORY_BYTES = 1 << 21  # zip central directory; a real entry needs ~100 bytes
_SUM_BYTES = 128  # manifest.sha256 holds 64 hex digits
_NPY_HEADER_MAX = 8 + 4 + 10_000  # magic + version, length field, numpy's header limit
_MAX_NDIM = 64  # numpy's limit on dimensions
_CHUNK = 1 << 20  # bytes per read when streaming array data
_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_ARRAY_FIELDS = {"dtype", "shape", "sha256"}
_SHA256 = re.compile(r"[0-9a-f]{64}")
# Errors a corrupt or hostile file can raise from zipfile, zlib, json and numpy; each is
# turned into a MessageError. TypeError / AttributeError are left out on purpose: inputs are
# type-checked explicitly, so those would be bugs.
_FILE_ERRORS = (
    zipfile.BadZipFile,
    zlib.error,
    struct.error,
    OSError,
    EOFError,
    ValueError,
    KeyError,
    IndexError,
    OverflowError,
    RuntimeError,  # includes RecursionError and NotImplementedError
)
# zipfile's own end-of-central-directory reader: private, but present since Python 2, and it
# yields exactly the numbers ZipFile then trusts, so the directory can be bounded first.
_END_RECORD = getattr(zipfile, "_EndRecData", None)
_ECD_ENTRIES_TOTAL, _ECD_SIZE = 4, 5
# The public call that loads each kind of model file, named when a file of one is opened as
# another (tests/test_container.py checks these kinds against the modules that write them).
MODEL_LOADERS = {
    "vertimrf-vertical-model": "vertimrf.VerticalModel.load",
    "vertimrf-privmrf": "vertimrf.PrivMRF.load",
    "vertimrf-mrf": "vertimrf.mrf.MarkovRandomField.load",
}


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


Target = str | os.PathLike | IO[bytes]


def source_name(target: Target) -> str:
    """How errors name a container: its path, or "the message" for bytes in memory."""
    return str(target) if isinstance(target, str | os.PathLike) else "the message"


def write_container(
    path: Target, kind: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]
) -> None:
    """Write ``meta`` and ``arrays`` to ``path`` atomically (or into a binary file object,
    e.g. ``io.BytesIO``, with the same bytes); object arrays are refused."""
    blobs, index = {}, {}
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr).reshape(np.shape(arr))  # C order; keeps 0-d shape
        if arr.dtype.hasobject:
            raise MessageError(f"array {name!r} has object dtype; only numeric arrays can be sent.")
        blob = _npy_bytes(arr)
        blobs[name] = blob
        index[name] = {
            "dtype": arr.dtype.str,
            "shape": list(arr.shape),
            "sha256": hashlib.sha256(blob).hexdigest(),
        }
    manifest = {"format": FORMAT, "version": VERSION, "kind": kind, "meta": meta, "arrays": index}
    mbytes = json.dumps(manifest, sort_keys=True, indent=1).encode("utf-8")
    if isinstance(path, str | os.PathLike):
        with atomic_open(path, "wb") as fh:
            _write_zip(fh, mbytes, blobs)
    else:
        _write_zip(path, mbytes, blobs)


def _write_zip(fh: IO[bytes], mbytes: bytes, blobs: dict[str, bytes]) -> None:
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_entry(_MANIFEST), mbytes)
        zf.writestr(_entry(_MANIFEST_SUM), hashlib.sha256(mbytes).hexdigest())
        for name, blob in blobs.items():
            zf.writestr(_entry(f"{name}.npy"), blob)


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``arrays`` as the bytes of an uncompressed ``.npz`` archive (read with ``np.load``),
    with no clock in them: the same arrays always give the same bytes."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, arr in arrays.items():
            zf.writestr(_entry(f"{name}.npy", zipfile.ZIP_STORED), _npy_bytes(np.asarray(arr)))
    return buf.getvalue()


def _entry(name: str, compress_type: int = zipfile.ZIP_DEFLATED) -> zipfile.ZipInfo:
    """A zip entry with a fixed time stamp and mode, so that the same arrays always give the
    same file bytes (a re-run of a step writes what the first run wrote)."""
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = compress_type
    info.external_attr = 0o644 << 16
    return info


def read_container(
    source: Target,
    kind: str,
    *,
    array_bytes: Callable[[str], int | None],
    manifest_bytes: int = 1 << 22,
    arrays: bool = True,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a container written by :func:`write_container`.

    ``array_bytes(name)`` is the largest data payload (bytes) allowed for the array
    ``name``, or None if no such array may appear; ``manifest_bytes`` bounds the manifest.
    Returns ``(meta, arrays)``; raises :class:`MessageError` on any problem with the file.
    ``source`` is a path or a binary file object (read from its start, left open). With
    ``arrays=False`` the manifest and the entries are verified but no array is read (none
    is returned).
    """
    path = source_name(source)
    if not isinstance(source, str | os.PathLike):
        return _read_zip(path, source, kind, array_bytes, manifest_bytes, arrays)
    try:
        fh = open(source, "rb")  # noqa: SIM115 (closed below, after the error translation)
    except OSError as exc:
        raise MessageError(f"{path}: cannot open the file ({exc.strerror or exc}).") from exc
    with fh:
        return _read_zip(path, fh, kind, array_bytes, manifest_bytes, arrays)


def _read_zip(
    path: str,
    fh: IO[bytes],
    kind: str,
    array_bytes: Callable[[str], int | None],
    manifest_bytes: int,
    read_arrays: bool,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    try:
        _check_directory(path, fh)
        with zipfile.ZipFile(fh) as zf:
            infos, bounds, unexpected = _check_entries(path, zf, array_bytes, manifest_bytes)
            manifest = _read_manifest(path, zf, infos, manifest_bytes)
            _check_header(path, manifest, kind)
            if unexpected:  # after the header: a file of another kind is named as such
                raise MessageError(f"{path}: unexpected array {_short(unexpected[0])}.")
            index = _check_index(path, manifest, bounds, array_bytes)
            arrays = {
                name: _read_array(path, zf, infos[f"{name}.npy"], name, spec, bounds[name])
                for name, spec in (index.items() if read_arrays else ())
            }
    except MessageError:
        raise
    except _FILE_ERRORS as exc:
        raise MessageError(
            f"{path}: unreadable or truncated file ({type(exc).__name__}: {_short(exc, 200)})."
        ) from exc
    return manifest["meta"], arrays


class _CappedReader:
    """File-like view of ``raw`` that hashes what it reads and fails past ``limit`` bytes."""

    def __init__(self, raw: IO[bytes], limit: int, what: str) -> None:
        self.raw, self.limit, self.what = raw, limit, what
        self.count = 0
        self.sha = hashlib.sha256()

    def read(self, n: int | None = -1) -> bytes:
        """Up to ``n`` bytes (all if negative); reads at most one byte past the limit."""
        room = self.limit + 1 - self.count
        n = room if n is None or n < 0 else min(n, room)
        data = self.raw.read(n) if n > 0 else b""
        self.count += len(data)
        if self.count > self.limit:
            raise MessageError(f"{self.what} is larger than the {self.limit} bytes allowed.")
        self.sha.update(data)
        return data

    def read_all(self) -> bytes:
        """Everything up to EOF (within the limit)."""
        parts = []
        while chunk := self.read(_CHUNK):
            parts.append(chunk)
        return b"".join(parts)

    def read_exact(self, n: int) -> bytearray:
        """Exactly ``n`` bytes into a fresh (writable) buffer, then require EOF."""
        buf = bytearray(n)
        pos = 0
        with memoryview(buf) as view:
            while pos < n:
                chunk = self.read(min(_CHUNK, n - pos))
                if not chunk:
                    raise MessageError(f"{self.what} is truncated ({pos} of {n} data bytes).")
                view[pos : pos + len(chunk)] = chunk
                pos += len(chunk)
        self.read(1)  # raises on trailing bytes; reaching EOF makes zipfile check the CRC
        return buf


def _check_directory(path: str | os.PathLike, fh: IO[bytes]) -> None:
    """Bound the central directory before ZipFile reads and parses all of it."""
    end = _END_RECORD(fh) if _END_RECORD is not None else None
    if end is None:
        return  # not a zip at all: ZipFile raises BadZipFile
    if end[_ECD_SIZE] > _MAX_DIRECTORY_BYTES or end[_ECD_ENTRIES_TOTAL] > _MAX_ENTRIES:
        raise MessageError(
            f"{path}: the zip directory declares {end[_ECD_ENTRIES_TOTAL]} entries in "
            f"{end[_ECD_SIZE]} bytes; at most {_MAX_ENTRIES} entries in "
            f"{_MAX_DIRECTORY_BYTES} bytes are allowed."
        )


def _check_entries(
    path: str | os.PathLike,
    zf: zipfile.ZipFile,
    array_bytes: Callable[[str], int | None],
    manifest_bytes: int,
) -> tuple[dict[str, zipfile.ZipInfo], dict[str, int], list[str]]:
    """Vet the entry list and every declared size; return the entries, the array bounds
    and the arrays that may not appear (never read)."""
    entries = zf.infolist()
    if len(entries) > _MAX_ENTRIES:
        raise MessageError(f"{path}: {len(entries)} zip entries; at most {_MAX_ENTRIES}.")
    infos: dict[str, zipfile.ZipInfo] = {}
    bounds: dict[str, int] = {}
    unexpected: list[str] = []
    for info in entries:
        name = info.filename
        if name in infos:
            raise MessageError(f"{path}: the zip holds entry {name!r} twice.")
        infos[name] = info
        if name == _MANIFEST:
            limit = manifest_bytes
        elif name == _MANIFEST_SUM:
            limit = _SUM_BYTES
        elif name.endswith(".npy"):
            bound = array_bytes(name[:-4])
            if bound is None:
                unexpected.append(name[:-4])
                continue
            bounds[name[:-4]] = bound
            limit = _NPY_HEADER_MAX + bound
        else:
            raise MessageError(f"{path}: unexpected entry {_short(name)}.")
        if info.flag_bits & 0x1:
            raise MessageError(f"{path}: entry {name!r} is encrypted.")
        if info.compress_type not in _COMPRESSION:
            raise MessageError(
                f"{path}: entry {name!r} uses unsupported compression method "
                f"{info.compress_type} (only {sorted(_COMPRESSION.values())})."
            )
        if info.file_size > limit:
            raise MessageError(
                f"{path}: entry {name!r} declares {info.file_size} bytes uncompressed, more "
                f"than the {limit} allowed (zip bomb?)."
            )
    if _MANIFEST not in infos or _MANIFEST_SUM not in infos:
        raise MessageError(f"{path}: not a vertimrf file (no manifest).")
    return infos, bounds, unexpected


def _read_manifest(
    path: str | os.PathLike,
    zf: zipfile.ZipFile,
    infos: dict[str, zipfile.ZipInfo],
    manifest_bytes: int,
) -> dict[str, Any]:
    """The manifest as a dict, after checking its size, checksum, encoding and JSON."""
    summed = _read_entry(zf, infos[_MANIFEST_SUM], _SUM_BYTES, f"{path}: {_MANIFEST_SUM}")
    mbytes = _read_entry(zf, infos[_MANIFEST], manifest_bytes, f"{path}: {_MANIFEST}")
    try:
        want = summed.decode("ascii").strip()
    except UnicodeDecodeError:
        raise MessageError(f"{path}: {_MANIFEST_SUM} is not a hex digest.") from None
    if hashlib.sha256(mbytes).hexdigest() != want:
        raise MessageError(f"{path}: the manifest checksum does not match (tampered?).")
    try:
        manifest = json.loads(mbytes.decode("utf-8"))
    except UnicodeDecodeError:
        raise MessageError(f"{path}: the manifest is not UTF-8 text.") from None
    except RecursionError:
        raise MessageError(f"{path}: the manifest JSON is nested too deeply.") from None
    except ValueError as exc:
        raise MessageError(f"{path}: the manifest is not valid JSON ({exc}).") from None
    if not isinstance(manifest, dict):
        raise MessageError(
            f"{path}: the manifest is a JSON {type(manifest).__name__}, not an object."
        )
    return manifest


def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int, what: str) -> bytes:
    """A whole (small) entry, read through a capped stream."""
    with zf.open(info) as raw:
        return _CappedReader(raw, limit, what).read_all()


def _check_header(path: str | os.PathLike, manifest: dict, kind: str) -> None:
    if manifest.get("format") != FORMAT:
        raise MessageError(f"{path}: unknown format {_short(manifest.get('format'))}.")
    version = manifest.get("version")
    if type(version) is not int or version != VERSION:
        raise MessageError(
            f"{path}: file version {_short(version)} is not supported (this "
            f"vertimrf reads version {VERSION}); re-create it with a matching vertimrf."
        )
    found = manifest.get("kind")
    if found != kind:
        loader = MODEL_LOADERS.get(found) if isinstance(found, str) else None
        fix = f"; load it with {loader}(path)" if loader else ""
        raise MessageError(f"{path}: holds a {_short(found)}, expected a {kind!r}{fix}.")


def _check_index(
    path: str | os.PathLike,
    manifest: dict[str, Any],
    bounds: dict[str, int],
    array_bytes: Callable[[str], int | None],
) -> dict[str, dict[str, Any]]:
    """Type-check the manifest's ``meta`` and ``arrays``; match arrays to zip entries."""
    if not isinstance(manifest.get("meta"), dict):
        raise MessageError(f"{path}: the manifest's 'meta' is not a JSON object.")
    index = manifest.get("arrays")
    if not isinstance(index, dict):
        raise MessageError(f"{path}: the manifest's 'arrays' is not a JSON object.")
    for name, spec in index.items():
        where = f"{path}: manifest entry of array {_short(name)}"
        if not isinstance(spec, dict) or set(spec) != _ARRAY_FIELDS:
            raise MessageError(f"{where} must be an object with keys {sorted(_ARRAY_FIELDS)}.")
        shape = spec["shape"]
        if not isinstance(spec["dtype"], str):
            raise MessageError(f"{where}: dtype {_short(spec['dtype'])} is not a string.")
        if not (
            isinstance(shape, list)
            and len(shape) <= _MAX_NDIM
            and all(type(s) is int and s >= 0 for s in shape)
        ):
            raise MessageError(
                f"{where}: shape {_short(shape)} is not a list of at most {_MAX_NDIM} "
                "non-negative integers."
            )
        if not (isinstance(spec["sha256"], str) and _SHA256.fullmatch(spec["sha256"])):
            raise MessageError(f"{where}: sha256 {_short(spec['sha256'])} is not a hex digest.")
        if name not in bounds:
            if array_bytes(name) is None:
                raise MessageError(f"{path}: unexpected array {_short(name)}.")
            raise MessageError(f"{path}: array {name!r} is missing (truncated file?).")
    unlisted = sorted(set(bounds) - set(index))
    if unlisted:
        raise MessageError(f"{path}: arrays {unlisted[:5]} are not listed in the manifest.")
    return index


def _read_array(
    path: str | os.PathLike,
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    name: str,
    spec: dict[str, Any],
    bound: int,
) -> np.ndarray:
    """One array: vet its npy header against the manifest and bound, then read the data."""
    what = f"{path}: array {name!r}"
    with zf.open(info) as raw:
        reader = _CappedReader(raw, min(_NPY_HEADER_MAX, info.file_size), f"{what} header")
        shape, fortran_order, dtype = _read_npy_header(reader, what)
        if fortran_order:
            raise MessageError(f"{what} is stored in Fortran order; C order is required.")
        if not _plain_numeric(dtype):
            raise MessageError(
                f"{what} has dtype {_short(dtype)}; only bool, integer and float arrays are "
                "accepted."
            )
        if dtype.str != spec["dtype"] or list(shape) != spec["shape"]:
            raise MessageError(
                f"{what} has the wrong dtype or shape: {dtype.str} {list(shape)} in the file, "
                f"{_short(spec['dtype'])} {_short(spec['shape'])} in the manifest."
            )
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > bound:
            raise MessageError(f"{what} holds {nbytes} bytes of data; at most {bound} allowed.")
        if reader.count + nbytes != info.file_size:
            raise MessageError(
                f"{what}: the zip entry declares {info.file_size} bytes, the npy header "
                f"implies {reader.count + nbytes} (truncated or tampered?)."
            )
        reader.limit, reader.what = reader.count + nbytes, what
        data = reader.read_exact(nbytes)
    if reader.sha.hexdigest() != spec["sha256"]:
        raise MessageError(f"{what} fails its checksum (tampered?).")
    if dtype.kind == "b" and nbytes and np.frombuffer(data, np.uint8).max() > 1:
        raise MessageError(f"{what} is boolean but holds bytes other than 0 and 1.")
    return np.frombuffer(data, dtype=dtype).reshape(shape)  # writable: data is a bytearray


def _read_npy_header(reader: _CappedReader, what: str) -> tuple[tuple, bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` from an npy header (format 1.0 or 2.0)."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(reader)
        if version == (1, 0):
            return fmt.read_array_header_1_0(reader)
        if version == (2, 0):
            return fmt.read_array_header_2_0(reader)
    except (MessageError, zipfile.BadZipFile, zlib.error, EOFError):
        raise  # the file's own errors, reported as such by read_container
    except Exception as exc:
        # numpy parses the (at most ~10 kB) header with ast / tokenize / np.dtype, whose
        # failures on hostile text are not one fixed set of exception types.
        raise MessageError(
            f"{what}: bad npy header ({type(exc).__name__}: {_short(exc, 200)})."
        ) from exc
    raise MessageError(f"{what}: unsupported npy format version {version}.")


def _plain_numeric(dtype: np.dtype) -> bool:
    """True for bool, signed / unsigned integer and float dtypes (no fields, no subarrays)."""
    return (
        dtype.kind in ("b", "i", "u", "f")
        and dtype.names is None
        and dtype.subdtype is None
        and not dtype.hasobject
    )


def _short(value: object, limit: int = 60) -> str:
    """``repr`` (or ``str`` for exceptions) of an untrusted value, cut to ``limit`` chars."""
    text = str(value) if isinstance(value, BaseException) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
