"""LocEnc registers before DP noise: min keyed hashes per (key, attribute
value); design notes in docs/design/party.md."""

from __future__ import annotations

import numba
import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, KeyMaterialError, RecordIDError
from vertimrf.kernels.hashing import siphash24_array
from vertimrf.kernels.registers import (
    EMPTY_REGISTER,
    geometric_clz,
    geometric_table,
    hash_registers,
)
from vertimrf.party.keys import HashKeys
from vertimrf.privacy.fm import check_gamma, geometric_thresholds

__all__ = [
    "DEFAULT_HASH",
    "EMPTY_REGISTER",
    "HASHES",
    "compute_registers",
    "merge_registers",
    "registers_to_geometric",
]

HASHES = ("siphash24", "xxh64")
DEFAULT_HASH = "siphash24"
_MAX_CODE_TYPES = ((256, np.uint8), (65536, np.uint16))


def _slot_layout(offsets_or_domain: Domain | np.ndarray, d: int) -> tuple[np.ndarray, int]:
    """Start slot of each of the ``d`` attributes, and the total number of slots."""
    if isinstance(offsets_or_domain, Domain):
        bounds = np.concatenate(([0], np.cumsum(offsets_or_domain.sizes))).astype(np.int64)
    else:
        raw = np.asarray(offsets_or_domain)
        if raw.ndim != 1 or raw.dtype.kind not in "iu":
            raise DomainError(
                "offsets must be a Domain or a 1-D integer array of d + 1 slot boundaries "
                f"(0, u_0, u_0 + u_1, ..., sum u); got {raw.dtype} with shape {raw.shape}."
            )
        bounds = raw.astype(np.int64)
        if bounds.size == d and d > 0:
            raise DomainError(
                f"offsets has {d} entries for {d} attributes, so the last domain size is unknown. "
                "Pass the Domain itself, or np.append(domain.offsets, sum(domain.sizes))."
            )
        if bounds.size != d + 1 or bounds[0] != 0 or np.any(np.diff(bounds) < 1):
            raise DomainError(
                f"offsets must be {d + 1} strictly increasing slot boundaries starting at 0 "
                f"(one more than the {d} code columns); got {bounds.tolist()}."
            )
    if bounds.size != d + 1:
        raise DomainError(
            f"The domain has {bounds.size - 1} attributes but codes has {d} columns; "
            "pass the codes of exactly the domain's attributes, in order."
        )
    return bounds[:-1].copy(), int(bounds[-1])


def _code_matrix(codes: np.ndarray) -> np.ndarray:
    arr = np.asarray(codes)
    if arr.ndim != 2 or arr.dtype.kind not in "iu":
        raise DomainError(
            "codes must be a 2-D integer array (rows x attributes) of value codes; "
            f"got {arr.dtype} with shape {arr.shape}. Encode the table with the TableEncoder."
        )
    return arr


