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

from dataclasses import dataclass

import numpy as np

from vertimrf.errors import MessageError, RecordIDError
from vertimrf.party.keys import HashKeys
from vertimrf.party.registers import keyed_prf
from vertimrf.privacy.samplers import KeyedSampler
from vertimrf.protocol.regions import RegionNoise, regions_of

__all__ = ["Tokens", "dummy_counts", "make_tokens", "record_slots"]

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
    record_keys = HashKeys.from_secret(secret, 1, context=_TOKEN_CONTEXT + context)
    real = keyed_prf(record_keys, fingerprints)
    dummy_keys = HashKeys.from_secret(secret, 1, context=_DUMMY_CONTEXT + context + admit)
    counts = dummy_counts(secret, context, admit, noise, index)
    inputs = [
        (np.uint64(region) << np.uint64(_REGION_BITS)) + np.arange(d, dtype=np.uint64)
        for region, d in counts.items()
    ]
    dummies = keyed_prf(dummy_keys, np.concatenate(inputs) if inputs else np.empty(0, np.uint64))
    tokens = np.concatenate((real, dummies))
    order = np.argsort(tokens, kind="stable")
    ordered = tokens[order]
    repeats = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
    if repeats:
        raise RecordIDError(
            f"{repeats + 1} tokens repeat: records carry duplicated IDs (or, with probability "
            "about n^2 / 2^64, two IDs collide); deduplicate the rows first."
        )
    position = np.empty(tokens.size, np.int64)
    position[order] = np.arange(tokens.size)
    return Tokens(ordered, position[: real.size])


def record_slots(tokens: Tokens, slots: np.ndarray) -> np.ndarray:
    """Each record's slot (int64, in record order) from the ``slots`` the server gave the
    sorted token list, one per token in that order."""
    if slots.shape != tokens.sorted.shape:
        raise MessageError(
            f"the server sent {slots.size} slots for {tokens.sorted.size} tokens; the run's "
            "messages are mixed up: start the step again from the server's slot message."
        )
    return np.asarray(slots, np.int64)[tokens.position]
