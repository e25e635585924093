"""Hand-built containers for the hostile-input tests: npy headers, manifests and zips written
byte by byte (so sizes and checksums can lie), zip bombs of ~1 MB that inflate to 1 GiB, and
the time and memory a read takes."""

from __future__ import annotations

import hashlib
import io
import json
import resource
import struct
import sys
import time
import tracemalloc
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vertimrf.container import FORMAT, VERSION

KIND = "party-message"


MiB = 1 << 20


GiB = 1 << 30


# --------------------------------------------------------------------------- file builders
def npy(descr: str, shape: tuple[int, ...], data: bytes, fortran: bool = False) -> bytes:
    """An npy file with a hand-written header (so hostile dtypes can be crafted)."""
    buf = io.BytesIO()
    header = {"descr": descr, "fortran_order": fortran, "shape": shape}
    np.lib.format.write_array_header_1_0(buf, header)
    return buf.getvalue() + data


def make_manifest(index: dict, **changes: object) -> dict:
    manifest = {"format": FORMAT, "version": VERSION, "kind": KIND, "meta": {}, "arrays": index}
    manifest.update(changes)
    return manifest


def raw_zip(path: Path, entries: list[tuple[str, bytes, int, int, int]]) -> Path:
    """A zip written byte by byte: ``(name, payload, crc, declared_size, method)`` entries.

    The declared uncompressed size goes into both the local and the central header, so a
    test can make it lie about what the payload really decompresses to.
    """
    central, offset = [], 0
    with open(path, "wb") as fh:
        for name, payload, crc, size, method in entries:
            fname = name.encode()
            fh.write(
                struct.pack(
                    "<4sHHHHHIIIHH",
                    *(b"PK\x03\x04", 20, 0, method, 0, 0x21, crc, len(payload), size),
                    *(len(fname), 0),
                )
                + fname
            )
            fh.write(payload)
            central.append(
                struct.pack(
                    "<4sHHHHHHIIIHHHHHII",
                    *(b"PK\x01\x02", 20, 20, 0, method, 0, 0x21, crc, len(payload), size),
                    *(len(fname), 0, 0, 0, 0, 0, offset),
                )
                + fname
            )
            offset += 30 + len(fname) + len(payload)
        directory = b"".join(central)
        fh.write(directory)
        n = len(entries)
        fh.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, n, n, len(directory), offset, 0))
    return path


# --------------------------------------------------------------------------- zip bombs
BOMB_ITEMS = GiB  # the bomb's array: 1 GiB of uint8 zeros


BOMB_CHUNKS = BOMB_ITEMS // MiB


def deflated_zeros(header: bytes, chunks: int) -> bytes:
    """Raw DEFLATE of ``header`` + ``chunks`` MiB of zeros, built without the zeros.

    After a full flush the compressor starts afresh, so one compressed MiB of zeros can be
    repeated: ~1 kB per MiB, i.e. ~1 MB for 1 GiB.
    """
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(header) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(bytes(MiB)) + comp.flush(zlib.Z_FULL_FLUSH)
    return head + block * chunks + comp.flush()


def crc_of_zeros(header: bytes, chunks: int) -> int:
    crc, zero = zlib.crc32(header), bytes(MiB)
    for _ in range(chunks):
        crc = zlib.crc32(zero, crc)
    return crc


def bomb(
    path: Path, header_items: int, declared: int, crc: int, digest: str, name: str = "x"
) -> Path:
    """A container whose one array entry ``name`` inflates to a header + 1 GiB of zeros."""
    header = npy("|u1", (header_items,), b"")
    index = {name: {"dtype": "|u1", "shape": [header_items], "sha256": digest}}
    mbytes = json.dumps(make_manifest(index)).encode()
    msum = hashlib.sha256(mbytes).hexdigest().encode()
    stored = zipfile.ZIP_STORED
    return raw_zip(
        path,
        [
            ("manifest.json", mbytes, zlib.crc32(mbytes), len(mbytes), stored),
            ("manifest.sha256", msum, zlib.crc32(msum), len(msum), stored),
            (
                f"{name}.npy",
                deflated_zeros(header, BOMB_CHUNKS),
                crc,
                declared,
                zipfile.ZIP_DEFLATED,
            ),
        ],
    )


def maxrss_bytes() -> int:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def measure(fn: Callable[[], object]) -> tuple[float, int, int, object]:
    """``(seconds, tracemalloc peak, ru_maxrss growth, result or exception)`` of ``fn()``.

    The time is taken in a plain run, the memory in a second run under tracemalloc (which
    sees Python objects, numpy buffers and zlib's state); ru_maxrss growth is the rise of
    the process's peak resident size over both runs, an upper bound on extra RSS used.
    """

    def run() -> object:
        try:
            return fn()
        except Exception as exc:
            return exc

    rss0 = maxrss_bytes()
    t0 = time.perf_counter()
    outcome = run()
    seconds = time.perf_counter() - t0
    tracemalloc.start()
    try:
        run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return seconds, peak, maxrss_bytes() - rss0, outcome
