"""A first-release pair that lies in no clique of the model is not lost to the fit: its row
and column sums reach the fit as 1-way tables, pooled per attribute by inverse variance.
Checked against a direct computation on small random tables (a sum over k cells of noise
scale s has variance k s^2), in the engine's measurements and in the union fit's releases."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.domain import Domain
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.synth.engine.fit import measurements
from vertimrf.synth.engine.scores import left_out_one_ways
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import NoisyTable, PartialReleases
from vertimrf.synth.union.model import with_left_out_one_ways


def _tables(sizes: list[int], rng: np.random.Generator) -> Tables:
    """Every 2-way table of ``sizes`` and one 1-way, noisy counts with their own scales."""
    d = len(sizes)
    values, scale = {}, {}
    for i in range(d):
        for j in range(i + 1, d):
            values[i, j] = rng.normal(50.0, 30.0, sizes[i] * sizes[j])
            scale[i, j] = float(rng.uniform(1.0, 20.0))
    values[(0,)], scale[(0,)] = rng.normal(50.0, 30.0, sizes[0]), 3.0
    return Tables(values, scale)


def _direct(tables: Tables, sizes: list[int], cliques: list[tuple[int, ...]]) -> dict:
    """Per attribute of a left-out pair: (pooled counts, pooled scale), summed by hand."""
    out = {}
    for a in range(len(sizes)):
        parts = []
        for m, flat in tables.values.items():
            if len(m) != 2 or a not in m or any(set(m) <= set(c) for c in cliques):
                continue
            t = flat.reshape(sizes[m[0]], sizes[m[1]])
            other = m[1] if m[0] == a else m[0]
            sums = t.sum(axis=1) if m[0] == a else t.sum(axis=0)
            parts.append((sums, sizes[other] * tables.scale[m] ** 2))
        if parts:
            w = sum(1.0 / v for _, v in parts)
            out[a] = (sum(s / v for s, v in parts) / w, math.sqrt(1.0 / w))
    return out


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.integers(1, 5), min_size=2, max_size=5),
    seed=st.integers(0, 2**32 - 1),
    joined=st.integers(0, 3),
)
def test_the_pooled_sums_of_the_left_out_pairs(sizes, seed, joined):
    rng = np.random.default_rng(seed)
    tables = _tables(sizes, rng)
    d = len(sizes)
    cliques = [tuple(range(min(d, joined + 1)))] + [(a,) for a in range(joined + 1, d)]
    want = _direct(tables, sizes, cliques)
    got = left_out_one_ways(tables, sizes, cliques)
    assert set(got.values) == {(a,) for a in want}
    for a, (counts, scale) in want.items():
        np.testing.assert_allclose(got.values[(a,)], counts, rtol=1e-12)
        assert math.isclose(got.scale[(a,)], scale, rel_tol=1e-12)


def test_the_fit_measures_the_sums_of_a_pair_in_no_clique():
    """Model (0, 1) and (2,): the pairs (0, 2) and (1, 2) lie in no clique, so attribute 2
    is read off their sums (and 0 and 1 each off one), beside the pair inside (0, 1)."""
    sizes = [2, 3, 4]
    tables = _tables(sizes, np.random.default_rng(7))
    tree = JunctionTree.build(Domain(("a", "b", "c"), tuple(sizes)), [(0, 1), (2,)])
    _, pairs = measurements(tables, Tables({}, {}), tree)
    want = _direct(tables, sizes, [(0, 1), (2,)])
    by_attrs: dict[tuple[int, ...], list] = {}
    for m in pairs:
        by_attrs.setdefault(m.attrs, []).append(m)
    assert sorted(by_attrs) == [(0,), (0, 1), (1,), (2,)]
    assert len(by_attrs[(0,)]) == 2  # the released 1-way of 0 and the pooled sums
    for a, (counts, scale) in want.items():
        pooled = [m for m in by_attrs[(a,)] if math.isclose(m.weight, 1.0 / scale)]
        assert len(pooled) == 1
        np.testing.assert_allclose(pooled[0].values.ravel(), counts, rtol=1e-12)


def test_the_union_fit_pools_own_pairs_only():
    """Party 0 holds 0 and 1, party 1 holds 2: the own pair (0, 1) in no clique gives two
    own 1-way tables; the cross pair (0, 2) stays a cross table and gives none."""
    sizes = (3, 2, 4)
    rng = np.random.default_rng(3)
    own = NoisyTable((0, 1), rng.normal(40.0, 5.0, (3, 2)), 4.0)
    cross = NoisyTable((0, 2), rng.normal(40.0, 5.0, (3, 4)), 6.0)
    releases = PartialReleases(
        domain=Domain(("a", "b", "c"), sizes),
        owner=(0, 0, 1),
        own=(own,),
        cross=(cross,),
        presence={},
        regions={1: 10.0, 2: 10.0, 3: 100.0},
        region_sigma=1.0,
    )
    got = with_left_out_one_ways(releases, [(0, 2), (1,)])
    assert got.cross == releases.cross
    extra = {t.attrs: t for t in got.own[1:]}
    assert sorted(extra) == [(0,), (1,)]
    np.testing.assert_allclose(extra[(0,)].values, own.values.sum(axis=1))
    assert math.isclose(extra[(0,)].sigma, 4.0 * math.sqrt(2))
    np.testing.assert_allclose(extra[(1,)].values, own.values.sum(axis=0))
    assert math.isclose(extra[(1,)].sigma, 4.0 * math.sqrt(3))
    assert with_left_out_one_ways(releases, [(0, 1), (2,)]).own == releases.own
