"""A party's tokens when the parties' record sets differ (``record_sets="partial"``).

A record's token is a PRF of its ID fingerprint (SipHash-2-4) under a key derived from the
group secret and the run: the parties that hold a record make the same token, and the
server, which never holds the group secret, can neither invert a token nor test an ID.

For every region T that holds the party (:mod:`vertimrf.protocol.regions`), the party adds
d_T dummy tokens, PRF values of (T, i) for i < d_T under a second key. d_T = offset + Z_T,
Z_T a discrete Gaussian clipped to [-offset, offset], drawn from an AES-CTR stream
(:class:`~vertimrf.privacy.samplers.KeyedSampler`) keyed by the group secret, the run, T and
the admit digest (the digest of every party's data commitment). So the parties in T make the
same dummies without talking, a re-run on the same data makes the same ones, and a changed
table at any party makes fresh ones: the same dummy count never hides two different region
counts.

The party sends its tokens sorted (real and dummy mixed; the order says nothing), and reads
back one slot per token in that order (:func:`record_slots`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import MessageError, RecordIDError
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import keyed_prf
from vertimrf.privacy.samplers import KeyedSampler
from vertimrf.protocol.regions import RegionNoise, regions_of

__all__ = [
    "Tokens",
    "check_slot_count",
    "dummy_counts",
    "dummy_tokens",
    "make_tokens",
    "records_digest",
    "record_slots",
    "record_tokens",
    "repeats_error",
]

_TOKEN_CONTEXT = b"vertimrf/record-token"
_DUMMY_CONTEXT = b"vertimrf/dummy-token"
_REGION_BITS = 40  # a dummy's PRF input: its region above bit 40, its index below


def dummy_counts(
    secret: bytes, context: bytes, admit: bytes, noise: RegionNoise, index: int
) -> dict[int, int]:
    """d_T for every region T holding party ``index``: the offset plus a discrete
    Gaussian clipped to [-offset, offset], drawn from the region's own keyed stream."""
    out = {}
    for region in regions_of(noise.m, index):
        sampler = KeyedSampler(secret, "region-dummies", context, admit, str(region))
        z = int(sampler.discrete_gaussian(noise.sigma, 1)[0])
        out[region] = noise.offset + min(max(z, -noise.offset), noise.offset)
    return out


@dataclass(frozen=True)
class Tokens:
    """A party's sorted token list (``sorted``, uint64: its records' tokens and its
    dummies) and where each record's token sits in it (``position``, in record order)."""

    sorted: np.ndarray
    position: np.ndarray


def record_tokens(fingerprints: np.ndarray, secret: bytes, context: bytes) -> np.ndarray:
    """The token of each record (uint64, in record order) from its ID ``fingerprints``: a
    PRF keyed by the group secret and the run alone, so it does not change with the admit
    digest."""
    keys = HashKeys.from_secret(secret, 1, context=_TOKEN_CONTEXT + context)
    return keyed_prf(keys, fingerprints)


def dummy_tokens(
    secret: bytes, context: bytes, admit: bytes, noise: RegionNoise, index: int
) -> np.ndarray:
    """Party ``index``'s dummy tokens (uint64, sorted): d_T of them for every region T
    holding it (:func:`dummy_counts`)."""
    keys = HashKeys.from_secret(secret, 1, context=_DUMMY_CONTEXT + context + admit)
    counts = dummy_counts(secret, context, admit, noise, index)
    inputs = [
        (np.uint64(region) << np.uint64(_REGION_BITS)) + np.arange(d, dtype=np.uint64)
        for region, d in counts.items()
    ]
    return np.sort(keyed_prf(keys, np.concatenate(inputs) if inputs else np.empty(0, np.uint64)))


def repeats_error(repeats: int) -> RecordIDError:
    """The error of a token list in which ``repeats`` neighbours repeat a token."""
    return RecordIDError(
        f"{repeats + 1} tokens repeat: records carry duplicated IDs (or, with probability "
        "about n^2 / 2^64, two IDs collide); deduplicate the rows first."
    )


def make_tokens(
    fingerprints: np.ndarray,
    secret: bytes,
    context: bytes,
    admit: bytes,
    noise: RegionNoise,
    index: int,
) -> Tokens:
    """Party ``index``'s tokens: one per record (RecordIDError when two records share a
    token, i.e. an ID) and its dummies for every region that holds it."""
    real = record_tokens(fingerprints, secret, context)
    tokens = np.concatenate((real, dummy_tokens(secret, context, admit, noise, index)))
    order = np.argsort(tokens, kind="stable")
    ordered = tokens[order]
    repeats = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
    if repeats:
        raise repeats_error(repeats)
    position = np.empty(tokens.size, np.int64)
    position[order] = np.arange(tokens.size)
    return Tokens(ordered, position[: real.size])


def records_digest(
    count: int, width: int, fingerprints: Iterable[np.ndarray], codes: Iterable[np.ndarray]
) -> str:
    """The digest of a party's ``count`` records of ``width`` columns in the order of their
    tokens (hex): SHA-256 of the length-prefixed ID fingerprints (8-byte little-endian) and
    then the codes (4-byte little-endian), each given by blocks in token order, so that a
    table held in memory and one sorted through files give the same digest."""
    h = hashlib.sha256()
    for blocks, dtype, size in ((fingerprints, "<u8", 8), (codes, "<i4", 4 * width)):
        h.update((size * count).to_bytes(8, "little"))
        for block in blocks:
            h.update(np.ascontiguousarray(block, dtype).data)
    return h.hexdigest()


def check_slot_count(slots: int, tokens: int) -> None:
    """MessageError unless the server sent one slot for each of the ``tokens`` tokens."""
    if slots != tokens:
        raise MessageError(
            f"the server sent {slots} slots for {tokens} tokens; the run's messages are mixed "
            "up: start the step again from the server's slot message."
        )


def record_slots(tokens: Tokens, slots: np.ndarray) -> np.ndarray:
    """Each record's slot (int64, in record order) from the ``slots`` the server gave the
    sorted token list, one per token in that order."""
    check_slot_count(slots.size, tokens.sorted.size)
    return np.asarray(slots, np.int64)[tokens.position]
