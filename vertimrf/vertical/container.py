"""A versioned, checksummed, pickle-free file container for data crossing a trust boundary.

Layout (a zip file): ``manifest.json`` (format, version, JSON metadata, and for every array
its dtype, shape and SHA-256), ``manifest.sha256`` (SHA-256 of the manifest bytes), and one
``<name>.npy`` per array, read back with ``allow_pickle=False``. Writes are atomic.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile
from typing import Any

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.io import atomic_open

FORMAT = "vertimrf-container"
VERSION = 1
_MANIFEST = "manifest.json"
_MANIFEST_SUM = "manifest.sha256"


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def write_container(
    path: str | os.PathLike, kind: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]
) -> None:
    """Write ``meta`` and ``arrays`` to ``path`` atomically; object arrays are refused."""
    blobs, index = {}, {}
    for name, arr in arrays.items():
        arr = np.ascontiguousarray(arr)
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
    with atomic_open(path, "wb") as fh, zipfile.ZipFile(fh, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(_MANIFEST, mbytes)
        zf.writestr(_MANIFEST_SUM, hashlib.sha256(mbytes).hexdigest())
        for name, blob in blobs.items():
            zf.writestr(f"{name}.npy", blob)


def read_container(
    path: str | os.PathLike, kind: str
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read and verify a container written by :func:`write_container`."""
    try:
        with zipfile.ZipFile(path, "r") as zf:
            names = set(zf.namelist())
            if _MANIFEST not in names or _MANIFEST_SUM not in names:
                raise MessageError(f"{path}: not a vertimrf file (no manifest).")
            mbytes = zf.read(_MANIFEST)
            if hashlib.sha256(mbytes).hexdigest() != zf.read(_MANIFEST_SUM).decode().strip():
                raise MessageError(f"{path}: the manifest checksum does not match (tampered?).")
            manifest = json.loads(mbytes)
            _check_header(path, manifest, kind)
            arrays = {}
            for name, info in manifest["arrays"].items():
                entry = f"{name}.npy"
                if entry not in names:
                    raise MessageError(f"{path}: array {name!r} is missing (truncated file?).")
                blob = zf.read(entry)
                if hashlib.sha256(blob).hexdigest() != info["sha256"]:
                    raise MessageError(f"{path}: array {name!r} fails its checksum (tampered?).")
                arr = np.load(io.BytesIO(blob), allow_pickle=False)
                if arr.dtype.str != info["dtype"] or list(arr.shape) != info["shape"]:
                    raise MessageError(f"{path}: array {name!r} has the wrong dtype or shape.")
                arrays[name] = arr
    except (zipfile.BadZipFile, EOFError, OSError, ValueError, KeyError) as exc:
        if isinstance(exc, MessageError):
            raise
        raise MessageError(f"{path}: unreadable or truncated file ({exc}).") from None
    return manifest["meta"], arrays


def _check_header(path: str | os.PathLike, manifest: dict, kind: str) -> None:
    if manifest.get("format") != FORMAT:
        raise MessageError(f"{path}: unknown format {manifest.get('format')!r}.")
    if manifest.get("version") != VERSION:
        raise MessageError(
            f"{path}: file version {manifest.get('version')!r} is not supported (this "
            f"vertimrf reads version {VERSION}); re-create it with a matching vertimrf."
        )
    if manifest.get("kind") != kind:
        raise MessageError(f"{path}: holds a {manifest.get('kind')!r}, expected a {kind!r}.")
