"""Missing values in the spec: ``"missing": true`` makes an empty cell (NaN, None
or "") one more code of its column, after its values; without it an empty cell is refused
with the one-line message it always had, and the spec's JSON is byte for byte as before."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec, PrivacyWarning
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.propose import infer_spec

# The JSON of a spec without the key, as this library wrote it before the key existed.
PLAIN_JSON = """{
 "columns": [
  {
   "name": "color",
   "type": "categorical",
   "categories": [
    "red",
    "green"
   ]
  },
  {
   "name": "age",
   "type": "numeric",
   "lower": 0.0,
   "upper": 100.0,
   "bins": 10
  }
 ]
}"""


def _plain() -> DomainSpec:
    return DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green")),
            ColumnSpec("age", "numeric", lower=0, upper=100, bins=10),
        ]
    )


def _spec() -> DomainSpec:
    """Text, integer and numeric columns that may be empty, and one that may not."""
    return DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green", "blue"), missing=True),
            ColumnSpec("flag", "categorical", (0, 1), missing=True),
            ColumnSpec("age", "numeric", lower=0, upper=100, bins=10, missing=True),
            ColumnSpec("sex", "categorical", ("F", "M")),
        ]
    )


def _frame() -> pd.DataFrame:
    """Every kind of empty cell (NaN, None, pd.NA, "") in each column that may be empty."""
    return pd.DataFrame(
        {
            "color": ["red", None, "", np.nan, "blue", pd.NA],
            "flag": [0, None, 1, np.nan, "", pd.NA],
            "age": [0.0, np.nan, None, "", 100.0, 55.5],
            "sex": ["F", "M", "F", "M", "F", "M"],
        }
    )


def test_without_the_key_the_json_is_as_before(tmp_path):
    spec = _plain()
    path = tmp_path / "spec.json"
    spec.to_json(path)
    assert path.read_text() == PLAIN_JSON
    # An explicit false is the same spec, written without the key.
    data = json.loads(PLAIN_JSON)
    data["columns"][0]["missing"] = False
    assert DomainSpec.from_dict(data) == spec
    assert json.dumps(DomainSpec.from_dict(data).to_dict(), indent=1) == PLAIN_JSON


def test_the_key_round_trips_through_json(tmp_path):
    spec = _spec()
    path = tmp_path / "spec.json"
    spec.to_json(path)
    columns = json.loads(path.read_text())["columns"]
    assert [c.get("missing") for c in columns] == [True, True, True, None]
    assert DomainSpec.from_json(path) == spec
    assert DomainSpec.from_json(path) != DomainSpec([*_plain().columns])


def test_the_missing_code_follows_the_values():
    spec = _spec()
    assert spec.domain.sizes == (4, 3, 11, 2)
    assert [c.missing_code for c in spec.columns] == [3, 2, 10, None]
    assert [c.value_codes for c in spec.columns] == [3, 2, 10, 2]
    # 256 categories fit uint8; the missing code makes 257, so uint16.
    big = ColumnSpec("big", "categorical", tuple(range(256)))
    assert TableEncoder(DomainSpec([big])).dtype == np.uint8
    wide = DomainSpec([ColumnSpec("big", "categorical", tuple(range(256)), missing=True)])
    enc = TableEncoder(wide)
    assert enc.dtype == np.uint16
    assert enc.encode(pd.DataFrame({"big": [255, None]})).tolist() == [[255], [256]]


@pytest.mark.parametrize("value", ["yes", 1, 0, None, [True]])
def test_a_missing_that_is_no_bool_is_one_line(value):
    data = json.loads(PLAIN_JSON)
    data["columns"][1]["missing"] = value
    with pytest.raises(DomainError) as caught:
        DomainSpec.from_dict(data)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("column 'age': 'missing' must be true or false, got ")


@pytest.mark.parametrize("empty", [None, "", float("nan")])
def test_an_empty_category_with_missing_is_refused(empty):
    with pytest.raises(DomainError, match='drop null and "" from the categories'):
        ColumnSpec("c", "categorical", ("a", empty), missing=True)
    assert ColumnSpec("c", "categorical", ("a", empty)).size == 2  # without the key, as before


def test_empty_cells_encode_to_the_missing_code_and_decode_to_nan():
    spec = _spec()
    enc = TableEncoder(spec)
    codes = enc.encode(_frame())
    assert codes.tolist() == [
        [0, 0, 0, 0],
        [3, 2, 10, 1],
        [3, 1, 10, 0],
        [3, 2, 10, 1],
        [2, 2, 9, 0],
        [3, 2, 5, 1],
    ]
    decoded = enc.decode(codes)
    empty = codes[:, :3] == np.array([3, 2, 10])
    np.testing.assert_array_equal(decoded[["color", "flag", "age"]].isna().to_numpy(), empty)
    assert decoded["flag"].dropna().tolist() == [0, 1]  # integers stay integers
    assert decoded["age"].dropna().tolist() == [5.0, 95.0, 55.0]
    drawn = enc.decode(codes, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(drawn["age"].isna().to_numpy(), empty[:, 2])
    np.testing.assert_array_equal(enc.encode(decoded), codes)
    np.testing.assert_array_equal(enc.encode(drawn), codes)


def test_a_csv_writes_empty_cells_and_reads_back_the_same_codes():
    enc = TableEncoder(_spec())
    codes = enc.encode(_frame())
    text = enc.decode(codes).to_csv(index=False)
    assert text.splitlines()[2] == ",,,M"  # the second row: empty in every column that may be
    assert text.splitlines()[1] == "red,0,5.0,F"
    back = pd.read_csv(io.StringIO(text))
    np.testing.assert_array_equal(enc.encode(back), codes)
    pd.testing.assert_frame_equal(
        pd.read_csv(io.StringIO(enc.decode(codes).to_csv(index=False))), back
    )


def test_a_column_that_may_be_empty_but_is_not_decodes_as_before():
    plain = DomainSpec([ColumnSpec("flag", "categorical", (0, 1))])
    flagged = DomainSpec([ColumnSpec("flag", "categorical", (0, 1), missing=True)])
    codes = np.array([[0], [1], [1]])
    pd.testing.assert_frame_equal(
        TableEncoder(flagged).decode(codes), TableEncoder(plain).decode(codes)
    )


def test_without_the_key_an_empty_cell_gets_the_same_one_line_message():
    """Whatever marks it empty (None, NaN, ""), the line names the row, counts the bad rows
    and gives the fix "missing": true first."""
    spec = DomainSpec(
        [
            ColumnSpec("color", "categorical", ("red", "green")),
            ColumnSpec("age", "numeric", lower=0, upper=100, bins=10),
        ]
    )
    enc = TableEncoder(spec)
    fix = (
        '1 bad row in all; declare "missing": true for the column in the domain spec (an empty '
        "cell is then a value of its own), or fill the cell or drop the row."
    )
    cases = [
        (
            {"color": pd.Series(["red", None], dtype=object), "age": [1.0, 2.0]},
            "column 'color', row 2 (counting from 1 after the header): the cell is missing "
            f"(None: empty, NaN or None); {fix}",
        ),
        (
            {"color": ["red", "red"], "age": [1.0, np.nan]},
            "column 'age', row 2 (counting from 1 after the header): the cell is missing "
            f"(nan: empty, NaN or None); {fix}",
        ),
        (
            {"color": ["red", "red"], "age": [1.0, ""]},
            "column 'age', row 2 (counting from 1 after the header): the cell is missing "
            f"(nan: empty, NaN or None); {fix}",
        ),
    ]
    for frame, message in cases:
        with pytest.raises(DomainError) as caught:
            enc.encode(pd.DataFrame(frame))
        assert str(caught.value) == message


def test_infer_spec_proposes_missing_where_a_column_has_empty_cells():
    df = pd.DataFrame(
        {
            "color": ["red", np.nan, "blue", "red"],
            "flag": [0, None, 1, 1],
            "score": [0.5, "", 2.5, 9.0],
            "sex": ["F", "M", "F", ""],
            "full": ["a", "b", "a", "b"],
        }
    )
    with pytest.warns(PrivacyWarning, match="NOT differentially private"):
        spec = infer_spec(df, max_categories=2)
    assert [c.missing for c in spec.columns] == [True, True, True, True, False]
    assert spec["color"].categories == ("blue", "red")
    assert spec["flag"].categories == (0.0, 1.0)  # pandas holds a column with None as floats
    assert spec["sex"].categories == ("F", "M")
    assert spec["score"].kind == "numeric" and spec["score"].bounds[:2] == (0.5, 9.0)
    codes = TableEncoder(spec).encode(df)
    assert codes[:, 0].tolist() == [1, 2, 0, 1]
    assert codes[:, 3].tolist() == [0, 1, 0, 2]
