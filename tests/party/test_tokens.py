"""A party's tokens: the same ID gives the same token at every party, the parties of a
region make the same dummies (count and values) without talking, a party's own region's
dummies come from its own secret, a changed admit digest (another party's corrected data or
key) gives fresh tokens and dummies, and a repeated ID is refused."""

from __future__ import annotations

import numpy as np
import pytest

from vertimrf.errors import MessageError, RecordIDError
from vertimrf.party.records.tokens import (
    TokenKeys,
    dummy_counts,
    dummy_tokens,
    make_tokens,
    order_tokens,
    record_slots,
)
from vertimrf.protocol.regions import RegionNoise, regions_of

SECRET, RUN, ADMIT = bytes(range(32)), b"run-1", bytes(32)
NOISE = RegionNoise(3, 0.005, 1e-8, 1e-8)


def _keys(i, group=SECRET):
    """Party i's token keys: the group secret, its own secret and the run."""
    return TokenKeys(group, bytes([i + 1]) * 32, RUN)


def _fingerprints(ids):
    return np.asarray(ids, np.uint64) * np.uint64(0x9E3779B97F4A7C15)  # any distinct words


def _tokens(ids, i, admit=ADMIT, noise=NOISE):
    keys = _keys(i)
    return make_tokens(order_tokens(_fingerprints(ids), keys), keys, admit, noise, i)


def test_shared_records_and_region_dummies_give_the_same_tokens_at_every_holder():
    a = _tokens(range(0, 60), 0)
    b = _tokens(range(40, 100), 1)
    real_a, real_b = a.sorted[a.position], b.sorted[b.position]
    np.testing.assert_array_equal(real_a[40:], real_b[:20])  # IDs 40..59: both hold them
    assert not set(real_a[:40].tolist()) & set(real_b[20:].tolist())
    counts = {i: dummy_counts(_keys(i), ADMIT, NOISE, i) for i in range(3)}
    for region in regions_of(3):
        holders = [i for i in range(3) if region >> i & 1]
        assert len({counts[i][region] for i in holders}) == 1
        assert 0 <= counts[holders[0]][region] <= 2 * NOISE.offset
    # the dummies of region {A, B} (mask 3) are in both lists, those of {A} in A's only
    dummies_a = set(a.sorted.tolist()) - set(real_a.tolist())
    dummies_b = set(b.sorted.tolist()) - set(real_b.tolist())
    shared = counts[0][3] + counts[0][7]  # regions {A, B} and {A, B, C}
    assert len(dummies_a & dummies_b) == shared
    assert len(dummies_a) == sum(counts[0].values()) and a.sorted.size == 60 + len(dummies_a)
    assert bool(np.all(a.sorted[1:] > a.sorted[:-1]))


def test_the_same_inputs_give_the_same_tokens_and_a_changed_admit_digest_fresh_ones():
    """A changed admit digest (any party's data or key) shares no token, real or dummy,
    with the first list: the server cannot match the records of two runs."""
    first, again = (_tokens(range(30), 0) for _ in range(2))
    np.testing.assert_array_equal(first.sorted, again.sorted)
    other = _tokens(range(30), 0, admit=bytes([1] * 32))
    assert not set(first.sorted.tolist()) & set(other.sorted.tolist())
    assert dummy_counts(_keys(0), ADMIT, NOISE, 0) != dummy_counts(
        _keys(0), bytes([1] * 32), NOISE, 0
    )


def test_a_partys_own_region_dummies_come_from_its_own_secret():
    """A peer holding the group secret (party 1 given party 0's group secret and the run)
    makes the dummies of every region it shares with party 0, but none of region {0}'s:
    those change with party 0's own secret alone."""
    region = 1  # {party 0}
    noise = RegionNoise(2, 0.01, 1e-8, 1e-8)
    mine = dummy_tokens(_keys(0), ADMIT, noise, 0)
    peer = dummy_tokens(_keys(1), ADMIT, noise, 1)
    counts = dummy_counts(_keys(0), ADMIT, noise, 0)
    assert len(set(mine.tolist()) & set(peer.tolist())) == counts[3]  # region {0, 1}
    guessed = TokenKeys(SECRET, _keys(1).own, RUN)  # the peer's secrets, as party 0's
    assert dummy_counts(guessed, ADMIT, noise, 0)[3] == counts[3]
    assert not set(dummy_tokens(guessed, ADMIT, noise, 0).tolist()) & (
        set(mine.tolist()) - set(peer.tolist())
    )
    assert counts[region] > 0


def test_the_dummy_counts_follow_their_noise():
    """Over 400 admit digests, d_T - offset has mean 0 and standard deviation about sigma:
    the sample mean lies within 4 standard errors (sigma / 20) of 0, the sample standard
    deviation within 15% of sigma (a fixed set of digests, so the test is deterministic)."""
    noise = RegionNoise(2, 0.02, 1e-8, 1e-8)
    draws = np.array([
        dummy_counts(_keys(0), i.to_bytes(32, "big"), noise, 0)[3] - noise.offset
        for i in range(400)
    ])  # fmt: skip
    assert abs(draws.mean()) < 4 * noise.sigma / 20
    assert abs(draws.std() / noise.sigma - 1) < 0.15


def test_a_repeated_id_is_refused_and_slots_must_match_the_list():
    with pytest.raises(RecordIDError, match="duplicated IDs"):
        _tokens([1, 2, 2], 0)
    tokens = _tokens(range(5), 0)
    slots = np.arange(tokens.sorted.size) * 3
    np.testing.assert_array_equal(record_slots(tokens, slots), slots[tokens.position])
    with pytest.raises(MessageError, match="slots for"):
        record_slots(tokens, slots[:-1])