def _checked_codes(arr: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Codes as C-contiguous writable uint8 or uint16, after checking ``0 <= code < size``."""
    if arr.shape[0] > 0:
        low = arr.min(axis=0)
        high = arr.max(axis=0)
        for j in np.flatnonzero((low < 0) | (high >= sizes)):
            bad = int(np.count_nonzero((arr[:, j] < 0) | (arr[:, j] >= sizes[j])))
            raise DomainError(
                f"Attribute {j} has {bad} rows with codes outside 0..{sizes[j] - 1} "
                f"(its domain size is {sizes[j]}). Re-encode the column with the public domain."
            )
    largest = int(sizes.max()) if sizes.size else 1
    target = next((dt for limit, dt in _MAX_CODE_TYPES if largest <= limit), None)
    if target is None:
        raise DomainError(
            f"A domain size of {largest} is above the supported 65536 values per attribute; "
            "bin the attribute more coarsely."
        )
    if arr.dtype not in (np.dtype(np.uint8), np.dtype(np.uint16)):
        arr = arr.astype(target)
    return np.require(arr, requirements=["C", "W"])


def compute_registers(
    codes: np.ndarray,
    offsets_or_domain: Domain | np.ndarray,
    fingerprints: np.ndarray,
    keys: HashKeys,
    *,
    hash: str | None = None,
) -> np.ndarray:
    """Min-hash registers ``(t, sum u)`` uint64 of a party's rows, before any DP noise.

    ``codes`` (n, d) holds value codes of d attributes, ``offsets_or_domain`` their
    :class:`Domain` (or the d + 1 slot boundaries), ``fingerprints`` (n,) uint64 the record
    IDs from :func:`record_fingerprints`, ``keys`` the shared :class:`HashKeys`, and ``hash``
    ``"siphash24"`` (default, a keyed PRF) or ``"xxh64"`` (faster, not a PRF).
    """
    hash_name = DEFAULT_HASH if hash is None else hash
    if hash_name not in HASHES:
        raise ConfigError(f"hash must be one of {HASHES}; got {hash!r}.")
    if not isinstance(keys, HashKeys):
        raise KeyMaterialError(
            f"keys must be HashKeys (use HashKeys.from_secret); got {type(keys).__name__}."
        )
    arr = _code_matrix(codes)
    offsets, n_slots = _slot_layout(offsets_or_domain, arr.shape[1])
    sizes = np.diff(np.append(offsets, n_slots))
    arr = _checked_codes(arr, sizes)
    if (
        not isinstance(fingerprints, np.ndarray)
        or fingerprints.dtype != np.uint64
        or fingerprints.shape != (arr.shape[0],)
    ):
        got = (
            f"{fingerprints.dtype}{fingerprints.shape}"
            if isinstance(fingerprints, np.ndarray)
            else type(fingerprints).__name__
        )
        raise RecordIDError(
            f"fingerprints must be a uint64 array with one entry per row ({arr.shape[0]}); "
            f"got {got}. Compute them with vertimrf.party.records.ids.record_fingerprints(ids)."
        )
    fps = np.require(fingerprints, requirements=["C", "W"])
    with numba.parallel_chunksize(1):
        return hash_registers(
            arr,
            offsets,
            np.array(keys.k0),
            np.array(keys.k1),
            fps,
            n_slots,
            hash_name == "siphash24",
            np.uint64(0),
        )


def _checked_registers(registers: np.ndarray, what: str) -> np.ndarray:
    if not isinstance(registers, np.ndarray) or registers.dtype != np.uint64:
        got = registers.dtype if isinstance(registers, np.ndarray) else type(registers).__name__
        raise ConfigError(f"{what} must be uint64 arrays from compute_registers; got {got}.")
    if registers.ndim != 2:
        raise ConfigError(f"{what} must be 2-D (keys x value slots); got shape {registers.shape}.")
    return registers


def merge_registers(*registers: np.ndarray) -> np.ndarray:
    """Element-wise min of registers of disjoint row shards (same keys and domain)."""
    if not registers:
        raise ConfigError("merge_registers needs at least one register array.")
    checked = [_checked_registers(r, "registers") for r in registers]
    shapes = {r.shape for r in checked}
    if len(shapes) != 1:
        raise ConfigError(
            f"Registers to merge must come from the same keys and domain; got shapes "
            f"{sorted(shapes)}."
        )
    return np.minimum.reduce(checked)


def registers_to_geometric(registers: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """Geometric values (uint8, same shape) of registers: ``G = ceil(-log_{1+gamma}(h/2**64))``.

    Empty registers give 0. ``h = 0``, where the formula is infinite, gives
    :func:`max_geometric_value`. gamma = 1 uses a leading-zero count, other gammas a binary
    search in :func:`geometric_thresholds`; no logarithm is evaluated.
    """
    regs = np.require(_checked_registers(registers, "registers"), requirements=["C", "W"])
    if check_gamma(gamma) == 1.0:
        return geometric_clz(regs)
    return geometric_table(regs, np.array(geometric_thresholds(gamma)))


def keyed_prf(keys: HashKeys, messages: np.ndarray) -> np.ndarray:
    """SipHash-2-4 of each uint64 message under the first key of ``keys`` (a keyed PRF)."""
    m = np.ascontiguousarray(messages, dtype=np.uint64)
    k0 = np.full(m.size, keys.k0[0], dtype=np.uint64)
    k1 = np.full(m.size, keys.k1[0], dtype=np.uint64)
    return siphash24_array(k0, k1, m)
