"""IDs are typed once: one text ID among integers once made a party's whole ID column text,
so no record matched its peer's, and the run "succeeded" with a 29-row table.
The config's id_type is checked on every row a party reads; integers are one ID however a
file writes them; a shared region far smaller than the public expected_shared says why."""

from __future__ import annotations

import contextlib
import warnings

import numpy as np
import pandas as pd
import pytest

from tests.runs import correlated_table, two_party_config
from vertimrf.cli.app import main
from vertimrf.domain import DomainSpec, SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.errors import RecordIDError, VertimrfError
from vertimrf.party.records.table_input import read_party_table, stream_party_table
from vertimrf.protocol.factory import load_config
from vertimrf.protocol.regions import SmallSharedWarning, small_shared

SPEC = DomainSpec.from_dict({"a": 3})


def read(tmp_path, ids, id_type: str, *, parquet: bool = False, batch_rows: int = 2):
    """The fingerprints of a one-column table with these ``ids`` in column rid."""
    frame = pd.DataFrame({"rid": ids, "a": [i % 3 for i in range(len(ids))]})
    path = tmp_path / ("t.parquet" if parquet else "t.csv")
    frame.to_parquet(path) if parquet else frame.to_csv(path, index=False)
    _, fingerprints = read_party_table(
        path, SPEC, "rid", party="A", batch_rows=batch_rows, id_type=id_type
    )
    return fingerprints


def test_integer_ids_match_however_a_file_writes_them(tmp_path):
    """7 (an integer column), 7.0 (a float column, as pandas writes integers with a gap),
    "007" and "+7" are one ID 7, from CSV and Parquet alike."""
    want = read(tmp_path, [7, 8, 9], "integer")
    for ids in ([7.0, 8.0, 9.0], ["007", "8", "+9"], ["7.0", "8", "9"]):
        np.testing.assert_array_equal(read(tmp_path, ids, "integer"), want)
        np.testing.assert_array_equal(read(tmp_path, ids, "integer", parquet=True), want)


def test_text_ids_are_taken_as_written(tmp_path):
    """Declared text: "007" is not "7", and an integer column is its decimal digits."""
    text = read(tmp_path, ["7", "8", "x9"], "text")
    np.testing.assert_array_equal(read(tmp_path, ["7", "8", "x9"], "text", parquet=True), text)
    assert read(tmp_path, ["007", "8", "x9"], "text")[0] != text[0]
    np.testing.assert_array_equal(read(tmp_path, [7, 8, 9], "text", parquet=True)[:2], text[:2])


@pytest.mark.parametrize("parquet", [False, True])
def test_one_text_id_among_integers_is_one_line_naming_row_column_value_and_fix(tmp_path, parquet):
    """The mixed-ID table: undeclared, the column silently became text; declared integer,
    the row is refused by name, in a later batch too (and by the streamed read)."""
    ids = [str(i) for i in range(6)] + ["A17"] + ["7", "8"]
    with pytest.raises(RecordIDError) as caught:
        read(tmp_path, ids, "integer", parquet=parquet)
    line = str(caught.value)
    assert "\n" not in line
    assert "'rid'" in line and "row 6 " in line and "'A17'" in line, line
    assert "--id-type text" in line, line
    path = tmp_path / ("t.parquet" if parquet else "t.csv")
    with pytest.raises(RecordIDError, match="row 6 "):
        list(stream_party_table(path, SPEC, "rid", party="A", batch_rows=4, id_type="integer"))


def test_a_float_id_that_is_not_whole_is_refused(tmp_path):
    with pytest.raises(RecordIDError, match=r"row 1 .*7\.5"):
        read(tmp_path, [7.0, 7.5, 9.0], "integer")


def test_the_warning_is_judged_on_the_published_counts():
    """Three parties' published region counts (bit masks 1..7; 7: every party): 20 shared
    of 1,000 against an expected 0.8 warns; 700 of 1,000 does not; no expectation, none."""
    low = {1: 300, 2: 300, 3: 20, 4: 300, 5: 30, 6: 30, 7: 20}
    line = small_shared(low, 0.8)
    assert line is not None and "type or format" in line and "--id-type" in line
    assert small_shared({**low, 7: 700}, 0.8) is None
    assert small_shared(low, None) is None


def test_a_run_whose_ids_differ_in_format_warns_and_names_the_likely_cause():
    """B writes its IDs as text ("r7") where A has integers: the region of both parties is
    about empty against expected_shared 0.8, and the server's deal warns once, naming the
    cause (before its refusal for max_rows, which the first error once blamed); with
    the same IDs at both, no warning. Both runs stop before the features: the deal is
    where the counts are published."""
    df, spec = correlated_table(100)
    cfg = two_party_config(spec, record_sets="partial", expected_shared=0.8)
    cfg = cfg.with_changes(max_rows=2048)  # room for every record and the dummies
    same = {p.name: df[list(p.columns)].assign(id=range(len(df))) for p in cfg.parties}
    other = {**same, "B": same["B"].assign(id=[f"r{i}" for i in range(len(df))])}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", SmallTableWarning)
        with contextlib.suppress(VertimrfError):  # a run of no shared records may refuse
            local_run(other, cfg, bytes(range(32)), seed=1).run(before="features")
    said = [str(w.message) for w in seen if issubclass(w.category, SmallSharedWarning)]
    assert len(said) == 1 and "record IDs of another type or format" in said[0], said
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallSharedWarning)
        warnings.simplefilter("ignore", SmallTableWarning)
        with contextlib.suppress(VertimrfError):  # stopped before the features
            local_run(same, cfg, bytes(range(32)), seed=1).run(before="features")


def test_the_config_command_declares_the_id_type_and_the_expected_share(tmp_path, capsys):
    """`vertimrf config --id-type integer --expected-shared 0.8` writes both; an unknown
    type is refused by the parser, a share with equal record sets by the config."""
    spec = DomainSpec.from_dict({"a": 3, "b": 2})
    spec.to_json(tmp_path / "spec.json")
    base = ["config", "--spec", str(tmp_path / "spec.json"), "--party", "A=a", "--party",
            "B=b", "--epsilon", "1", "--delta", "1e-6", "--max-rows", "1000"]  # fmt: skip
    out = tmp_path / "c.json"
    assert main([*base, "--id-type", "integer", "--expected-shared", "0.8", "--out", str(out)]) == 0
    cfg = load_config(out)
    assert (cfg.id_type, cfg.expected_shared, cfg.record_sets) == ("integer", 0.8, "partial")
    capsys.readouterr()
    bad = tmp_path / "c2.json"
    args = [*base, "--record-sets", "equal", "--expected-shared", "0.8", "--out", str(bad)]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expected_shared" in err[0] and not bad.exists()
