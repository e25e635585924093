"""A datetime column: bins of whole units between public ISO bounds (months
the calendar's), cells read and written in the spec's strftime format, a bad cell or one
outside the bounds named in one line, the spec's JSON round trip, and what infer_spec
proposes for dates."""

from __future__ import annotations

import calendar
import datetime as dt
import warnings

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec, SpecWarning
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.party.records.table_input import read_party_table
from vertimrf.propose import infer_spec
from vertimrf.synth.dtypes import column_dtypes, typed
from vertimrf.timecols import TimeAxis, floor, format_resolution, proposed_unit


def _col(name: str = "t", missing: bool = False, **axis) -> ColumnSpec:
    return ColumnSpec(name, "datetime", missing=missing, time=TimeAxis(**axis))


def _utc(*fields: int) -> float:
    """Seconds since 1970 of a calendar time (year, month, day[, hour, minute, second])."""
    return float(calendar.timegm((*fields, *[0] * (6 - len(fields)))))


MONTHS = _col(lower="2013-01-01", upper="2013-12-31", unit="month")
HOURS = _col(lower="2013-01-01", upper="2013-12-31 23:00", unit="hour")


def test_the_months_of_2013_are_the_calendars():
    want = [_utc(2013, m, 1) for m in range(1, 13)] + [_utc(2014, 1, 1)]
    assert MONTHS.edges.tolist() == want
    assert MONTHS.bounds == (want[0], want[-1], 12) and MONTHS.size == 12
    days = np.diff(MONTHS.edges) / 86400
    assert days.tolist() == [calendar.monthrange(2013, m)[1] for m in range(1, 13)]
    # each day of 2013 lands in its month
    x = _utc(2013, 1, 1) + 86400 * np.arange(365) + 43200
    months = pd.to_datetime(x, unit="s").month.to_numpy()
    assert (MONTHS.bin_of(x) == months - 1).all()


def test_the_upper_bound_lands_in_the_last_bin_and_a_time_after_its_unit_is_refused():
    assert HOURS.bins == 8760 and HOURS.edges[-1] == _utc(2014, 1, 1)
    spec = DomainSpec([HOURS])
    cells = ["2013-12-31 23:00:00", "2013-12-31 23:59:59", "2013-01-01 00:00:00"]
    codes = TableEncoder(spec).encode(pd.DataFrame({"t": cells}))[:, 0]
    assert codes.tolist() == [8759, 8759, 0]
    with pytest.raises(DomainError) as caught:
        TableEncoder(spec).encode(pd.DataFrame({"t": [*cells, "2014-01-01 00:00:00"]}))
    assert str(caught.value) == (
        "column 't', row 4 (counting from 1 after the header): the value '2014-01-01 00:00:00' "
        "is outside its public bounds: from 2013-01-01 to the end of the hour that holds "
        "2013-12-31 23:00; 1 bad row in all; change the data, or widen the bounds in the "
        "domain spec."
    )
    with pytest.raises(DomainError, match="row 2 .*'2012-12-31 23:59:59' is outside"):
        TableEncoder(spec).encode(pd.DataFrame({"t": [cells[0], "2012-12-31 23:59:59"]}))


@pytest.mark.parametrize(
    ("col", "want"),
    [
        (MONTHS, [f"2013-{m:02d}-01" for m in range(1, 13)]),
        (_col(lower="2013-01-01", upper="2013-01-05", unit="day"),
         ["2013-01-01", "2013-01-02", "2013-01-03", "2013-01-04", "2013-01-05"]),
        (_col(lower="2013-12-31 22:00", upper="2014-01-01 01:00", unit="hour"),
         ["2013-12-31 22:00:00", "2013-12-31 23:00:00", "2014-01-01 00:00:00",
          "2014-01-01 01:00:00"]),
        (_col(lower="2012-12-31", upper="2013-01-20", unit="week", format="%d.%m.%Y"),
         ["31.12.2012", "07.01.2013", "14.01.2013"]),
        (_col(lower="2013-01-01", upper="2013-01-20", unit="day", step=7),
         ["2013-01-01", "2013-01-08", "2013-01-15"]),
        (_col(lower="2010-01-01", upper="2013-06-30", unit="year", format="%Y"),
         ["2010", "2011", "2012", "2013"]),
    ],
    ids=["month", "day", "hour", "week", "7 days", "year"],
)  # fmt: skip
def test_each_bin_decodes_to_its_start_in_the_format(col, want):
    spec = DomainSpec([col])
    codes = np.arange(col.size)[:, None]
    enc = TableEncoder(spec)
    got = enc.decode(codes)["t"].tolist()
    assert got == want
    assert enc.encode(pd.DataFrame({"t": got}))[:, 0].tolist() == list(range(len(want)))


