"""A table's numeric releases before its fit: a bad cell spends nothing;
the releases' charges sum to the stage's rho, split evenly over the releasing columns and in
half for a column that releases both its cuts and its fine histogram."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.errors import DomainError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.synth.numeric import numeric_releases, releasing_columns
from vertimrf.within import Fine, Midpoint

SPEC = DomainSpec(
    [
        ColumnSpec("delay", "numeric", lower=-60, upper=1440, bins=8, scale="quantile"),
        ColumnSpec("dist", "numeric", lower=0, upper=5000, bins=10, scale="log", missing=True),
        ColumnSpec("carrier", "categorical", ("AA", "UA")),
    ]
)


def _frame(rows: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    dist = rng.lognormal(6, 1, rows).clip(0, 5000)
    dist[::50] = np.nan
    return pd.DataFrame(
        {
            "delay": (rng.exponential(30, rows) - 15).clip(-60, 1440),
            "dist": dist,
            "carrier": rng.choice(["AA", "UA"], rows),
        }
    )


def test_which_columns_release():
    assert releasing_columns(SPEC, "fine") == ["delay", "dist"]
    assert releasing_columns(SPEC, "uniform") == ["delay"]
    assert releasing_columns(SPEC, "midpoint") == ["delay"]


def test_fine_values_charge_the_stages_rho_split_by_column_and_release():
    ledger = PrivacyLedger()
    rho = 0.01
    spec, within, releases = numeric_releases(
        _frame(), SPEC, values="fine", rho=rho, noise=SeededSampler(1), ledger=ledger
    )
    assert ledger.total_rho == pytest.approx(rho, rel=1e-12)
    by_kind: dict[tuple[str, str], float] = {}
    for r in releases:
        column = "delay" if "'delay'" in r.description else "dist"
        by_kind[(column, r.mechanism)] = by_kind.get((column, r.mechanism), 0.0) + r.rho
    # two columns: rho/2 each; delay's half split again between its 7 cuts and its histogram
    assert by_kind == pytest.approx(
        {
            ("delay", "quantile_cut"): rho / 4,
            ("delay", "fine_histogram"): rho / 4,
            ("dist", "fine_histogram"): rho / 2,
        }
    )
    assert sum(r.mechanism == "quantile_cut" for r in releases) == 7
    assert spec["delay"].resolved and len(spec["delay"].cuts) == 7 and spec["dist"] == SPEC["dist"]
    assert isinstance(within, Fine) and sorted(within.counts) == ["delay", "dist"]
    assert within.counts["delay"].size == 8 * 32 and within.counts["dist"].size == 10 * 25
    # sigma of each fine histogram: 1 / sqrt(2 rho_column)
    sigma = {
        r.description.split("'")[1]: r.params["sigma"] for r in releases if "fine" in r.mechanism
    }
    assert sigma["dist"] == pytest.approx(1 / math.sqrt(2 * rho / 2))
    assert sigma["delay"] == pytest.approx(1 / math.sqrt(2 * rho / 4))


def test_midpoint_values_release_only_the_quantile_cuts():
    ledger = PrivacyLedger()
    spec, within, releases = numeric_releases(
        _frame(), SPEC, values="midpoint", rho=0.01, noise=SeededSampler(1), ledger=ledger
    )
    assert isinstance(within, Midpoint) and spec["delay"].resolved
    assert {r.mechanism for r in releases} == {"quantile_cut"} and len(releases) == 7
    assert ledger.total_rho == pytest.approx(0.01)


def test_a_bad_cell_spends_nothing():
    frame = _frame()
    frame.loc[17, "delay"] = 2000.0  # above the public bound
    ledger = PrivacyLedger()
    with pytest.raises(DomainError, match=r"column 'delay', row 18 .*outside its public bounds"):
        numeric_releases(
            frame, SPEC, values="fine", rho=0.01, noise=SeededSampler(1), ledger=ledger
        )
    assert ledger.total_rho == 0 and not ledger.releases
