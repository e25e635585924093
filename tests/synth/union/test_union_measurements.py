"""The union domain's tables made from the releases: on exact releases every assembled
table is the true table of the union (brute force over the records), their sigmas follow
the stated rule, and releases that cannot make a table are refused in one line."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.synth.union.union_truth import EXACT, make_truth, releases
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.synth.union import NoisyTable, UnionDomain, union_tables
from vertimrf.synth.union.measurements import pooled

SPLITS = {
    "2 parties": ((2, 3, 4, 3), (0, 0, 1, 1)),
    "3 parties": ((2, 3, 4, 3, 2, 4), (0, 0, 1, 1, 2, 2)),
}


@pytest.mark.parametrize("split", SPLITS)
def test_every_table_from_exact_releases_is_the_true_union_table(split):
    sizes, owner = SPLITS[split]
    truth = make_truth(np.random.default_rng(1), 2000, sizes, owner)
    rel = releases(truth)
    tables = union_tables(rel)
    m = truth.parties
    # presence, own (1-ways and one 2-way per party), cross pairs, presence 1-ways
    pairs = sum(owner.count(p) * owner.count(q) for p in range(m) for q in range(p + 1, m))
    assert len(tables) == 1 + len(sizes) + m + pairs + len(sizes) * (m - 1)
    for table in tables:
        np.testing.assert_allclose(table.values, truth.union_marginal(table.attrs), atol=1e-6)
        # Cells that no record can reach are the structural zeros, and only they.
        assert table.measured_cells == int(np.count_nonzero(table.variance))
    space = UnionDomain(rel.domain, rel.owner)
    assert tables[0].attrs == tuple(space.presence(p) for p in range(m))


def test_a_cell_made_of_several_releases_adds_their_variances_and_the_table_takes_the_mean():
    truth = make_truth(np.random.default_rng(2), 500, (2, 3), (0, 1))
    rel = releases(truth)
    own = tuple(dataclasses.replace(t, sigma=2.0) for t in rel.own)
    cross = tuple(dataclasses.replace(t, sigma=3.0) for t in rel.cross)
    presence = {
        k: tuple(dataclasses.replace(t, sigma=5.0) for t in v) for k, v in rel.presence.items()
    }
    rel = dataclasses.replace(rel, own=own, cross=cross, presence=presence, region_sigma=7.0)
    (table,) = [t for t in union_tables(rel) if t.attrs == (0, 1)]
    expected = np.zeros((3, 4))
    expected[:2, :3] = 9.0  # the cross counts
    # Own minus the pooled shared counts: own (4) pooled with the presence 1-way (25).
    share = (
        rel.regions[3] / (rel.regions[1] + rel.regions[3]),
        rel.regions[3] / (rel.regions[2] + rel.regions[3]),
    )
    for a, p, q in ((0, 0, 1), (1, 1, 0)):
        (own,) = [t.values for t in rel.own if t.attrs == (a,)]
        (both,) = [t.values for t in rel.presence[(p, q)] if t.attrs == (a,)]
        rest = pooled(own, 4.0, both, 25.0, share[p]).rest_var
        assert rest < 4.0 + 25.0  # less than the unpooled sum
        if a == 0:
            expected[:2, 3] = rest
        else:
            expected[2, :3] = rest
    # (absent, absent) sums the regions holding neither party: none of two parties' regions.
    np.testing.assert_allclose(table.variance, expected)
    assert table.measured_cells == 11
    assert table.sigma == pytest.approx(np.sqrt(expected.sum() / 11))


def test_an_own_table_sums_the_smallest_release_holding_it():
    truth = make_truth(np.random.default_rng(3), 500, (2, 3, 4, 3), (0, 0, 1, 1))
    rel = releases(truth)
    # Without party 0's 1-way of attribute 1 its own counts come from the (0, 1) table.
    own = tuple(t for t in rel.own if t.attrs != (1,))
    rel = dataclasses.replace(rel, own=own)
    for table in union_tables(rel):
        np.testing.assert_allclose(table.values, truth.union_marginal(table.attrs), atol=1e-6)
    (shared,) = [t for t in union_tables(rel) if t.attrs == (1, 5)]
    # (held, P_1 = 0) = own - pooled shared: the own cell sums 2 cells of variance EXACT^2
    # and the presence 1-way has EXACT^2; pooled at weight ~1 on it, 3 EXACT^2.
    np.testing.assert_allclose(shared.variance[:3, 0], 3 * EXACT**2)


def test_releases_that_cannot_make_the_tables_are_refused_in_one_line():
    truth = make_truth(np.random.default_rng(4), 300, (2, 3, 2), (0, 1, 1))
    rel = releases(truth)
    bad = [
        {"own": (NoisyTable((0, 1), np.zeros((2, 3)), 1.0),)},
        {"cross": (NoisyTable((1, 2), np.zeros((3, 2)), 1.0),)},
        {"regions": {1: 3.0, 2: 4.0}},
        {"regions": {1: 3.0, 2: 4.0, 3: float("nan")}},
        {"region_sigma": 0.0},
        {"own": (NoisyTable((0,), np.zeros(3), 1.0),)},
        {"presence": {(1, 1): ()}},
        {"owner": (0, 2, 2)},
    ]
    for change in bad:
        with pytest.raises(ConfigError) as info:
            dataclasses.replace(rel, **change)
        assert "\n" not in str(info.value), change
    with pytest.raises(ConfigError, match="positive sigma"):
        NoisyTable((0,), np.zeros(2), 0.0)
    without = dataclasses.replace(rel, presence={})  # a cross table's own sums serve
    for table in union_tables(without):
        np.testing.assert_allclose(table.values, truth.union_marginal(table.attrs), atol=1e-6)
    clash = Domain(("present:0", "b", "c"), (2, 3, 2))
    with pytest.raises(ConfigError, match="rename"):
        UnionDomain(clash, (0, 1, 1))


def test_a_cross_table_over_three_attributes_of_two_parties_is_exact():
    """A cross table over two attributes of party 0 and one of party 1 (counted over the
    records both hold) assembles its absent cells from the own tables and its own sums:
    every cell equals the union's brute-force marginal, the partly absent cells zero."""
    truth = make_truth(np.random.default_rng(7), 600, (2, 3, 2, 3), (0, 0, 1, 1))
    rel = releases(truth)
    both = truth.holds(0) & truth.holds(1)  # brute force, one record at a time
    shared = np.zeros((2, 3, 3))
    for row in truth.codes[both]:
        shared[row[0], row[1], row[3]] += 1
    rel = dataclasses.replace(rel, cross=(*rel.cross, NoisyTable((0, 1, 3), shared, EXACT)))
    (table,) = [t for t in union_tables(rel) if t.attrs == (0, 1, 3)]
    np.testing.assert_allclose(table.values, truth.union_marginal((0, 1, 3)), atol=1e-6)


