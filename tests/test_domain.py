"""DomainSpec JSON round trips and the TableEncoder."""

import json
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vertimrf.datasets import load_dataset
from vertimrf.domain import ColumnSpec, Domain, DomainSpec, PrivacyWarning
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.propose import infer_spec


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
            "'age'.*'1' is not a number",
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


# --------------------------------------------------------------------------- domain formats
FORMATS_MENTIONED = r"Accepted domain formats: .*\"columns\".*\"discrete\".*mbi \{\"age\": 85"


def test_spec_reads_mbi_format(tmp_path):
    path = tmp_path / "mbi.json"
    path.write_text(json.dumps({"age": 5, "workclass": 9, "sex": 2}))
    spec = DomainSpec.from_json(path)
    assert spec.names == ("age", "workclass", "sex")
    assert spec.domain.sizes == (5, 9, 2)
    assert all(c.kind == "categorical" for c in spec.columns)
    assert spec["workclass"].categories == tuple(range(9))
    # The same spec as the integer-coded format, and it survives a library-format round trip.
    coded = {
        n: {"type": "discrete", "domain": u} for n, u in zip(spec.names, (5, 9, 2), strict=True)
    }
    assert DomainSpec.from_dict(coded) == spec
    spec.to_json(tmp_path / "back.json")
    assert DomainSpec.from_json(tmp_path / "back.json") == spec
    codes = TableEncoder(spec).encode(pd.DataFrame({"age": [4], "workclass": [8], "sex": [0]}))
    assert codes.tolist() == [[4, 8, 0]]


def test_mbi_format_matches_the_bundled_adult_domain():
    path = os.path.join(
        os.path.dirname(__file__), "..", "vertimrf", "datasets", "adult.domain.json"
    )
    with open(path) as fh:
        coded = json.load(fh)
    mbi = {name: c["domain"] for name, c in coded.items()}
    assert DomainSpec.from_dict(mbi) == DomainSpec.from_dict(coded)


def test_existing_formats_still_work():
    spec = _mixed_spec()
    assert DomainSpec.from_dict(spec.to_dict()) == spec
    assert DomainSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    coded = DomainSpec.from_dict({"0": {"type": "discrete", "domain": 3}})
    assert coded.domain.sizes == (3,)


_COL = {"name": "x", "type": "numeric", "lower": 0, "upper": 1, "bins": 2}
BAD_DOMAINS = {
    "list": [{"name": "x"}],
    "number": 5,
    "string": "age",
    "null": None,
    "empty dict": {},
    "mixed objects and sizes": {"a": 3, "b": {"type": "discrete", "domain": 2}},
    "size as string": {"a": "3"},
    "size as float": {"a": 3.0},
    "size as bool": {"a": True},
    "zero size": {"a": 2, "b": 0},
    "negative size": {"a": -2},
    "size as list": {"a": [1, 2]},
    "columns is a string": {"columns": "abc"},
    "columns of numbers": {"columns": [1, 2]},
    "column without type": {"columns": [{"name": "x", "categories": [1]}]},
    "column of unknown type": {"columns": [{"name": "x", "type": "ordinal", "categories": [1]}]},
    "categorical without categories": {"columns": [{"name": "x", "type": "categorical"}]},
    "numeric without bounds": {"columns": [{"name": "x", "type": "numeric", "lower": 0}]},
    "column without name": {"columns": [{"type": "categorical", "categories": [1]}]},
    "name not a string": {"columns": [{"name": 5, "type": "categorical", "categories": [1]}]},
    "categories of lists": {
        "columns": [{"name": "x", "type": "categorical", "categories": [[1], [2]]}]
    },
    "categories a string": {"columns": [{"name": "x", "type": "categorical", "categories": "ab"}]},
    "lower a string": {"columns": [{**_COL, "lower": "0"}]},
    "upper infinite": {"columns": [{**_COL, "upper": float("inf")}]},
    "upper beyond float range": {"columns": [{**_COL, "upper": 10**400}]},
    "bins a float": {"columns": [{**_COL, "bins": 2.5}]},
    "bins a bool": {"columns": [{**_COL, "bins": True}]},
    "discrete without domain": {"0": {"type": "discrete"}},
    "not discrete": {"0": {"type": "continuous", "domain": 3}},
    "discrete domain a string": {"0": {"type": "discrete", "domain": "16"}},
    "discrete domain zero": {"0": {"type": "discrete", "domain": 0}},
}


