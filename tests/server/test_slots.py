"""The server's slots: the region counts it sees are exactly each region's records plus its
dummies (brute force over random sets of 2 and 3 parties), a record every holder lays out
at one slot, distinct tokens at distinct slots, the streamed merge the same as the whole
lists' (any block size), the injection uniform, and a party's slots distributed the same
whether or not a peer holds one of its records (no membership leak)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from vertimrf.crypto.prp import KeyedPermutation
from vertimrf.crypto.schedule import derive
from vertimrf.errors import ConfigError, MessageError
from vertimrf.party.records.tokens import TokenKeys, dummy_counts, make_tokens, record_slots
from vertimrf.protocol.regions import RegionNoise, regions_of
from vertimrf.server.slots import ArrayTokens, assign_slots, merged

SECRET, SERVER, RUN, ADMIT = bytes(range(32)), bytes(range(1, 33)), b"run-1", bytes(32)


def _sets(m, n, overlap, rng):
    """m record sets of about n IDs each from one pool (each ID held with prob. overlap)."""
    pool = rng.permutation(10 * n * m)[: 2 * n]
    held = rng.random((m, pool.size)) < overlap
    return [np.sort(pool[h]).astype(np.uint64) for h in held]


def _tokens(sets, noise, admit=ADMIT):
    keys = [TokenKeys(SECRET, bytes([i + 1]) * 32, RUN) for i in range(len(sets))]
    return [make_tokens(s, keys[i], admit, noise, i) for i, s in enumerate(sets)]


def _slots(tokens, noise, max_rows, server=SERVER):
    slots = assign_slots({i: t.sorted for i, t in enumerate(tokens)}, noise, max_rows, server,
                         RUN)  # fmt: skip
    return slots, [record_slots(t, slots.of(i)) for i, t in enumerate(tokens)]


def _run(sets, noise, max_rows, admit=ADMIT, server=SERVER):
    tokens = _tokens(sets, noise, admit)
    return tokens, *_slots(tokens, noise, max_rows, server)


@pytest.mark.parametrize("m", [2, 3])
@pytest.mark.parametrize("overlap", [1.0, 0.8, 0.3, 0.0])
def test_the_server_sees_each_regions_records_plus_its_dummies(m, overlap):
    noise = RegionNoise(m, 0.01, 1e-8, 1e-8)
    sets = _sets(m, 300, overlap, np.random.default_rng(m))
    tokens, slots, record = _run(sets, noise, 1 << 12)
    region = np.concatenate([r for _, r in merged([ArrayTokens(t.sorted) for t in tokens])])
    seen = np.bincount(region, minlength=1 << m)
    dummies = {}
    for i in range(m):
        dummies.update(dummy_counts(TokenKeys(SECRET, bytes([i + 1]) * 32, RUN), ADMIT, noise, i))
    ids = sorted(set().union(*map(set, sets)))
    for t in regions_of(m):  # brute force: the IDs held by exactly the parties in t
        held = [{int(x) for x in s} for s in sets]
        exact = sum(all((x in held[i]) == bool(t >> i & 1) for i in range(m)) for x in ids)
        assert seen[t] == exact + dummies[t]
        assert abs(slots.released[t] - exact) < 2 * noise.offset  # r = c + Z + zeta
    where = {}
    for i in range(m):
        assert record[i].min(initial=0) >= 0 and record[i].max(initial=0) < 1 << 12
        for x, slot in zip(sets[i].tolist(), record[i].tolist(), strict=True):
            assert where.setdefault(x, slot) == slot  # one slot per record at every holder
    every = np.concatenate([slots.of(i) for i in range(m)])
    assert np.unique(every).size == seen.sum()  # distinct tokens, distinct slots


def test_the_same_lists_give_the_same_slots_and_counts():
    noise = RegionNoise(2, 0.01, 1e-8, 1e-8)
    sets = _sets(2, 200, 0.5, np.random.default_rng(0))
    (_, first, _), (_, again, _) = _run(sets, noise, 4096), _run(sets, noise, 4096)
    assert first.released == again.released and first.digest == again.digest
    for i in range(2):
        np.testing.assert_array_equal(first.of(i), again.of(i))


def test_too_few_rows_stop_the_run_with_one_line():
    noise = RegionNoise(2, 0.01, 1e-8, 1e-8)
    sets = _sets(2, 500, 0.5, np.random.default_rng(1))
    with pytest.raises(ConfigError, match="larger public max_rows") as caught:
        _run(sets, noise, 700)
    assert "\n" not in str(caught.value)
    for step in (1, 2, 8):  # out of order within a block or across two
        for bad in ([3, 1], [1, 1], [1, 4, 4, 6]):
            with pytest.raises(MessageError, match="not sorted"):
                assign_slots({0: np.array(bad, np.uint64), 1: np.array([2], np.uint64)}, noise,
                             99, SERVER, RUN, step=step)  # fmt: skip


def _reference(lists):
    """The distinct tokens, their regions and each list's ranks, from the whole lists."""
    distinct = np.unique(np.concatenate([np.empty(0, np.uint64), *lists]))
    region = np.zeros(distinct.size, np.int64)
    for i, tokens in enumerate(lists):
        region[np.searchsorted(distinct, tokens)] |= 1 << i
    return distinct, region, [np.searchsorted(distinct, t) for t in lists]


