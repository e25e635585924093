"""The baseline run store (``run_capped(..., store=DIR)``): a run kept by one process is read
back by the next instead of run again. No OpenDP is needed: the child process is replaced by a
fake that writes new random synthetic codes at each launch and counts its launches."""

from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf.cli import main
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.report import FIGURES, ReportContext, baselines, run_store
from vertimrf.report.baselines import run_capped
from vertimrf.report.figures import tvd as tvd_module


class FakeChild:
    """Stands in for ``subprocess.run`` of the OpenDP child: writes DIR/synth.npy (random codes
    in the domain, new at each launch) or raises as a timed-out or failed child would."""

    def __init__(self, outcome: str = "finished") -> None:
        self.outcome = outcome
        self.launches = 0
        self.written: list[np.ndarray] = []
        self.rng = np.random.default_rng(11)

    def __call__(self, command: list[str], **kwargs: object) -> None:
        self.launches += 1
        folder = Path(command[3])
        if self.outcome == "timed out":
            raise subprocess.TimeoutExpired(command, kwargs["timeout"])
        if self.outcome == "failed":
            raise subprocess.CalledProcessError(1, command, b"", b"Trace\nValueError: boom\n")
        codes = np.load(folder / "codes.npy", allow_pickle=False)
        sizes = np.load(folder / "sizes.npy", allow_pickle=False)
        synth = self.rng.integers(0, sizes, size=codes.shape)
        np.save(folder / "synth.npy", synth, allow_pickle=False)
        self.written.append(synth)


@pytest.fixture
def child(monkeypatch: pytest.MonkeyPatch) -> FakeChild:
    fake = FakeChild()
    monkeypatch.setattr(baselines.subprocess, "run", fake)
    return fake


def _table(n: int = 200, seed: int = 3) -> tuple[pd.DataFrame, DomainSpec]:
    """Three categorical columns and a numeric one (whose decoding draws values by the seed)."""
    rng = np.random.default_rng(seed)
    spec = DomainSpec(
        [
            ColumnSpec("a", "categorical", ("x", "y", "z")),
            ColumnSpec("b", "numeric", lower=0.0, upper=10.0, bins=5),
            ColumnSpec("c", "categorical", (0, 1)),
            ColumnSpec("d", "categorical", ("p", "q")),
        ]
    )
    codes = rng.integers(0, spec.domain.sizes, size=(n, 4))
    return TableEncoder(spec).decode(codes, np.random.default_rng(0)), spec


def _entries(store: Path) -> list[str]:
    return sorted(p.name for p in store.iterdir()) if store.exists() else []


def test_only_stored_runs_are_read_when_asked_and_nothing_runs(tmp_path, child):
    df, spec = _table()
    store = tmp_path / "store"
    missing = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=store, run_missing=False)
    assert missing == baselines.CappedRun(None, baselines.NOT_RUN, 0.0)
    assert child.launches == 0 and _entries(store) == []
    run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=store)
    stored = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=store, run_missing=False)
    assert child.launches == 1 and stored.status == "finished" and stored.reused
    with pytest.raises(ConfigError, match="no store was given"):
        run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, run_missing=False)


def test_a_second_run_is_read_from_the_store_not_run(tmp_path, child):
    df, spec = _table()
    store = tmp_path / "store"
    first = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=store)
    assert child.launches == 1 and first.status == "finished" and not first.reused
    second = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=str(store))
    assert child.launches == 1 and second.status == "finished" and second.reused
    assert second.seconds == first.seconds
    pd.testing.assert_frame_equal(second.synth, first.synth)
    # Decoded as a fresh run's codes are, numeric values drawn by the run's seed.
    fresh = TableEncoder(spec).decode(child.written[0], np.random.default_rng(0))
    pd.testing.assert_frame_equal(second.synth, fresh)
    # Under a cap shorter than its seconds, a finished run answers as timed out at that cap:
    # the report states the cap of every run it draws.
    short = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=1e-9, store=store)
    assert (short.status, short.seconds, short.synth, short.reused) == (
        "timed out",
        1e-9,
        None,
        True,
    )
    assert child.launches == 1
    # The store holds the synthetic codes and the record, not the real table.
    names = _entries(store)
    assert len(names) == 2 and names[0].endswith(".finished.json")
    assert names[1] == names[0].replace(".json", ".npy")
    assert np.array_equal(np.load(store / names[1], allow_pickle=False), child.written[0])
    record = json.loads((store / names[0]).read_text())
    assert {"method", "epsilon", "delta", "rho", "seed", "cap", "status", "seconds"} <= set(record)
    assert {"opendp", "made"} <= set(record)
    assert record["configuration"] == baselines.CONFIGURATIONS["aim"]
    assert (record["method"], record["epsilon"], record["seed"], record["cap"]) == (
        "aim",
        1.6,
        0,
        300,
    )
    assert record["status"] == "finished" and record["seconds"] == first.seconds


