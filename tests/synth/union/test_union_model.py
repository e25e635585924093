"""The union model: fitted on exact releases it reproduces every table of the union; its
intersection sample has the DP row count and no empty cell, its union sample the region
counts' presence pattern; a party's attributes are never partly absent; on noisy releases
the presence pattern's error stays within the bound the fit's projection gives."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest

from tests.synth.union.union_truth import Truth, make_truth, releases
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.errors import ConfigError, DomainError
from vertimrf.synth.union import UnionModel, fit_union, union_tables

SPLITS = {
    "2 parties": ((2, 3, 4, 3), (0, 0, 1, 1)),
    "3 parties": ((2, 3, 4, 3, 2, 4), (0, 0, 1, 1, 2, 2)),
}


@pytest.fixture(scope="module", params=list(SPLITS))
def exact(request) -> tuple[Truth, UnionModel]:
    sizes, owner = SPLITS[request.param]
    truth = make_truth(np.random.default_rng(1), 2000, sizes, owner)
    return truth, fit_union(releases(truth), target_ratio=None, iters=3000)


def _pattern(codes: np.ndarray, truth: Truth) -> np.ndarray:
    """The region of each sampled row (the parties whose attributes are held), after checking
    that no party's attributes are partly absent."""
    absent = codes == np.asarray(truth.domain.sizes)
    region = np.zeros(len(codes), np.int64)
    for p in range(truth.parties):
        mine = absent[:, np.asarray(truth.owner) == p]
        assert np.all(mine.all(1) | ~mine.any(1)), f"party {p}'s attributes are partly absent"
        region |= (~mine[:, 0]).astype(np.int64) << p
    return region


def _rounding(truth: Truth) -> np.ndarray:
    """4 sd of the sampler's rounding in each region's count: it rounds each clique cell to
    the floor or ceiling of its expected count, and region T's count sums at most K_T cells
    (the product of its parties' attribute sizes) of error variance <= 1/4 each."""
    sizes, owner = truth.domain.sizes, truth.owner
    cells = [
        np.prod([s for s, p in zip(sizes, owner, strict=True) if t >> p & 1])
        for t in range(1 << truth.parties)
    ]
    return 4 * np.sqrt(np.asarray(cells) / 4)


def _by_region(table: np.ndarray, parties: int) -> np.ndarray:
    """A presence table's cells as a vector indexed by region mask."""
    return np.array([table[tuple(t >> p & 1 for p in range(parties))] for t in range(1 << parties)])


def test_the_fit_on_exact_releases_gives_every_table_of_the_union(exact):
    truth, model = exact
    for table in union_tables(releases(truth)):
        # 2,000 records: counts within 1e-3 of the truth.
        fitted = model.marginal(table.attrs)
        np.testing.assert_allclose(fitted, truth.union_marginal(table.attrs), atol=1e-3)


def _mixed(model: UnionModel) -> float:
    """The model's mass on records where some party's attributes are partly absent: over
    every pair of one party's attributes, one absent and the other held."""
    space, mass = model.space, 0.0
    for p in range(space.parties):
        for a, b in itertools.combinations(space.attributes(p), 2):
            table = model.model.marginal((a, b))
            mass += table[space.absent(a), : space.absent(b)].sum()
            mass += table[: space.absent(a), space.absent(b)].sum()
    return mass


def test_no_mass_where_a_partys_attributes_are_partly_absent(exact):
    truth, model = exact
    assert _mixed(model) == 0.0
    # Nor where every party is absent.
    everyone = tuple(range(len(truth.domain), len(truth.domain) + truth.parties))
    assert model.marginal(everyone)[(0,) * truth.parties] == 0.0


def test_the_intersection_sample_has_the_region_count_rows_and_no_empty_cell(exact):
    truth, model = exact
    everyone = (1 << truth.parties) - 1
    frame = model.sample(np.random.default_rng(5))
    assert len(frame) == model.rows() == round(model.regions[everyone])
    assert list(frame.columns) == list(truth.domain.names)
    assert not frame.isna().any().any()
    assert len(model.sample(np.random.default_rng(5), rows=17)) == 17


def test_the_union_sample_has_the_presence_pattern_of_the_region_counts(exact):
    truth, model = exact
    codes = model.sample_codes(np.random.default_rng(6), "union")
    assert len(codes) == model.rows("union") == round(sum(model.regions.values()))
    counts = np.bincount(_pattern(codes, truth), minlength=1 << truth.parties)
    want = np.bincount(truth.region, minlength=1 << truth.parties)
    assert np.all(np.abs(counts - want) <= _rounding(truth))
    frame = model.sample(np.random.default_rng(6), population="union")
    np.testing.assert_array_equal(frame.isna().to_numpy(), codes == np.asarray(truth.domain.sizes))


