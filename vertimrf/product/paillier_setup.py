"""The encrypter's one-time setup of the dealer-free product (docs/design/protocol.md): its
randomisers, made before the data exists, written block by block to a file with progress,
and resumed from the last whole block after a stop."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import gmpy2

from vertimrf.crypto.paillier import (
    Powers,
    PublicKey,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
    randomisers,
)
from vertimrf.crypto.schedule import mac
from vertimrf.errors import ConfigError
from vertimrf.product.paillier import Randomisers

MAGIC = b"vertimrf/paillier-randomisers/v1\n"
BLOCK = 4096  # randomisers a block (2 MB at 2048 bits)
Progress = Callable[[int, int], None]  # (made so far, in all)


def _header(key: bytes, public: PublicKey, count: int) -> bytes:
    """The file's first bytes: the format, a MAC of the public key under the stream's key
    (so a file of other inputs is refused, and the file names neither) and the count."""
    return MAGIC + mac(key, public.to_bytes()) + count.to_bytes(8, "little")


def setup_randomisers(
    path: Path,
    table: Powers,
    public: PublicKey,
    key: bytes,
    count: int,
    *,
    block: int = BLOCK,
    progress: Progress | None = None,
) -> Path:
    """Randomisers 0:``count`` of the stream ``key`` (:func:`~vertimrf.crypto.paillier.
    randomisers`) in ``path``, made into ``path``.part block by block (each block flushed to
    disk, then ``progress(made, count)``) and renamed when whole. A part file of the same
    inputs resumes from its last whole block; a finished file of the same inputs is kept as
    it is (nothing made again). A file of other inputs is refused, never overwritten."""
    head = _header(key, public, count)
    part = path.with_name(path.name + ".part")
    for existing in (path, part):
        if existing.exists() and _read_head(existing, len(head)) != head:
            raise ConfigError(
                f"{existing}: randomisers of another key, run or count; remove the file or "
                "give another path."
            )
    if path.exists():
        return path
    size = public.ciphertext_bytes
    made = (part.stat().st_size - len(head)) // size // block * block if part.exists() else 0
    made = max(0, min(made, count))
    with open(part, "r+b" if part.exists() else "w+b") as out:
        out.seek(0)
        out.write(head)
        out.truncate(len(head) + made * size)
        out.seek(len(head) + made * size)
        for start in range(made, count, block):
            stop = min(count, start + block)
            out.write(ciphertexts_to_bytes(public, randomisers(table, key, start, stop - start)))
            out.flush()
            os.fsync(out.fileno())
            if progress is not None:
                progress(stop, count)
    os.replace(part, path)
    return path


def stored(path: Path, public: PublicKey, key: bytes, count: int) -> Randomisers:
    """The randomisers of a finished :func:`setup_randomisers` file of these inputs, read
    when asked (a :data:`~vertimrf.product.paillier.Randomisers` for
    :func:`~vertimrf.product.paillier.encrypted_rows`): the file's head is checked once
    here, ConfigError for a file of other inputs; a range past its end, when read."""
    head = _header(key, public, count)
    if _read_head(path, len(head)) != head:
        raise ConfigError(f"{path}: randomisers of another key, run or count; run the setup again.")
    size = public.ciphertext_bytes

    def read(start: int, length: int) -> list[gmpy2.mpz]:
        if start < 0 or start + length > count:
            raise ConfigError(f"randomisers {start}:{start + length} lie past the {count} set up.")
        with open(path, "rb") as f:
            f.seek(len(head) + start * size)
            return ciphertexts_from_bytes(public, f.read(length * size))

    return read


def stored_randomisers(
    path: Path, public: PublicKey, key: bytes, count: int, start: int, length: int
) -> list[gmpy2.mpz]:
    """Randomisers start:start + length of a finished setup file (:func:`stored`)."""
    return stored(path, public, key, count)(start, length)


def _read_head(path: Path, size: int) -> bytes:
    with open(path, "rb") as f:
        return f.read(size)