def test_a_drawn_time_is_inside_its_bin_at_the_resolution_and_reads_back():
    col = _col(lower="2013-01-01", upper="2013-12-31", unit="month", format="%Y-%m-%d %H:%M:%S",
               resolution="hour")  # fmt: skip
    enc = TableEncoder(DomainSpec([col]))
    codes = np.repeat(np.arange(12), 200)[:, None]
    text = enc.decode(codes, np.random.default_rng(0))["t"]
    assert (enc.encode(pd.DataFrame({"t": text}))[:, 0] == codes[:, 0]).all()
    times = pd.to_datetime(text, format=col.time.format)
    assert (times.dt.minute == 0).all() and (times.dt.second == 0).all()
    assert times.dt.day.nunique() == 31 and times.dt.hour.nunique() == 24  # the whole month
    # a date column by day decodes to that day exactly, drawn or not
    days = _col(lower="2013-01-01", upper="2013-01-31", unit="day")
    enc = TableEncoder(DomainSpec([days]))
    drawn = enc.decode(np.arange(31)[:, None], np.random.default_rng(1))["t"].tolist()
    assert drawn == [f"2013-01-{d:02d}" for d in range(1, 32)]


def test_an_empty_cell_is_its_own_value_with_missing_and_named_without():
    col = _col(missing=True, lower="2013-01-01", upper="2013-12-31", unit="month")
    enc = TableEncoder(DomainSpec([col]))
    frame = pd.DataFrame({"t": ["2013-02-03", "", None, "2013-12-31"]})
    codes = enc.encode(frame)
    assert codes[:, 0].tolist() == [1, 12, 12, 11] and col.size == 13
    back = enc.decode(codes, np.random.default_rng(0))["t"]
    assert back.isna().tolist() == [False, True, True, False]
    with pytest.raises(DomainError) as caught:
        TableEncoder(DomainSpec([MONTHS])).encode(frame)
    assert str(caught.value).startswith(
        "column 't', row 2 (counting from 1 after the header): the cell is missing ('': empty, "
        "NaN or None); 2 bad rows in all"
    )
    assert 'declare "missing": true for the column' in str(caught.value)


def test_a_cell_the_format_does_not_read_is_named_in_one_line():
    enc = TableEncoder(DomainSpec([MONTHS]))
    frame = pd.DataFrame({"t": ["2013-01-05", "2013-01-05 10:00", "05/01/2013", "x"]})
    with pytest.raises(DomainError) as caught:
        enc.encode(frame)
    assert str(caught.value) == (
        "column 't', row 2 (counting from 1 after the header): the value '2013-01-05 10:00' is "
        "not a time in the column's format '%Y-%m-%d'; 3 bad rows in all (other values: "
        "'05/01/2013', 'x'); fix the cell, or correct the column's format in the domain spec."
    )


def test_times_are_read_from_datetime64_dates_and_integers_as_from_text():
    enc = TableEncoder(DomainSpec([_col(lower="2013-01-01", upper="2013-12-31", unit="day",
                                        format="%Y%m%d")]))  # fmt: skip
    want = enc.encode(pd.DataFrame({"t": ["20130105", "20131231"]}))
    for cells in (
        [20130105, 20131231],  # a CSV column of such dates is read as integers
        pd.Series([pd.Timestamp("2013-01-05 13:00"), pd.Timestamp("2013-12-31")]),
        pd.Series(pd.to_datetime(["2013-01-05", "2013-12-31"])).dt.tz_localize("UTC"),
        [dt.date(2013, 1, 5), dt.datetime(2013, 12, 31, 5)],
    ):
        assert (enc.encode(pd.DataFrame({"t": cells})) == want).all()


