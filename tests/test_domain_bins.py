"""A numeric column's bins: equal width, the user's cut points, log-spaced
edges and DP quantile cuts, checked against brute force: bin b holds [edge b, edge b+1), the
upper bound lands in the last bin, and an integer column decodes to integers inside its bin."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.synth.dtypes import integer_bins, typed

COLUMNS = [
    ColumnSpec("eq", "numeric", lower=-60, upper=1440, bins=50),
    ColumnSpec("cut", "numeric", lower=0, upper=100, cuts=(5, 10, 50.5, 99)),
    ColumnSpec("log", "numeric", lower=0, upper=5000, bins=12, scale="log"),
    ColumnSpec("odd", "numeric", lower=-3.7, upper=11.2, bins=7, scale="log"),
]


def _brute_bin(x: float, edges: np.ndarray) -> int:
    """The last bin whose lower edge is at most x (the upper bound: the last bin)."""
    return max(b for b in range(len(edges) - 1) if edges[b] <= x)


@pytest.mark.parametrize("col", COLUMNS, ids=lambda c: c.name)
def test_a_value_lands_in_the_bin_whose_edges_hold_it(col):
    lower, upper, bins = col.bounds
    edges = col.edges
    assert len(edges) == bins + 1 and edges[0] == lower and edges[-1] == upper
    assert (np.diff(edges) > 0).all()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(lower, upper, 2000), edges, [upper]])
    got = col.bin_of(x)
    if col.scale == "equal":  # the encoder's formula, as before bins had scales
        assert (got == np.minimum(np.floor((x - lower) / (upper - lower) * bins), bins - 1)).all()
    else:
        assert got.tolist() == [_brute_bin(v, edges) for v in x]
    assert got[-1] == bins - 1  # the upper bound is in the last bin


def test_log_edges_are_evenly_spaced_in_log_of_x_minus_lower_plus_one():
    col = COLUMNS[2]
    assert np.allclose(np.diff(np.log(col.edges + 1.0)), np.log(5001.0) / 12)
    assert col.edges[1] == pytest.approx(5001 ** (1 / 12) - 1)  # 1.03: fine near 0
    assert col.edges[-2] == pytest.approx(5001 ** (11 / 12) - 1)  # 2,460: coarse in the tail


@pytest.mark.parametrize("col", COLUMNS, ids=lambda c: c.name)
def test_the_spec_round_trips_through_json(col, tmp_path):
    spec = DomainSpec([col])
    spec.to_json(tmp_path / "d.json")
    back = DomainSpec.from_json(tmp_path / "d.json")
    assert back == spec and (back[col.name].edges == col.edges).all()
    if col.scale == "equal":  # older specs keep their bytes
        assert set(col.to_dict()) == {"name", "type", "lower", "upper", "bins"}


def test_cut_points_are_read_from_a_spec_file_without_bins():
    spec = DomainSpec.from_dict(
        {"columns": [{"name": "x", "type": "numeric", "lower": 0, "upper": 10, "cuts": [1, 2]}]}
    )
    assert spec["x"].bins == 3 and spec["x"].scale == "cuts"
    assert spec["x"].edges.tolist() == [0, 1, 2, 10]


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"cuts": (5, 5, 7)}, "must rise strictly inside the bounds"),
        ({"cuts": (0, 7)}, "must rise strictly inside the bounds"),
        ({"cuts": (7, 100)}, "must rise strictly inside the bounds"),
        ({"cuts": (1, 2), "bins": 4}, "2 cuts make 3 bins, not bins=4"),
        ({"bins": 4, "scale": "log", "cuts": (1, 2, 3)}, "scale 'log' takes no 'cuts'"),
        ({"bins": 4, "scale": "square"}, "unknown scale 'square'"),
        ({"bins": 4, "scale": "cuts"}, "scale 'cuts' needs the cut points"),
    ],
)
def test_bad_cuts_are_one_line_naming_the_column(fields, text):
    with pytest.raises(DomainError, match=text) as info:
        ColumnSpec("x", "numeric", lower=0, upper=100, **fields)
    assert "column 'x'" in str(info.value) and "\n" not in str(info.value)


def test_a_categorical_column_takes_no_cuts():
    with pytest.raises(DomainError, match="categorical: it takes no scale nor cuts"):
        ColumnSpec("c", "categorical", ("a", "b"), cuts=(1,))


def test_quantile_cuts_are_unknown_until_measured_and_may_tie():
    col = ColumnSpec("q", "numeric", lower=0, upper=10, bins=4, scale="quantile")
    assert not col.resolved
    with pytest.raises(DomainError, match="DP quantile cuts, which its party measures"):
        TableEncoder(DomainSpec([col])).encode(pd.DataFrame({"q": [1.0]}))
    done = col.with_cuts([2, 2, 10])
    assert done.resolved and done.edges.tolist() == [0, 2, 2, 10, 10]
    # a tie makes an empty bin; the upper bound still lands in the last one
    assert done.bin_of(np.array([0.0, 1.9, 2.0, 9.9, 10.0])).tolist() == [0, 0, 2, 2, 3]
    assert DomainSpec.from_dict(DomainSpec([done]).to_dict()) == DomainSpec([done])
    with pytest.raises(DomainError, match="must rise inside the bounds"):
        col.with_cuts([3, 2, 1])


@pytest.mark.parametrize("col", COLUMNS, ids=lambda c: c.name)
def test_integer_bins_are_the_least_and_greatest_integer_of_each_bin(col):
    starts, ends = integer_bins(col)
    lower, upper, bins = col.bounds
    ints = np.arange(np.ceil(lower), np.floor(upper) + 1)
    of = col.bin_of(ints)
    for b in range(bins):
        held = ints[of == b]
        if held.size:
            assert (starts[b], ends[b]) == (held.min(), held.max())
        else:
            assert starts[b] > ends[b]


@pytest.mark.parametrize("col", COLUMNS, ids=lambda c: c.name)
def test_decoding_stays_inside_the_bin_and_integers_decode_to_integers(col):
    spec = DomainSpec([col])
    codes = np.arange(col.bins).repeat(50)[:, None]
    edges = col.edges
    for rng in (None, np.random.default_rng(1)):
        x = TableEncoder(spec).decode(codes, rng)[col.name].to_numpy()
        assert ((edges[codes[:, 0]] <= x) & (x <= edges[codes[:, 0] + 1])).all()
    rows = typed(lambda c: TableEncoder(spec).decode(c, np.random.default_rng(2)), spec,
                 {col.name: "int64"})(codes)  # fmt: skip
    v = rows[col.name]
    assert str(v.dtype) == "int64" and v.min() >= np.ceil(col.lower) and v.max() <= col.upper
    starts, ends = integer_bins(col)
    inside = starts[codes[:, 0]] <= ends[codes[:, 0]]
    assert (col.bin_of(v.to_numpy(float))[inside] == codes[inside, 0]).all()


def test_an_integer_column_is_declared_proposed_kept_and_decoded_to_integers():
    """``"integer": true`` (numeric only) reads and writes with the spec; the proposal sets
    it where every value is a whole number (empty cells aside); a decoder casts the column
    to integers inside each bin whatever float dtype a fit recorded, nullable when it may be
    empty."""
    import warnings

    from vertimrf.propose import infer_spec

    col = ColumnSpec("n", "numeric", lower=0, upper=100, bins=7, integer=True)
    assert col.to_dict()["integer"] is True
    assert "integer" not in ColumnSpec("f", "numeric", lower=0, upper=1, bins=2).to_dict()
    assert DomainSpec.from_dict(DomainSpec([col]).to_dict()) == DomainSpec([col])
    with pytest.raises(DomainError, match="true for a numeric column only"):
        ColumnSpec("c", "categorical", ("a",), integer=True)
    with pytest.raises(DomainError, match="'integer' is true or false"):
        ColumnSpec("n", "numeric", lower=0, upper=1, bins=2, integer="yes")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"whole": rng.integers(0, 1000, 500).astype(float),
                          "half": rng.integers(0, 1000, 500) / 2})  # fmt: skip
    frame.loc[3, "whole"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = infer_spec(frame)
    assert spec["whole"].integer and spec["whole"].missing and not spec["half"].integer
    codes = np.arange(7).repeat(20)[:, None]
    for dtypes, empty in (({}, False), ({"n": "float64"}, False), ({}, True)):
        one = DomainSpec([dataclasses.replace(col, missing=empty)])
        decode = typed(lambda c, g=None, s=one: TableEncoder(s).decode(c, g), one, dtypes)
        v = decode(codes, np.random.default_rng(1))["n"]
        assert str(v.dtype) == ("Int64" if empty else "int64")
        assert (col.bin_of(v.to_numpy(float)) == codes[:, 0]).all()
