"""A numeric column's DP releases: quantile cuts and the fine histogram,
their charges recomputed from their formulas, and the placement of a value inside its bin.

Statistical checks use fixed seeds and bounds from theory, stated where they are used."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.numeric import (
    CANDIDATES,
    FINE_CELLS,
    fine_cells,
    fine_histogram,
    fine_index,
    quantile_cuts,
)
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.within import Fine, Midpoint, Uniform, placement, within_from_meta, within_meta

COLS = [
    ColumnSpec("eq", "numeric", lower=-60, upper=1440, bins=50),
    ColumnSpec("log", "numeric", lower=0, upper=5000, bins=12, scale="log"),
    ColumnSpec("cut", "numeric", lower=0, upper=10, cuts=(1, 1.5, 9)),
    ColumnSpec("one", "numeric", lower=0, upper=1, bins=1),
]


@pytest.mark.parametrize("col", COLS, ids=lambda c: c.name)
def test_the_fine_cell_of_a_value_is_found_by_brute_force(col):
    s = fine_cells(col)
    assert s == max(1, FINE_CELLS // col.bins)
    edges = col.edges
    cell_edges = np.concatenate(
        [edges[b] + np.arange(s) / s * (edges[b + 1] - edges[b]) for b in range(col.bins)]
        + [[col.upper]]
    )
    x = np.random.default_rng(0).uniform(col.lower, col.upper, 3000)
    want = [max(i for i in range(len(cell_edges) - 1) if cell_edges[i] <= v) for v in x]
    got = fine_index(col, x)
    # a value within rounding of a cell edge may fall either side of it
    near = np.isclose(x[:, None], cell_edges[None, :], rtol=0, atol=1e-9).any(axis=1)
    assert (got[~near] == np.array(want)[~near]).all()
    assert fine_index(col, np.array([col.upper]))[0] == col.bins * s - 1


def test_the_fine_histogram_is_the_exact_counts_plus_the_samplers_gaussian_noise():
    col = COLS[0]
    x = np.random.default_rng(1).normal(0, 30, 5000).clip(-60, 1440)
    x[::97] = np.nan  # empty cells are not counted
    ledger = PrivacyLedger()
    rho = 0.002
    got, release = fine_histogram(col, x, rho=rho, noise=SeededSampler(7), ledger=ledger)
    exact = np.bincount(fine_index(col, x[~np.isnan(x)]), minlength=col.bins * fine_cells(col))
    sigma = math.sqrt(1 / (2 * rho))
    replay = SeededSampler(7).discrete_gaussian(sigma, exact.shape)
    assert (got == exact + replay).all() and got.dtype == np.int64
    # one record moves one count by 1: the whole vector costs 1 / (2 sigma^2) = rho
    assert release.rho == pytest.approx(rho, rel=1e-12) and ledger.total_rho == release.rho
    assert release.mechanism == "fine_histogram" and release.params["cells"] == exact.size


def test_quantile_cuts_charge_k_minus_1_exponential_mechanisms_and_land_near_the_quantiles():
    col = ColumnSpec("q", "numeric", lower=-60, upper=1440, bins=8, scale="quantile")
    x = np.random.default_rng(2).exponential(40, 20_000) - 20
    ledger = PrivacyLedger()
    rho = 0.5
    done, releases = quantile_cuts(col, x, rho=rho, noise=SeededSampler(3), ledger=ledger)
    eps = math.sqrt(8 * rho / 7)
    assert len(releases) == 7 and all(r.rho == pytest.approx(eps**2 / 8) for r in releases)
    assert ledger.total_rho == pytest.approx(rho)
    assert done.resolved and len(done.cuts) == 7 and list(done.cuts) == sorted(done.cuts)
    # The exponential mechanism's utility bound (McSherry and Talwar 2007): with probability
    # >= 1 - beta its pick's score is within 2 (Delta / eps) ln(|C| / beta) of the best one
    # (beta = 1e-6 per cut). The scores are OpenDP's, recomputed here on the same grid.
    import opendp.prelude as dp

    dp.enable_features("contrib")
    grid = np.linspace(-60, 1440, CANDIDATES + 2)[1:-1].tolist()
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    for i, cut in enumerate(done.cuts, start=1):
        score = dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(), grid, i / 8)
        scores = np.asarray(score(x.tolist()), dtype=float)  # lower is better
        slack = 2 * score.map(1) / eps * math.log(CANDIDATES / 1e-6)
        assert scores[grid.index(cut)] - scores.min() <= slack
        # and so the cut's rank is near i/8 of the records (within 1%, a loose consequence)
        assert abs((x < cut).mean() - i / 8) < 0.01


def test_a_fine_histogram_places_values_in_the_cells_it_counts():
    col = COLS[0]
    s = fine_cells(col)
    counts = np.zeros(col.bins * s, dtype=np.int64)
    counts[3 * s + 2] = 50  # bin 3: all in its cell 2
    counts[4 * s : 5 * s] = -5  # bin 4: nothing known, uniform over the bin
    bins = np.array([3] * 400 + [4] * 400)
    rng = np.random.default_rng(4)
    x = Fine({"eq": counts}).place(col, bins, rng)
    e = col.edges
    width = (e[4] - e[3]) / s
    assert ((x[:400] >= e[3] + 2 * width) & (x[:400] <= e[3] + 3 * width)).all()
    assert ((x[400:] >= e[4]) & (x[400:] <= e[5])).all()
    # uniform over bin 4's s cells: each of 400 draws is in the bin's lower half with p=1/2;
    # 6 sd of Binomial(400, 1/2) is 60
    assert abs((x[400:] < (e[4] + e[5]) / 2).sum() - 200) <= 60
    assert (Midpoint().place(col, bins, rng) == (e[bins] + e[bins + 1]) / 2).all()
    assert (Fine({"eq": counts}).place(col, bins, None) == Midpoint().place(col, bins, None)).all()
    u = Uniform().place(col, bins, np.random.default_rng(5))
    assert ((u >= e[bins]) & (u <= e[bins + 1])).all()


def test_decoding_with_a_fine_placement_follows_the_histogram_and_round_trips(tmp_path):
    col = COLS[1]
    spec = DomainSpec([col])
    counts = np.zeros(col.bins * fine_cells(col), dtype=np.int64)
    counts[::7] = 9
    fine = placement("fine", {"log": counts})
    codes = np.repeat(np.arange(col.bins), 100)[:, None]
    x = TableEncoder(spec).decode(codes, np.random.default_rng(6), fine)["log"].to_numpy()
    cells = fine_index(col, x)
    assert (counts[cells] > 0).all() and (col.bin_of(x) == codes[:, 0]).all()
    back = within_from_meta(within_meta(fine), spec, "m")
    assert isinstance(back, Fine) and (back.counts["log"] == counts).all()
    assert isinstance(within_from_meta(None, spec, "m"), Midpoint)


@pytest.mark.parametrize(
    "col",
    [
        ColumnSpec("equal", "numeric", lower=-60, upper=1440, bins=50),
        ColumnSpec("log", "numeric", lower=0, upper=1000, bins=7, scale="log"),
        ColumnSpec("one", "numeric", lower=0, upper=1, bins=300),
        ColumnSpec("cuts", "numeric", lower=0, upper=10, cuts=(1, 2.5, 7), missing=True),
        ColumnSpec("tied", "numeric", lower=0, upper=10, bins=4, scale="quantile").with_cuts(
            [2, 2, 7]
        ),
    ],
    ids=lambda c: c.name,
)
def test_the_fine_column_codes_values_as_fine_index_does(col):
    """Brute force on random values, the bounds and the edges: a table reader's codes of
    the fine column are fine_index's, but for values within 1e-9 of a sub-bin edge, where
    the two round differently (an empty bin of tied cuts takes no value in either)."""
    from vertimrf.privacy.numeric import fine_column

    fine = fine_column(col)
    assert fine.bins == col.bins * fine_cells(col) and fine.missing == col.missing
    x = np.concatenate([np.random.default_rng(3).uniform(*col.bounds[:2], 20000), col.edges])
    near = np.abs(x[:, None] - fine.edges[None, :]).min(axis=1) < 1e-9
    got, want = fine.bin_of(x), fine_index(col, x)
    assert (got[~near] == want[~near]).all() and (got == want).mean() > 0.999