@pytest.mark.parametrize(
    "change",
    [
        {"seed": 1},
        {"epsilon": 0.8},
        {"delta": 1e-7},
        {"method": "mst"},
        {"df": "other"},
        {"opendp": "9.9.9"},
        {"configuration": "another way of running AIM"},
    ],
)
def test_another_input_is_another_run(tmp_path, child, monkeypatch, change):
    df, spec = _table()
    call = {"method": "aim", "df": df, "epsilon": 1.6, "delta": 1e-6, "seed": 0}
    run_capped(**call, spec=spec, cap=300, store=tmp_path)
    if "opendp" in change:
        monkeypatch.setattr(run_store, "opendp_version", lambda: change["opendp"])
    elif "configuration" in change:  # a run of AIM made another way is not this one
        monkeypatch.setitem(baselines.CONFIGURATIONS, "aim", change["configuration"])
    else:
        call |= change
    if change.get("df") == "other":
        call["df"] = _table(seed=4)[0]
    run = run_capped(**call, spec=spec, cap=300, store=tmp_path)
    assert child.launches == 2 and not run.reused
    assert len([n for n in _entries(tmp_path) if n.endswith(".json")]) == 2


def test_the_key_changes_with_every_input():
    codes = np.arange(12, dtype=np.int64).reshape(6, 2) % 3
    base = (codes, [3, 3], "aim", 0.1, 0, "0.16.0")
    keys = {
        run_store.run_key(*base),
        run_store.run_key(codes[::-1], *base[1:]),
        run_store.run_key(codes.astype(np.int32), *base[1:]),
        run_store.run_key(codes.reshape(4, 3), [3, 3, 3], *base[2:]),
        run_store.run_key(codes, [3, 4], *base[2:]),
        run_store.run_key(codes, [3, 3], "mst", *base[3:]),
        run_store.run_key(codes, [3, 3], "aim", float(np.nextafter(0.1, 1)), 0, "0.16.0"),
        run_store.run_key(codes, [3, 3], "aim", 0.1, 1, "0.16.0"),
        run_store.run_key(codes, [3, 3], "aim", 0.1, 0, "0.17.0"),
    }
    assert len(keys) == 9
    assert run_store.run_key(*base) == run_store.run_key(
        codes.copy(), [3, 3], "aim", 0.1, 0, "0.16.0"
    )


def test_a_timed_out_run_answers_a_shorter_cap_only(tmp_path, child):
    df, spec = _table()
    child.outcome = "timed out"
    first = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=10, store=tmp_path)
    assert first.status == "timed out" and first.synth is None and child.launches == 1
    (entry,) = _entries(tmp_path)
    kept = (tmp_path / entry).read_bytes()
    shorter = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=5, store=tmp_path)
    assert child.launches == 1 and shorter.reused and shorter.status == "timed out"
    assert shorter.synth is None and shorter.seconds == first.seconds
    same = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=10, store=tmp_path)
    assert child.launches == 1 and same.reused
    longer = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=20, store=tmp_path)
    assert child.launches == 2 and not longer.reused and longer.status == "timed out"
    assert len(_entries(tmp_path)) == 2 and (tmp_path / entry).read_bytes() == kept
    # Given the time, it finishes; from then on the finished run answers every cap.
    child.outcome = "finished"
    done = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=60, store=tmp_path)
    assert child.launches == 3 and done.status == "finished"
    again = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=5, store=tmp_path)
    assert child.launches == 3 and again.reused and again.status == "finished"
    pd.testing.assert_frame_equal(again.synth, done.synth)


def test_an_entry_is_never_replaced(tmp_path):
    record = {"method": "aim", "status": "finished", "seconds": 1.0, "cap": 9.0}
    codes = np.zeros((3, 2), dtype=np.int64)
    run_store.save(tmp_path, "k", record, codes)
    before = {n: (tmp_path / n).read_bytes() for n in _entries(tmp_path)}
    run_store.save(tmp_path, "k", record | {"seconds": 2.0}, codes + 1)
    assert {n: (tmp_path / n).read_bytes() for n in _entries(tmp_path)} == before
    stored = run_store.find(tmp_path, "k", 9.0)
    assert stored.seconds == 1.0 and not stored.codes.any()
    timed_out = {"method": "aim", "status": "timed out", "seconds": 9.5, "cap": 9.0}
    run_store.save(tmp_path, "t", timed_out, None)
    run_store.save(tmp_path, "t", timed_out | {"seconds": 10.0}, None)
    assert run_store.find(tmp_path, "t", 9.0).seconds == 9.5
    assert not [n for n in _entries(tmp_path) if n.endswith(".tmp")]


