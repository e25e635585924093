"""A party's tokens with partial record sets (docs/design/party.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from vertimrf.crypto.schedule import derive
from vertimrf.errors import MessageError, RecordIDError
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.sorting import stable_order
from vertimrf.party.registers import keyed_prf
from vertimrf.privacy.samplers import KeyedSampler
from vertimrf.protocol.regions import RegionNoise, regions_of

__all__ = [
    "TokenKeys",
    "Tokens",
    "check_slot_count",
    "checked_dummies",
    "dummy_counts",
    "dummy_tokens",
    "make_tokens",
    "merged_tokens",
    "order_tokens",
    "records_digest",
    "record_slots",
    "release_tokens",
    "repeats_error",
]

_ORDER_CONTEXT = b"vertimrf/record-token"  # the order tokens' (never sent)
_TOKEN_CONTEXT = b"vertimrf/released-token"
_DUMMY_CONTEXT = b"vertimrf/dummy-token"
_REGION_BITS = 40  # a dummy's PRF input: its region above bit 40, its index below


@dataclass(frozen=True)
class TokenKeys:
    """What a party's tokens are keyed by: the ``group`` secret (the parties'), its ``own``
    secret (its local secret: its own region's dummies) and the run's ``context``."""

    group: bytes
    own: bytes
    context: bytes

    def region(self, region: int, index: int) -> tuple[bytes, str]:
        """The secret and the stream of ``region``'s dummies at party ``index``: its own
        secret for its own region {index}, else the group secret."""
        if region == 1 << index:
            return self.own, "own-dummies"
        return self.group, "region-dummies"


def dummy_counts(keys: TokenKeys, admit: bytes, noise: RegionNoise, index: int) -> dict[int, int]:
    """d_T for every region T holding party ``index``: the offset plus a discrete
    Gaussian clipped to [-offset, offset], drawn from the region's own keyed stream."""
    out = {}
    for region in regions_of(noise.m, index):
        secret, stream = keys.region(region, index)
        sampler = KeyedSampler(secret, stream, keys.context, admit, str(region))
        z = int(sampler.discrete_gaussian(noise.sigma, 1)[0])
        out[region] = noise.offset + min(max(z, -noise.offset), noise.offset)
    return out


@dataclass(frozen=True)
class Tokens:
    """A party's sorted token list (``sorted``, uint64: its records' tokens and its
    dummies) and where each record's token sits in it (``position``, in record order)."""

    sorted: np.ndarray
    position: np.ndarray


def order_tokens(fingerprints: np.ndarray, keys: TokenKeys) -> np.ndarray:
    """The order token of each record (uint64, in record order) from its ID
    ``fingerprints``: a PRF keyed by the group secret and the run alone (it does not change
    with the admit digest, so the commitment can hash the records in its order). Never
    sent."""
    prf = HashKeys.from_secret(keys.group, 1, context=_ORDER_CONTEXT + keys.context)
    return keyed_prf(prf, fingerprints)


def release_tokens(order: np.ndarray, keys: TokenKeys, admit: bytes) -> np.ndarray:
    """The token sent for each record (uint64) from its ``order`` token: a PRF keyed by the
    group secret, the run and the ``admit`` digest, so that any changed input of the run
    gives every record a fresh token."""
    key = derive(keys.group, "record-token", keys.context, admit)
    return keyed_prf(HashKeys.from_secret(key, 1, context=_TOKEN_CONTEXT), order)


def dummy_tokens(keys: TokenKeys, admit: bytes, noise: RegionNoise, index: int) -> np.ndarray:
    """Party ``index``'s dummy tokens (uint64, sorted): d_T of them for every region T
    holding it (:func:`dummy_counts`), each region's under its own secret
    (:meth:`TokenKeys.region`)."""
    pieces = [np.empty(0, np.uint64)]
    for region, d in dummy_counts(keys, admit, noise, index).items():
        secret, stream = keys.region(region, index)
        key = derive(secret, stream, keys.context, admit, "tokens")
        inputs = (np.uint64(region) << np.uint64(_REGION_BITS)) + np.arange(d, dtype=np.uint64)
        pieces.append(keyed_prf(HashKeys.from_secret(key, 1, context=_DUMMY_CONTEXT), inputs))
    return np.sort(np.concatenate(pieces))


def checked_dummies(
    record_blocks: Iterable[np.ndarray],
    keys: TokenKeys,
    admit: bytes,
    noise: RegionNoise,
    index: int,
) -> np.ndarray:
    """Party ``index``'s dummy tokens (:func:`dummy_tokens`), checked against its records'
    sorted tokens given by ``record_blocks`` (ascending blocks): RecordIDError when a token
    repeats in the list they make together."""
    dummies = dummy_tokens(keys, admit, noise, index)
    repeats = int(np.count_nonzero(dummies[1:] == dummies[:-1]))
    for block in record_blocks:
        if block.size:
            lo = np.searchsorted(dummies, block[0], side="left")
            hi = np.searchsorted(dummies, block[-1], side="right")
            inside = dummies[lo:hi]
            repeats += int(np.count_nonzero(block[np.searchsorted(block, inside)] == inside))
    if repeats:
        raise repeats_error(repeats)
    return dummies


def merged_tokens(
    record_blocks: Callable[[], Iterable[np.ndarray]], dummies: np.ndarray
) -> Iterator[np.ndarray]:
    """The records' sorted tokens (ascending blocks from ``record_blocks``) merged with the
    sorted ``dummies``: the token list, by blocks."""
    j = 0
    for block in record_blocks():
        if not block.size:
            continue
        i = int(np.searchsorted(dummies, block[-1], side="right"))
        yield np.sort(np.concatenate((block, dummies[j:i]))) if i > j else np.asarray(block)
        j = i
    if j < dummies.size:
        yield dummies[j:]


def repeats_error(repeats: int) -> RecordIDError:
    """The error of a token list in which ``repeats`` neighbours repeat a token."""
    return RecordIDError(
        f"{repeats + 1} tokens repeat: records carry duplicated IDs (or, with probability "
        "about n^2 / 2^64, two IDs collide); deduplicate the rows first."
    )


def make_tokens(
    order: np.ndarray, keys: TokenKeys, admit: bytes, noise: RegionNoise, index: int
) -> Tokens:
    """Party ``index``'s tokens: one per record, from its ``order`` token (RecordIDError
    when two records share a token, i.e. an ID), and its dummies for every region that
    holds it."""
    real = release_tokens(order, keys, admit)
    tokens = np.concatenate((real, dummy_tokens(keys, admit, noise, index)))
    order, ordered = stable_order(tokens)
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
    order tokens (hex): SHA-256 of the length-prefixed ID fingerprints (8-byte little-endian) and
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