def test_the_spec_round_trips_through_json(tmp_path):
    cols = [
        HOURS,
        _col("w", missing=True, lower="2013-01-07", upper="2014-06-30", unit="week", step=2,
             format="%Y-%m-%dT%H:%M:%SZ", resolution="hour"),
    ]  # fmt: skip
    spec = DomainSpec(cols)
    spec.to_json(tmp_path / "d.json")
    back = DomainSpec.from_json(tmp_path / "d.json")
    assert back == spec and (back["w"].edges == cols[1].edges).all()
    assert HOURS.to_dict() == {
        "name": "t", "type": "datetime", "lower": "2013-01-01", "upper": "2013-12-31 23:00",
        "unit": "hour", "format": "%Y-%m-%d %H:%M:%S",
    }  # fmt: skip
    assert cols[1].to_dict() == {
        "name": "w", "type": "datetime", "lower": "2013-01-07", "upper": "2014-06-30",
        "unit": "week", "step": 2, "format": "%Y-%m-%dT%H:%M:%SZ", "resolution": "hour",
        "missing": True,
    }  # fmt: skip
    assert cols[1].bins == 39  # 78 weeks from the lower bound's to the upper's, 2 a bin


@pytest.mark.parametrize(
    ("fields", "text"),
    [
        ({"unit": "fortnight"}, "column 'x': unknown unit 'fortnight'; use one of ['second',"),
        ({"lower": "2013-01-15", "unit": "month"},
         "column 'x': 'lower' 2013-01-15 does not start a month; use 2013-01-01, the start of"),
        ({"lower": "2013-01-01", "unit": "week"},
         "column 'x': 'lower' 2013-01-01 does not start a week; use 2012-12-31"),
        ({"upper": "2012-06-01"}, "column 'x': 'upper' 2012-06-01 is before 'lower' 2013-01-01."),
        ({"upper": "31/12/2013"}, "'upper' must be an ISO date or time such as '2013-01-01'"),
        ({"upper": "2013-02-30"}, "'upper' '2013-02-30' is no date of the calendar."),
        ({"step": 0}, "'step' must be a positive integer (units per bin), got 0."),
        ({"format": "%d/%m"}, "'format' '%d/%m' does not read back the time it writes"),
        ({"format": "%Y-%m-%d %z"}, "'format' '%Y-%m-%d %z' holds a time zone"),
        ({"format": "date"}, "'format' must be a strftime format"),
        ({"resolution": "month"}, "'resolution' must be a unit that divides the bins' unit 'day'"),
        ({"unit": "second", "upper": "2014-01-01"}, "column 'x' has 31,536,001 bins of one second;"
         " at most 65,536 are supported: take a longer unit or a larger step."),
    ],
)  # fmt: skip
def test_a_bad_datetime_column_is_one_line_naming_the_fix(fields, text):
    column = {"name": "x", "type": "datetime", "lower": "2013-01-01", "upper": "2013-12-31",
              "unit": "day", **fields}  # fmt: skip
    with pytest.raises(DomainError) as caught:
        DomainSpec.from_dict({"columns": [column]})
    assert text in str(caught.value) and "\n" not in str(caught.value)


def test_a_datetime_column_needs_its_unit_in_a_spec_file():
    with pytest.raises(DomainError, match=r"needs the keys \['name', 'lower', 'upper', 'unit'\]"):
        DomainSpec.from_dict({"columns": [{"name": "t", "type": "datetime", "lower": "2013-01-01",
                                           "upper": "2013-12-31"}]})  # fmt: skip


def test_the_time_axis_helpers():
    assert format_resolution("%Y-%m-%dT%H:%M:%SZ") == "second"
    assert format_resolution("%d.%m.%Y %H:%M") == "minute"
    assert format_resolution("%Y-%m") == "month" and format_resolution("%Y") == "year"
    x = np.array([_utc(2013, 5, 17, 13, 45, 27)])
    assert floor(x, "week")[0] == _utc(2013, 5, 13)  # a Monday
    assert floor(x, "month")[0] == _utc(2013, 5, 1) and floor(x, "year")[0] == _utc(2013, 1, 1)
    assert floor(x, "hour")[0] == _utc(2013, 5, 17, 13)
    first = _utc(2013, 1, 1, 10)
    day = 86400.0
    assert proposed_unit(first, first + 399 * 3600, "hour") == "hour"
    assert proposed_unit(first, first + 401 * 3600, "hour") == "day"
    assert proposed_unit(first, first + 365 * day, "hour") == "day"
    assert proposed_unit(first, first + 2 * 365 * day, "hour") == "week"
    assert proposed_unit(first, first + 20 * 365 * day, "day") == "month"
    assert proposed_unit(first, first + 40 * 365 * day, "day") == "year"
    assert proposed_unit(first, first + 3 * day, "day") == "day"  # no finer than the data's


