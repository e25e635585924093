"""DomainSpec JSON round trips and the TableEncoder."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from vertimrf.datasets import load_dataset
from vertimrf.domain import ColumnSpec, Domain, DomainSpec, PrivacyWarning, TableEncoder, infer_spec
from vertimrf.errors import DomainError


def _mixed_spec() -> DomainSpec:
    return DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green", "blue")),
            ColumnSpec("age", "numeric", lower=0, upper=100, bins=10),
            ColumnSpec("flag", "categorical", (0, 1)),
        ]
    )


def test_domain_basics():
    dom = Domain.from_sizes([3, 4, 5])
    assert dom.size() == 60 and dom.size([0, 2]) == 15
    assert dom.shape([2, 0]) == (5, 3)
    assert list(dom.offsets) == [0, 3, 7]
    assert dom.project([2]).names == ("2",)
    with pytest.raises(DomainError):
        Domain(("a", "a"), (2, 2))
    with pytest.raises(DomainError):
        dom.index("zzz")


def test_spec_json_round_trip(tmp_path):
    spec = _mixed_spec()
    path = tmp_path / "spec.json"
    spec.to_json(path)
    assert DomainSpec.from_json(path) == spec
    assert [p.name for p in tmp_path.iterdir()] == ["spec.json"]  # no temp files left


def test_spec_reads_integer_coded_format(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(
        json.dumps(
            {"0": {"type": "discrete", "domain": 16}, "1": {"type": "discrete", "domain": 2}}
        )
    )
    spec = DomainSpec.from_json(path)
    assert spec.names == ("0", "1")
    assert spec.domain.sizes == (16, 2)
    assert spec["0"].categories == tuple(range(16))


def test_shared_domain_files_match_bundled_data():
    for name in ("adult", "nltcs"):
        shared = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
        path = os.path.join(shared, f"{name}.domain.json")
        df, spec = load_dataset(name)
        if os.path.exists(path):
            assert DomainSpec.from_json(path) == spec
        codes = TableEncoder(spec).encode(df)
        assert codes.dtype == np.uint8
        assert (codes.max(axis=0) < np.array(spec.domain.sizes)).all()


def test_categorical_round_trip_is_exact_on_labeled_adult():
    df, spec = load_dataset("adult_labeled")
    enc = TableEncoder(spec)
    codes = enc.encode(df)
    assert codes.shape == df.shape
    pd.testing.assert_frame_equal(enc.decode(codes), df)


def test_numeric_decodes_inside_the_right_bin():
    spec = _mixed_spec()
    enc = TableEncoder(spec)
    rng = np.random.default_rng(1)
    age = rng.uniform(0, 100, 1000)
    age[:3] = [0.0, 100.0, 49.999]
    df = pd.DataFrame(
        {
            "color": rng.choice(["red", "green", "blue"], 1000),
            "age": age,
            "flag": rng.integers(0, 2, 1000),
        }
    )
    codes = enc.encode(df)
    assert codes[1, 1] == 9  # the upper bound falls in the last bin
    for decoded in (enc.decode(codes), enc.decode(codes, rng=rng)):
        lo = np.floor(age / 10) * 10
        lo[age == 100] = 90
        assert ((decoded["age"] >= lo) & (decoded["age"] <= lo + 10)).all()
        assert (TableEncoder(spec).encode(decoded)[:, 1] == codes[:, 1]).all()
        assert (decoded["color"] == df["color"]).all()


@pytest.mark.parametrize(
    ("frame", "match"),
    [
        (
            pd.DataFrame({"color": ["red", "pink"], "age": [1.0, 2.0], "flag": [0, 1]}),
            "'color'.*'pink'",
        ),
        (
            pd.DataFrame({"color": ["red", None], "age": [1.0, 2.0], "flag": [0, 1]}),
            "'color'.*missing",
        ),
        (
            pd.DataFrame({"color": ["red", "red"], "age": [1.0, 200.0], "flag": [0, 1]}),
            "'age'.*200",
        ),
        (
            pd.DataFrame({"color": ["red", "red"], "age": [1.0, np.nan], "flag": [0, 1]}),
            "'age'.*missing",
        ),
        (
            pd.DataFrame({"color": ["red", "red"], "age": ["1", "2"], "flag": [0, 1]}),
            "'age'.*dtype",
        ),
        (
            pd.DataFrame({"color": ["red", "red"], "age": [1.0, 2.0], "flag": ["0", "1"]}),
            "'flag'.*'0'",
        ),
        (
            pd.DataFrame({"color": ["red"], "age": [1.0], "flag": [0], "id": [7]}),
            "unknown \\['id'\\]",
        ),
        (pd.DataFrame({"color": ["red"], "age": [1.0]}), "missing \\['flag'\\]"),
    ],
)
def test_bad_input_names_column_and_value(frame, match):
    with pytest.raises(DomainError, match=match):
        TableEncoder(_mixed_spec()).encode(frame)


def test_bad_specs_raise():
    with pytest.raises(DomainError):
        ColumnSpec("x", "numeric", lower=5, upper=1, bins=3)
    with pytest.raises(DomainError):
        ColumnSpec("x", "categorical", ("a", "a"))
    with pytest.raises(DomainError):
        ColumnSpec("x", "ordinal", ("a",))


def test_uint16_codes_for_large_domains():
    spec = DomainSpec([ColumnSpec("big", "categorical", tuple(range(1000)))])
    enc = TableEncoder(spec)
    codes = enc.encode(pd.DataFrame({"big": [0, 999, 500]}))
    assert codes.dtype == np.uint16 and list(codes[:, 0]) == [0, 999, 500]


def test_infer_spec_warns_that_it_is_not_private():
    df = pd.DataFrame({"a": ["x", "y", "x"], "b": np.linspace(0, 1, 3)})
    with pytest.warns(PrivacyWarning, match="NOT differentially private"):
        spec = infer_spec(df, max_categories=2)
    assert spec["a"].categories == ("x", "y")
    assert spec["b"].kind == "numeric"