def _weight(own: np.ndarray, both: np.ndarray, share: float, noise: float) -> float:
    """The weight pooled() gives ``both`` (own and both at half the noise each)."""
    split = pooled(own, noise / 2 / share**2, both, noise / 2, share)
    gap = both - share * own
    return float((split.both - share * own)[0] / gap[0])


@pytest.mark.parametrize("k", [2, 16, 46])
def test_records_that_do_not_differ_lend_the_noisy_counts_no_weight_but_rarely(k):
    """When the peer holds a random part of p's records, the gap between the two sources is
    their noise alone. Chance put its mean square above the noise in 37-48% of these draws
    (k = 2, 16, 46) and lent the noisy counts a weight: txhousing's `year` got 0.28 and 4x its 1-way
    TVD. Now a weight comes in at most ALPHA = 1% of such runs: 2,000 fixed-seed draws, bound
    1% + 4 binomial standard deviations (sqrt(0.01 0.99 / 2000) = 0.22%)."""
    rng = np.random.default_rng(k)
    own, share, noise = np.full(k, 400.0), 0.8, 900.0
    weighted = sum(
        _weight(own, share * own + rng.normal(0, np.sqrt(noise), k), share, noise) > 0
        for _ in range(2000)
    )
    assert weighted / 2000 <= 0.01 + 4 * np.sqrt(0.01 * 0.99 / 2000)


def test_records_that_differ_take_the_noisy_counts_beyond_the_noise_quantile():
    """A gap of mean square 9 v over 16 cells: tau^2 = 9 v - v q / 16 with q = 32.000, the
    99th percentile of chi^2 with 16 degrees of freedom (published tables), so
    w = (9 - 2) / (9 - 2 + 1) = 0.875."""
    own, share, noise = np.full(16, 400.0), 0.8, 100.0
    gap = np.where(np.arange(16) % 2 == 0, 30.0, -30.0)  # mean square 900 = 9 v
    w = _weight(own, share * own + gap, share, noise)
    assert w == pytest.approx(7 / 8, abs=1e-4)