@pytest.mark.parametrize("split", SPLITS)
def test_on_noisy_releases_the_presence_error_is_within_the_projections_bound(split):
    sizes, owner = SPLITS[split]
    truth = make_truth(np.random.default_rng(1), 2000, sizes, owner)
    rel = releases(truth, noise_sigma=5.0, seed=7)
    tables = union_tables(rel)
    n_hat, n = sum(rel.regions.values()), len(truth.region)
    # The fit (run to convergence) is the projection of the targets y onto the marginals of
    # the model's distributions of total n_hat, in the norm ||W(.)|| of the table weights;
    # the truth rescaled to n_hat, x', is such a marginal, so ||W(mu - x')|| <= ||W(y - x')||
    # = sqrt(Q). The presence table's own term gives |mu_T - x'_T| <= sigma_P sqrt(Q).
    q = sum(
        float((((t.values - truth.union_marginal(t.attrs) * n_hat / n) / t.sigma) ** 2).sum())
        for t in tables
    )
    model = fit_union(rel, target_ratio=None, iters=5000, tol=1e-9)
    presence = tables[0]
    true = truth.union_marginal(presence.attrs)
    bound = presence.sigma * np.sqrt(q) + np.abs(true * n_hat / n - true) + 1.0
    fitted = model.marginal(presence.attrs)
    assert np.all(np.abs(fitted - true) <= bound)
    # The sample adds the sampler's rounding.
    codes = model.sample_codes(np.random.default_rng(8), "union")
    counts = np.bincount(_pattern(codes, truth), minlength=1 << truth.parties)
    slack = _by_region(bound, truth.parties) + _rounding(truth)
    assert np.all(np.abs(counts - _by_region(true, truth.parties)) <= slack)


def test_a_negative_region_count_gives_no_rows_and_a_bad_population_is_refused():
    truth = make_truth(np.random.default_rng(3), 300, (2, 3), (0, 1))
    rel = releases(truth)
    rel = dataclasses.replace(rel, regions={**rel.regions, 3: -4.0})
    model = fit_union(rel, iters=50)
    assert model.rows() == 0 and model.sample_codes(np.random.default_rng(0)).shape == (0, 2)
    with pytest.raises(ConfigError, match="population"):
        model.rows("everyone")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="target_ratio"):
        fit_union(rel, target_ratio=0.0)
    with pytest.raises(ConfigError, match="n must be"):
        model.sample_codes(np.random.default_rng(0), rows=-1)


def test_a_spec_decodes_values_and_leaves_absent_cells_empty():
    truth = make_truth(np.random.default_rng(4), 400, (2, 3), (0, 1))
    model = fit_union(releases(truth), iters=200)
    spec = DomainSpec(
        [
            ColumnSpec("0", "categorical", ("x", "y")),
            ColumnSpec("1", "numeric", lower=0, upper=3, bins=3),
        ]
    )
    frame = model.sample(np.random.default_rng(2), spec, "union")
    codes = model.sample_codes(np.random.default_rng(2), "union")
    assert frame["0"].isna().sum() == int((codes[:, 0] == 2).sum()) > 0
    assert set(frame["0"].dropna()) <= {"x", "y"}
    assert set(frame["1"].dropna()) <= {0.5, 1.5, 2.5}
    assert pd.isna(frame.loc[codes[:, 1] == 3, "1"]).all()
    with pytest.raises(DomainError, match="decode with columns"):
        model.sample(np.random.default_rng(2), spec.subset(["0"]))


def test_a_warm_start_keeps_the_structural_zeros_and_needs_fewer_iterations():
    truth = make_truth(np.random.default_rng(5), 1000, (2, 3, 4), (0, 1, 1))
    rel = releases(truth, noise_sigma=3.0, seed=1)
    cold = fit_union(rel, target_ratio=None, iters=2000)
    warm = fit_union(rel, target_ratio=None, iters=2000, warm_start=cold.model.potentials.values)
    assert warm.fit.iterations < cold.fit.iterations
    assert _mixed(warm) == 0.0


def test_given_cliques_leave_out_the_tables_that_join_attributes_outside_them():
    truth = make_truth(np.random.default_rng(6), 1000, (2, 3, 4, 3), (0, 0, 1, 1))
    rel = releases(truth)
    every = fit_union(rel, iters=10)
    kept = fit_union(rel, iters=10, cliques=[(0, 1, 2), (2, 3)])
    # The cross tables (0, 3) and (1, 3) join attributes in no clique, and attribute 3
    # shares a clique with no attribute of party 0 to read its presence off.
    left_out = {(0, 3), (1, 3), (3, 4)}
    assert {t.attrs for t in every.structure.tables} - {
        t.attrs for t in kept.structure.tables
    } == left_out
    assert not any({0, 3} <= set(c) or {1, 3} <= set(c) for c in kept.model.cliques)
    # Party 0's presence is read off attribute 0, party 1's off attribute 2 (the smallest
    # of each party's attributes in the clique holding both).
    assert kept.structure.representatives == (0, 2)