def test_codes_are_kept_in_the_smallest_unsigned_dtype_that_holds_them(tmp_path):
    """int64 codes below 256 are kept as uint8 (a byte a code, plus numpy's header), those up
    to 300 as uint16, and read back as the same values; negative codes are refused."""
    record = {"method": "aim", "status": "finished", "seconds": 1.0, "cap": 9.0}
    small = np.random.default_rng(0).integers(0, 256, (1000, 15))
    run_store.save(tmp_path, "small", record, small)
    assert (tmp_path / "small.finished.npy").stat().st_size <= 15_000 + 128
    stored = run_store.find(tmp_path, "small", 9.0).codes
    assert stored.dtype == np.uint8 and np.array_equal(stored, small)
    wide = np.array([[0, 300]])
    run_store.save(tmp_path, "wide", record, wide)
    stored = run_store.find(tmp_path, "wide", 9.0).codes
    assert stored.dtype == np.uint16 and np.array_equal(stored, wide)
    with pytest.raises(ValueError, match="non-negative"):
        run_store.save(tmp_path, "negative", record, np.array([[-1, 2]]))


@pytest.mark.parametrize(
    "damage",
    [
        ("finished.json", b"{not json"),
        ("finished.json", b'{"status": "finished", "cap": 300}'),
        ("finished.npy", b"\x93NUMPY truncated"),
        ("finished.npy", "other codes"),  # a readable array, not the one the record names
        ("timed-out", b"[]"),
    ],
)
def test_a_corrupt_entry_is_one_line_naming_it(tmp_path, child, damage):
    df, spec = _table()
    child.outcome = "timed out" if damage[0] == "timed-out" else "finished"
    run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=tmp_path)
    (path,) = [tmp_path / n for n in _entries(tmp_path) if damage[0] in n]
    if damage[1] == "other codes":
        np.save(path, np.zeros((200, 4), dtype=np.int64), allow_pickle=False)
    else:
        path.write_bytes(damage[1])
    with pytest.raises(ConfigError) as caught:
        run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=tmp_path)
    message = str(caught.value)
    assert str(path) in message and "delete it" in message and "\n" not in message
    assert child.launches == 1


def test_a_failed_run_is_not_stored(tmp_path, child):
    df, spec = _table()
    child.outcome = "failed"
    run = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=tmp_path / "s")
    assert run.status == "failed: ValueError: boom" and run.synth is None
    assert _entries(tmp_path / "s") == []
    child.outcome = "finished"
    assert run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300, store=tmp_path / "s").status == (
        "finished"
    )
    assert child.launches == 2


def test_without_a_store_every_call_runs(tmp_path, child):
    df, spec = _table()
    first = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300)
    second = run_capped("aim", df, spec, 1.6, 1e-6, 0, cap=300)
    assert child.launches == 2 and not (first.reused or second.reused)
    assert not first.synth.equals(second.synth)


def _with_mbi(monkeypatch: pytest.MonkeyPatch) -> None:
    """The TVD figure believes mbi and polars are installed (the child is fake anyway)."""
    found = types.SimpleNamespace(find_spec=lambda name: object())
    monkeypatch.setattr(tvd_module, "importlib", types.SimpleNamespace(util=found))


def test_tvd_figure_notes_a_run_reused_from_the_store(tmp_path, child, monkeypatch):
    _with_mbi(monkeypatch)
    df, spec = _table(300)
    params = dict(FIGURES["tvd"].params["tiny"])
    params |= {"methods": [], "baselines": ["aim"], "cap": 3600, "only_at": {}}
    ctx = ReportContext("t", df, spec, seeds=1, progress=False, baseline_store=str(tmp_path))
    notes = FIGURES["tvd"].compute(ctx, params).notes
    assert notes[1].startswith("AIM (OpenDP): eps 1.6 seed 0: finished ")
    assert "reused" not in " ".join(notes)
    (record,) = tmp_path.glob("*.finished.json")
    record.write_text(json.dumps(json.loads(record.read_text()) | {"seconds": 2228.4}))
    ctx = ReportContext("t", df, spec, seeds=1, progress=False, baseline_store=str(tmp_path))
    data = FIGURES["tvd"].compute(ctx, params)
    assert data.notes[1] == "AIM (OpenDP): eps 1.6 seed 0: reused from the store, finished 2228 s"
    assert "reused from the store was made by an earlier report" in data.notes[0]
    assert child.launches == 1
    assert [s["label"] for s in data.panels[0].series] == ["AIM (OpenDP)"]


def test_report_baseline_store_reaches_the_tvd_figure(tmp_path, child, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    _with_mbi(monkeypatch)
    out, store = tmp_path / "r", tmp_path / "store"
    argv = ["report", "--tiny", "--quiet", "--out", str(out), "--figures", "tvd"]
    argv += ["--baselines", "mst", "--cap", "60", "--baseline-store", str(store)]
    assert main(argv) == 0
    assert "seed 0: finished" in json.loads((out / "tvd.json").read_text())["notes"][1]
    assert main([*argv, "--update"]) == 0 and child.launches == 1
    note = json.loads((out / "tvd.json").read_text())["notes"][1]
    assert note.startswith("MST (OpenDP): eps 1.6 seed 0: reused from the store, finished ")
    assert note in (out / "REPORT.md").read_text()
    capsys.readouterr()
    assert main([*argv[:-1], str(next(store.glob("*.json"))), "--force"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--baseline-store" in err and "is a file" in err and "\n" not in err