def _proposed(frame: pd.DataFrame) -> tuple[DomainSpec, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spec = infer_spec(frame)
    return spec, [str(w.message) for w in caught if w.category is SpecWarning]


def test_infer_spec_proposes_datetime_with_the_cells_format_and_a_unit_of_few_bins():
    hours = pd.date_range("2013-01-01 05:00", "2013-12-31 23:00", freq="h")
    rng = np.random.default_rng(0)
    picked = np.sort(np.r_[hours[[0, -1]], rng.choice(hours[1:-1], 498, replace=False)])
    frame = pd.DataFrame({
        "iso": pd.DatetimeIndex(picked).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "day": pd.DatetimeIndex(picked).strftime("%d/%m/%Y"),
        "stamp": picked,
        "long": pd.date_range("1990-01-01", periods=500, freq="15D").strftime("%Y-%m-%d"),
        "gap": np.where(rng.random(500) < 0.1, "", pd.DatetimeIndex(picked).strftime("%Y-%m-%d")),
    })  # fmt: skip
    spec, said = _proposed(frame)
    assert said == []
    assert spec["iso"].to_dict() == {
        "name": "iso", "type": "datetime", "lower": "2013-01-01", "upper": "2013-12-31",
        "unit": "day", "format": "%Y-%m-%dT%H:%M:%SZ", "resolution": "hour",
    }  # fmt: skip
    assert spec["day"].time.format == "%d/%m/%Y" and spec["day"].time.resolution == "day"
    assert spec["stamp"].time.format == "%Y-%m-%d %H:%M:%S" and spec["stamp"].bins == 365
    # 1990-01-01 to 2010-06-27: 1,070 weeks, 246 months
    assert (spec["long"].time.unit, spec["long"].time.upper, spec["long"].bins) == (
        "month", "2010-06-01", 246,
    )  # fmt: skip
    assert spec["gap"].missing and spec["gap"].time.format == "%Y-%m-%d"
    TableEncoder(spec).encode(frame)  # the proposal reads its own table


def test_infer_spec_warns_of_dates_in_no_one_format():
    frame = pd.DataFrame({"t": ["2013-01-05", "05/01/2013 10:00", "2013-02-01"] * 30})
    spec, said = _proposed(frame)
    assert spec["t"].kind == "categorical"
    assert said == [
        "column 't' holds dates or times (e.g. '2013-01-05') that no one date format reads: "
        "proposed as categorical with 3 categories; to have it proposed as datetime, write "
        "every cell as a date, or a date and a time, in one format (e.g. 2013-01-01 05:00:00)."
    ]


def test_a_column_fitted_as_datetime64_samples_as_datetime64():
    spec = DomainSpec([HOURS])
    frame = pd.DataFrame({"t": pd.to_datetime(["2013-03-01 10:00", "2013-07-04 00:00"])})
    dtypes = column_dtypes(frame, spec)
    assert dtypes == {"t": str(frame["t"].dtype)}
    enc = TableEncoder(spec)
    decode = typed(enc.decode, spec, dtypes)
    back = decode(enc.encode(frame))["t"]  # each hour's start: the times themselves
    assert back.dtype == frame["t"].dtype and (back == frame["t"]).all()
    drawn = decode(enc.encode(frame), np.random.default_rng(0))["t"]
    assert (drawn.dt.floor("h") == frame["t"]).all() and drawn.dtype == frame["t"].dtype
    text = pd.DataFrame({"t": pd.Series(["2013-03-01 10:00:00"], dtype="str")})
    assert typed(enc.decode, spec, column_dtypes(text, spec))(enc.encode(text))["t"].dtype == "str"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_party_file_reads_times_batch_by_batch_as_pandas_reads_them_whole(tmp_path, suffix):
    col = _col(missing=True, lower="2013-01-01", upper="2013-12-31", unit="day",
               format="%Y-%m-%d %H:%M:%S", resolution="hour")  # fmt: skip
    spec = DomainSpec([col])
    rng = np.random.default_rng(2)
    hours = pd.date_range("2013-01-01", "2013-12-31 23:00", freq="h")
    times = pd.Series(rng.choice(hours, 300)).mask(rng.random(300) < 0.1)
    frame = pd.DataFrame({"rid": np.arange(300), "t": times})
    if suffix == ".csv":
        frame.to_csv(tmp_path / "a.csv", index=False, date_format="%Y-%m-%d %H:%M:%S")
    else:
        frame.to_parquet(tmp_path / "a.parquet")
    table, _ = read_party_table(tmp_path / f"a{suffix}", spec, "rid", party="A", batch_rows=64)
    assert (table.codes == TableEncoder(spec).encode(frame[["t"]])).all()
