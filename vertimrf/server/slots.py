"""The server's slots when the parties' record sets differ (``record_sets="partial"``).

The server matches the parties' token lists (:mod:`vertimrf.party.tokens`): a token held by
exactly the parties in T lies in region T (:mod:`vertimrf.protocol.regions`), so it sees
each region's count plus its dummies, v_T = c_T + d_T. It gives every distinct token a slot,
a uniformly random injection of the distinct tokens into the public ``max_rows`` rows, and
returns each party the slots of its own tokens only: the restriction of a uniform injection
to a party's tokens is a uniform injection of them, whatever the other parties hold, so a
party's slots say nothing of who else holds its records.

It publishes the region counts r_T = v_T - offset + zeta_T with its own discrete Gaussian
zeta_T, and stops the run (one line) unless they leave room for every token
(:meth:`RegionNoise.goes_on`). Every draw comes from an AES-CTR stream keyed by the server's
own secret, the run and the digest of every token list, so a re-run on the same lists writes
the same slots and counts and releases nothing new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import ConfigError, MessageError
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler
from vertimrf.protocol.regions import RegionNoise, regions_of

__all__ = ["Slots", "assign_slots", "match_tokens", "uniform_injection"]


def match_tokens(lists: Mapping[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tokens (sorted) of the parties' sorted ``lists`` (by party index) and
    the region of each (the bit mask of the parties holding it); MessageError for a list
    that is not strictly increasing."""
    for index, tokens in lists.items():
        if tokens.ndim != 1 or bool(np.any(tokens[1:] <= tokens[:-1])):
            raise MessageError(
                f"party {index}'s token list is not sorted without repeats; have the party "
                "send its tokens again."
            )
    distinct = np.unique(np.concatenate([np.asarray(t, np.uint64) for t in lists.values()]))
    region = np.zeros(distinct.size, np.int64)
    for index, tokens in lists.items():
        region[np.searchsorted(distinct, tokens)] |= 1 << index
    return distinct, region


def uniform_injection(n: int, rows: int, sampler: NoiseSampler) -> np.ndarray:
    """A uniformly random injection of n items into ``rows`` slots (int64, item i's slot):
    the first n of a uniform permutation, the order of ``rows`` random 63-bit keys. A tie
    between two keys (probability below rows^2 / 2^64) draws all keys again, so the
    permutation is exactly uniform (the keys are exchangeable)."""
    if n > rows:
        raise ConfigError(f"{n} tokens do not fit in {rows} rows.")
    while True:
        keys = sampler.integers(1 << 63, rows)
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
        if not bool(np.any(ranked[1:] == ranked[:-1])):
            return order[:n].astype(np.int64)


@dataclass(frozen=True)
class Slots:
    """The slot assignment of one run: each party's slots (in its list's order), the
    published region counts (by region mask) and the assignment's digest (SHA-256 of every
    distinct token and its slot), which binds the deal's masks to these slots."""

    slots: dict[int, np.ndarray]
    released: dict[int, int]
    digest: bytes


def assign_slots(
    lists: Mapping[int, np.ndarray],
    noise: RegionNoise,
    max_rows: int,
    server_secret: bytes,
    context: bytes,
) -> Slots:
    """Match the token lists, publish the region counts and give each party its slots;
    ConfigError (one line) when the published counts leave too few rows."""
    if sorted(lists) != list(range(noise.m)):
        raise MessageError(f"the slots need every party's tokens; got parties {sorted(lists)}.")
    distinct, region = match_tokens(lists)
    lists_digest = hashlib.sha256()
    for index in range(noise.m):
        lists_digest.update(np.ascontiguousarray(lists[index], "<u8").tobytes())
    label = (context, lists_digest.digest())
    seen = np.bincount(region, minlength=1 << noise.m)
    zeta = KeyedSampler(server_secret, "region-counts", *label).discrete_gaussian(
        noise.sigma, noise.regions
    )
    released = {
        t: int(seen[t]) - noise.offset + int(z)
        for t, z in zip(regions_of(noise.m), zeta, strict=True)
    }
    if not noise.goes_on(released, max_rows) or distinct.size > max_rows:
        need = sum(released.values()) + noise.regions * (noise.offset + noise.margin)
        raise ConfigError(
            f"the parties' records and dummies need about {need} rows, more than max_rows "
            f"{max_rows}: make a new config with a larger public max_rows."
        )
    slot = uniform_injection(distinct.size, max_rows, KeyedSampler(server_secret, "slots", *label))
    digest = hashlib.sha256(distinct.astype("<u8").tobytes() + slot.astype("<i8").tobytes())
    return Slots(
        {i: slot[np.searchsorted(distinct, t)] for i, t in lists.items()},
        released,
        digest.digest(),
    )