def _lists(rng, sizes, pool):
    return [np.sort(rng.choice(pool, size, replace=False)).astype(np.uint64) for size in sizes]


@pytest.mark.parametrize("step", [1, 3, 4, 64, 1 << 18])
@pytest.mark.parametrize(
    "sizes", [[40, 25], [30, 0, 17], [0, 0], [16, 16, 16], [64, 1], [33, 12, 4], [0, 9]]
)
def test_the_streamed_merge_and_slots_are_the_whole_lists(step, sizes):
    """Random lists of 2 and 3 parties (empty ones, lengths on block boundaries): the merge
    by blocks gives the distinct tokens and regions of the whole lists, and each party's
    slots are pi of the ranks of its tokens among them."""
    rng = np.random.default_rng(sum(sizes) + step)
    lists = _lists(rng, sizes, np.arange(1, 90))
    distinct, region, ranks = _reference(lists)
    pieces = list(merged([ArrayTokens(t) for t in lists], step))
    assert all(d.size == r.size for d, r in pieces)
    got = np.concatenate([np.empty(0, np.uint64), *(d for d, _ in pieces)])
    np.testing.assert_array_equal(got, distinct)
    np.testing.assert_array_equal(np.concatenate([np.empty(0, np.int64), *(r for _, r in pieces)]),
                                  region)  # fmt: skip
    m = len(sizes)
    noise = RegionNoise(m, 50.0, 1e-2, 1e-2)
    rows = 256 + m * noise.dummy_rows
    slots = assign_slots(dict(enumerate(lists)), noise, rows, SERVER, RUN, step=step)
    whole = assign_slots(dict(enumerate(lists)), noise, rows, SERVER, RUN)
    assert slots.digest == whole.digest and slots.released == whole.released
    for i in range(m):
        np.testing.assert_array_equal(slots.of(i), slots.permutation(ranks[i]))
        np.testing.assert_array_equal(slots.of(i), whole.of(i))


def test_one_list_alone_is_merged_as_it_is():
    (tokens,) = _lists(np.random.default_rng(3), [50], np.arange(1, 200))
    pieces = list(merged([ArrayTokens(tokens)], 7))
    np.testing.assert_array_equal(np.concatenate([d for d, _ in pieces]), tokens)
    assert all(np.all(r == 1) for _, r in pieces)


def _chi_square_ok(counts, expected, cells):
    """Pearson's statistic below the 1 - 1e-6 quantile of chi-square with ``cells - 1``
    degrees of freedom (Wilson-Hilferty's approximation, z = 4.75)."""
    stat = float(((counts - expected) ** 2 / expected).sum())
    k = cells - 1
    return stat < k * (1 - 2 / (9 * k) + 4.75 * math.sqrt(2 / (9 * k))) ** 3


def test_the_injection_is_uniform():
    """The slots of ranks 1 and 3 among 5 rows, pi(1) and pi(3): every ordered pair of
    distinct slots, 20 ways, equally likely over 20,000 keys (derived from a fixed secret
    and the draw's number; a chi-square test at 1e-6)."""
    draws = [
        tuple(KeyedPermutation(derive(SERVER, "slots", str(k)), 5)(np.array([1, 3])).tolist())
        for k in range(20_000)
    ]
    pairs = list(itertools.permutations(range(5), 2))
    counts = np.array([draws.count(p) for p in pairs], float)
    assert counts.sum() == 20_000 and _chi_square_ok(counts, 1000.0, len(pairs))


@pytest.mark.slow
def test_a_partys_slots_do_not_depend_on_whether_a_peer_holds_its_record():
    """Party A holds records 1 and 2; B holds record 1, or records 1 and 2. Over 3,000 runs
    (server secrets 0..2999, fixed), A's pair of slots for its two records has the same
    distribution in both worlds: each is uniform over the 56 ordered pairs of 8 rows (a
    chi-square test at 1e-6 each, and a two-sample test between the worlds)."""
    noise = RegionNoise(2, 50.0, 1e-2, 1e-2)  # sigma 0.1: dummies only by the offset
    worlds = {"shared": [np.array([1, 2], np.uint64), np.array([1, 2], np.uint64)],
              "not shared": [np.array([1, 2], np.uint64), np.array([1], np.uint64)]}  # fmt: skip
    rows = 8 + 2 * noise.dummy_rows
    pairs = list(itertools.permutations(range(rows), 2))
    index = {p: k for k, p in enumerate(pairs)}
    tables = {}
    for world, sets in worlds.items():
        counts = np.zeros(len(pairs))
        tokens = _tokens(sets, noise)  # the parties' tokens do not depend on the server
        for s in range(3000):
            _, record = _slots(tokens, noise, rows, server=s.to_bytes(32, "big"))
            counts[index[tuple(record[0].tolist())]] += 1
        assert _chi_square_ok(counts, 3000 / len(pairs), len(pairs)), world
        tables[world] = counts
    a, b = tables["shared"], tables["not shared"]
    pooled = (a + b) / 2
    assert _chi_square_ok(np.concatenate([a, b]), np.concatenate([pooled, pooled]), len(pairs))
