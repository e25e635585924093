"""Each column's distance (KS for numbers, 1-way TVD otherwise) and each pair's 2-way TVD
and trend, checked against hand-computed values and brute force."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.stats import ks_2samp
from scipy.stats.contingency import association

from tests.test_metrics import _brute_tvd
from vertimrf.domain import ColumnSpec, Domain, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.metrics import (
    column_distances,
    column_tvd,
    cramers_v,
    ks_distance,
    pair_trends,
    pair_tvd,
    pearson,
)
from vertimrf.timecols import TimeAxis

SPEC = DomainSpec(
    [
        ColumnSpec("color", "categorical", ("red", "blue")),
        ColumnSpec("size", "numeric", None, 0, 10, 2),
        ColumnSpec("weight", "numeric", None, 0, 100, 4, missing=True),
    ]
)
REAL = pd.DataFrame(
    {"color": ["red", "red", "blue", "blue"], "size": [1.0, 2, 3, 4], "weight": [10.0, 20, 30, 40]}
)
SYNTH = pd.DataFrame(
    {
        "color": ["red", "blue", "blue", "blue"],
        "size": [3.0, 4, 5, 6],
        "weight": [40.0, np.nan, 20, 10],
    }
)


def test_ks_distance_of_two_known_samples() -> None:
    # F_a and F_b at 1..7: a = 1/4, 2/4, 3/4, 1, 1, 1, 1; b = 0, 0, 1/5, 2/5, 3/5, 4/5, 1.
    # The largest gap is at 4: 1 - 2/5.
    a, b = [1, 2, 3, 4], [3, 4, 5, 6, 7]
    assert ks_distance(a, b) == pytest.approx(0.6, abs=1e-15)
    assert ks_distance(b, a) == ks_distance(a, b)
    assert ks_distance(a, a) == 0.0
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=300), rng.normal(0.3, 1, size=170).round(1)  # ties too
    assert ks_distance(x, y) == pytest.approx(ks_2samp(x, y).statistic, abs=1e-12)


def test_ks_distance_counts_an_empty_cell_above_every_number() -> None:
    # At 1: F_a = 1/2 (the NaN is not yet reached), F_b = 1.
    assert ks_distance([1.0, np.nan], [1.0, 1.0]) == 0.5
    assert ks_distance([np.nan, np.nan], [np.nan]) == 0.0
    # Same values, a quarter more of them empty: the gap is that quarter.
    assert ks_distance([1.0, 2, 3, 4], [1.0, 2, np.nan, np.nan]) == 0.5
    with pytest.raises(DomainError, match="at least one value"):
        ks_distance([], [1.0])


def test_column_distances_compare_numbers_as_numbers() -> None:
    got = column_distances(REAL, SYNTH, SPEC)
    assert list(got) == ["color", "size", "weight"]
    # color: red 1/2 against 1/4.
    assert (got["color"].metric, got["color"].distance) == ("tvd", 0.25)
    # size: real 1..4, synth 3..6: F gap 1/2 at 2, 3 and 4. In bins of 5 its 1-way TVD is
    # 1/2 too (the synthetic 5 and 6 in the upper bin).
    assert got["size"].metric == "ks" and got["size"].distance == pytest.approx(0.5)
    assert got["size"].tvd1 == pytest.approx(0.5)
    # weight: real 10, 20, 30, 40; synth 10, 20, 40 and one empty: the gap is 1/4 at 30
    # (3/4 against 2/4) and at 40 (1 against 3/4). In bins of 25 the real table puts 2 and 2
    # rows in the first two bins, the synthetic 2 and 1, and one empty: (1/4 + 1/4) / 2.
    assert got["weight"].metric == "ks" and got["weight"].distance == pytest.approx(0.25)
    assert got["weight"].tvd1 == pytest.approx(0.25)
    assert {c: d.tvd1 for c, d in got.items()} == column_tvd(REAL, SYNTH, SPEC)
    assert {d.kind for d in got.values()} == {"categorical", "numeric"}


def test_column_distances_fall_back_to_tvd_without_numbers() -> None:
    encoder = TableEncoder(SPEC)
    coded = encoder.table(REAL), encoder.table(SYNTH)
    got = column_distances(*coded)  # codes only: no values to compare
    assert {d.metric for d in got.values()} == {"tvd"}
    assert {c: d.distance for c, d in got.items()} == column_tvd(REAL, SYNTH, SPEC)
    frames = [pd.DataFrame(t.codes, columns=list(SPEC.names)) for t in coded]
    by_domain = column_distances(*frames, SPEC.domain)
    assert {(d.kind, d.metric) for d in by_domain.values()} == {("codes", "tvd")}


def test_pair_tvd_matches_brute_force() -> None:
    rng = np.random.default_rng(4)
    dom = Domain(("a", "b", "c", "d"), (2, 3, 4, 5))
    sizes = dict(zip(dom.names, dom.sizes, strict=True))
    real = pd.DataFrame({n: rng.integers(0, s, 120) for n, s in sizes.items()})
    synth = pd.DataFrame({n: rng.integers(0, s, 77) for n, s in sizes.items()})
    got = pair_tvd(real, synth, dom)
    assert list(got) == list(itertools.combinations(dom.names, 2))
    for pair, value in got.items():
        assert value == pytest.approx(_brute_tvd(real, synth, list(pair)), abs=1e-12)


def test_pair_tvd_of_a_hand_made_table() -> None:
    # (color, size bin): real (red, 0) 1/2, (blue, 0) 1/2; synth (red, 0) 1/4, (blue, 0) 1/4,
    # (blue, 1) 1/2: TVD (1/4 + 1/4 + 1/2) / 2.
    assert pair_tvd(REAL, SYNTH, SPEC)[("color", "size")] == pytest.approx(0.5)


def test_cramers_v_of_a_known_table() -> None:
    # Counts [[10, 0], [5, 5]]: expected [[7.5, 2.5], [7.5, 2.5]], chi2 = 2 (2.5^2 / 7.5) +
    # 2 (2.5^2 / 2.5) = 20/3, V = sqrt(chi2 / 20) = sqrt(1/3).
    x = np.array([0] * 10 + [1] * 10)
    y = np.array([0] * 10 + [0] * 5 + [1] * 5)
    assert cramers_v(x, y) == pytest.approx(np.sqrt(1 / 3), abs=1e-12)
    assert cramers_v(x, x) == pytest.approx(1.0)
    assert cramers_v(x, np.zeros(20)) == 0.0  # one value: no association to measure
    rng = np.random.default_rng(5)
    u, v = rng.integers(0, 3, 200), rng.integers(0, 4, 200)
    table = np.zeros((3, 4), dtype=np.int64)
    np.add.at(table, (u, v), 1)
    assert cramers_v(u, v) == pytest.approx(association(table, method="cramer"), abs=1e-12)


def test_pearson_drops_empty_rows_and_is_zero_for_a_constant() -> None:
    # dx = -1, 0, 1; dy = -7/3, -1/3, 8/3: r = 5 / sqrt(2 * 114 / 9).
    r = 5 / np.sqrt(2 * 114 / 9)
    assert pearson(np.array([1.0, 2, 3]), np.array([2.0, 4, 7])) == pytest.approx(r)
    assert pearson(np.array([1.0, 2, 3, np.nan]), np.array([2.0, 4, 7, 1])) == pytest.approx(r)
    assert pearson(np.array([1.0, 1, 1]), np.array([2.0, 4, 7])) == 0.0
    assert pearson(np.array([1.0, np.nan]), np.array([2.0, 3])) == 0.0


def test_pair_trends_correlate_numbers_and_associate_the_rest() -> None:
    got = pair_trends(REAL, SYNTH, SPEC)
    assert list(got) == [("color", "size"), ("color", "weight"), ("size", "weight")]
    numbers = got[("size", "weight")]
    assert numbers.metric == "correlation"
    assert numbers.real == pytest.approx(1.0)  # weight = 10 size in the real table
    assert numbers.synth == pytest.approx(pearson(SYNTH["size"], SYNTH["weight"]))
    assert numbers.synth == pytest.approx(-1.0)  # (3, 40), (5, 20), (6, 10)
    assert numbers.difference == pytest.approx(2.0)
    codes = TableEncoder(SPEC).encode(SYNTH)
    mixed = got[("color", "size")]
    assert mixed.metric == "cramers_v" and mixed.real == 0.0  # every real size in one bin
    assert mixed.synth == pytest.approx(cramers_v(codes[:, 0], codes[:, 1]))
    assert mixed.synth == pytest.approx(np.sqrt(1 / 3))  # counts [[1, 0], [1, 2]]


def test_a_datetime_column_is_compared_as_times() -> None:
    spec = DomainSpec(
        [
            ColumnSpec("day", "datetime", time=TimeAxis("2012-12-31", "2013-01-31", "week")),
            ColumnSpec("size", "numeric", None, 0, 10, 2),
        ]
    )
    real = pd.DataFrame({"day": ["2013-01-01", "2013-01-02", "2013-01-03", "2013-01-04"],
                         "size": [1.0, 2, 3, 4]})  # fmt: skip
    synth = pd.DataFrame({"day": ["2013-01-03", "2013-01-04", "2013-01-05", "2013-01-06"],
                          "size": [4.0, 3, 2, 1]})  # fmt: skip
    got = column_distances(real, synth, spec)["day"]
    # Days 1..4 against 3..6, as the sizes above: KS 1/2. In weekly bins every day is in the
    # first week: the 1-way TVD sees no difference.
    assert (got.kind, got.metric, got.distance, got.tvd1) == ("datetime", "ks", 0.5, 0.0)
    trend = pair_trends(real, synth, spec)[("day", "size")]
    assert (trend.metric, trend.real, trend.synth) == ("correlation", pytest.approx(1.0),
                                                       pytest.approx(-1.0))  # fmt: skip
