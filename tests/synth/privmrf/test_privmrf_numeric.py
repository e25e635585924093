"""PrivMRF on a frame with numeric columns: the numeric releases come
first, at numeric_share of the budget, in the ledger and the report; samples place values
inside their bins by the fine histograms (integers stay integers); a saved fit samples the
same rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vertimrf import PrivMRF
from vertimrf.domain import ColumnSpec, DomainSpec

DELTA = 1e-6
SPEC = DomainSpec(
    [
        ColumnSpec("delay", "numeric", lower=-60, upper=600, bins=8, scale="quantile"),
        ColumnSpec("dist", "numeric", lower=0, upper=5000, bins=10, scale="log"),
        ColumnSpec("carrier", "categorical", ("AA", "UA", "DL")),
    ]
)


def _frame(rows: int = 4000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    carrier = rng.choice(["AA", "UA", "DL"], rows)
    dist = np.floor(rng.lognormal(6 + (carrier == "UA"), 0.7, rows)).clip(0, 5000)
    delay = (rng.exponential(25, rows) - 12).clip(-60, 600)
    return pd.DataFrame({"delay": delay, "dist": dist.astype("int64"), "carrier": carrier})


@pytest.fixture(scope="module")
def fit() -> PrivMRF:
    return PrivMRF(2.0, DELTA, seed=1, progress=False).fit(_frame(), SPEC)


def test_the_numeric_releases_take_their_share_of_the_budget_and_are_reported(fit):
    releases = fit.report.releases
    numeric = [r for r in releases if r.mechanism in ("quantile_cut", "fine_histogram")]
    assert [r.mechanism for r in releases[: len(numeric)]] == [r.mechanism for r in numeric]
    assert sum(r.rho for r in numeric) == pytest.approx(0.05 * fit.rho_budget, rel=1e-9)
    assert sum(r.rho for r in releases) == pytest.approx(fit.rho_budget, rel=1e-9)
    assert sum(r.mechanism == "quantile_cut" for r in numeric) == 7
    assert {r.description for r in numeric if r.mechanism == "fine_histogram"} == {
        "fine histogram of 'delay' (256 cells)",
        "fine histogram of 'dist' (250 cells)",
    }


def test_samples_lie_inside_their_bins_and_integers_stay_integers(fit):
    rows = fit.sample(3000, seed=2)
    assert str(rows["dist"].dtype) == "int64" and rows["dist"].between(0, 5000).all()
    assert rows["delay"].between(-60, 600).all()
    # not bin midpoints: many distinct values
    assert rows["delay"].nunique() > 1000 and rows["dist"].nunique() > 300


def test_a_saved_fit_samples_the_same_rows(fit, tmp_path):
    back = PrivMRF.load(fit.save(tmp_path / "fit.vmrf"))
    pd.testing.assert_frame_equal(back.sample(500, seed=3), fit.sample(500, seed=3))


def test_midpoint_values_release_only_the_quantile_cuts():
    fit = PrivMRF(2.0, DELTA, seed=1, progress=False, values="midpoint").fit(_frame(), SPEC)
    assert {r.mechanism for r in fit.report.releases} & {"fine_histogram"} == set()
    rows = fit.sample(2000, seed=2)
    assert rows["delay"].nunique() <= 8  # the midpoints of the 8 quantile bins