@pytest.mark.parametrize("case", sorted(BAD_DOMAINS))
def test_bad_domain_shapes_list_the_accepted_formats(case):
    with pytest.raises(DomainError, match=FORMATS_MENTIONED):
        DomainSpec.from_dict(BAD_DOMAINS[case])


def test_huge_sizes_are_refused_without_building_categories():
    with pytest.raises(DomainError, match="at most 65536"):
        DomainSpec.from_dict({"a": 10**18})
    with pytest.raises(DomainError, match="at most 65536"):
        DomainSpec.from_dict({"0": {"type": "discrete", "domain": 10**18}})


def test_from_json_names_the_file_it_cannot_read(tmp_path):
    cases = {
        "missing": (tmp_path / "missing.json", "cannot read"),
        "directory": (tmp_path, "cannot read"),
        "latin-1": (tmp_path / "latin1.json", "not UTF-8"),
        "not json": (tmp_path / "bad.json", "not valid JSON"),
        "deeply nested": (tmp_path / "deep.json", "nested too deeply"),
        "bad shape": (tmp_path / "shape.json", FORMATS_MENTIONED),
    }
    (tmp_path / "latin1.json").write_bytes('{"caf\xe9": 3}'.encode("latin-1"))
    (tmp_path / "bad.json").write_text("{'a': 3}")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "shape.json").write_text('{"a": "x"}')
    for path, match in cases.values():
        with pytest.raises(DomainError, match=match) as info:
            DomainSpec.from_json(path)
        assert str(path) in str(info.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads anything")
def test_from_json_unreadable_permissions(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text('{"a": 3}')
    path.chmod(0)
    with pytest.raises(DomainError, match=f"{path}: cannot read"):
        DomainSpec.from_json(path)


_WORDS = st.sampled_from(
    ["columns", "name", "type", "categorical", "numeric", "categories", "lower", "upper"]
    + ["bins", "discrete", "domain", "0", "a"]
)
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(-3, 20)
    | st.floats()
    | st.text()
    | _WORDS,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(_WORDS | st.text(max_size=4), inner, max_size=5)
    ),
    max_leaves=50,
)


# Shapes close to the accepted formats, so the valid paths are exercised too.
_NEAR_VALID = st.one_of(
    st.dictionaries(st.text(max_size=4), st.integers(-2, 70_000) | _JSON, min_size=1, max_size=5),
    st.dictionaries(
        st.text(max_size=4),
        st.fixed_dictionaries({"type": st.just("discrete") | _JSON, "domain": _JSON}),
        min_size=1,
        max_size=5,
    ),
    st.fixed_dictionaries(
        {
            "columns": st.lists(
                st.fixed_dictionaries(
                    {"name": st.text(max_size=3) | _JSON, "type": _WORDS},
                    optional={
                        "categories": st.lists(_JSON, max_size=4) | _JSON,
                        "lower": st.integers(-5, 5) | _JSON,
                        "upper": st.integers(-5, 5) | _JSON,
                        "bins": st.integers(-1, 5) | _JSON,
                    },
                ),
                max_size=4,
            )
        }
    ),
)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True)
@given(_JSON | _NEAR_VALID)
def test_from_dict_on_arbitrary_json_gives_a_spec_or_domain_error(data):
    try:
        spec = DomainSpec.from_dict(data)
    except DomainError:
        return
    assert isinstance(spec, DomainSpec) and len(spec) >= 1
