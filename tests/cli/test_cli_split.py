"""`vertimrf split`: each party's CSV of a bundled data set, linked by the ID column."""

from __future__ import annotations

import pandas as pd
import pytest

from vertimrf.cli import main
from vertimrf.datasets import load_dataset


def test_split_writes_each_party_its_columns_and_the_ids(tmp_path, capsys):
    args = ["split", "--dataset", "nltcs", "--party", "A=0,1,2", "--party", "B=3,4",
            "--out-dir", str(tmp_path)]  # fmt: skip
    assert main(args) == 0
    real, _ = load_dataset("nltcs")
    a, b = (pd.read_csv(tmp_path / f"{n}.csv") for n in "AB")
    assert list(a.columns) == ["id", "0", "1", "2"] and list(b.columns) == ["id", "3", "4"]
    joined = a.merge(b, on="id")
    assert (joined[["0", "1", "2", "3", "4"]].to_numpy() == real.iloc[:, :5].to_numpy()).all()
    assert main(args) == 2  # never overwrites
    assert "refusing to overwrite" in capsys.readouterr().err


def test_split_refuses_unknown_or_shared_columns(tmp_path, capsys):
    for parties, why in ((["A=0,1", "B=1,2"], "distinct columns"),
                         (["A=0", "B=99"], "not columns of the spec")):  # fmt: skip
        argv = ["split", "--dataset", "nltcs", "--out-dir", str(tmp_path)]
        for p in parties:
            argv += ["--party", p]
        assert main(argv) == 2
        assert why in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def _split(out, *extra):
    """Split NLTCS over A, B and C with --all (and ``extra``) into ``out``; the exit code."""
    return main(["split", "--dataset", "nltcs", "--party", "A=0,1,2", "--party", "B=3,4",
                 "--party", "C=5", "--all", "--out-dir", str(out), *extra])  # fmt: skip


def _files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_overlap_one_writes_the_bytes_of_a_split_without_it(tmp_path):
    assert _split(tmp_path / "plain") == 0
    assert _split(tmp_path / "one", "--overlap", "1", "--seed", "9") == 0
    plain, one = _files(tmp_path / "plain"), _files(tmp_path / "one")
    assert set(one) == {*plain, "shared.csv"}
    assert all(one[name] == data for name, data in plain.items())
    assert one["shared.csv"] == plain["all.csv"]  # every row is shared


@pytest.mark.parametrize(("parties", "f"), [(2, 0.0), (2, 0.8), (3, 0.3), (3, 0.5)])
def test_overlap_gives_each_party_its_records_and_the_shared_and_union_tables(
    tmp_path, capsys, parties, f
):
    names = "ABC"[:parties]
    argv = ["split", "--dataset", "nltcs", "--all", "--out-dir", str(tmp_path), "--overlap", str(f)]
    for name, cols in zip(names, ("0,1,2", "3,4", "5")[:parties], strict=True):
        argv += ["--party", f"{name}={cols}"]
    assert main(argv) == 0
    real, spec = load_dataset("nltcs")
    n, m = len(real), parties
    s = round(n * f / (f + m * (1 - f)))
    r = (n - s) // m
    files = {p: pd.read_csv(tmp_path / f"{p}.csv") for p in names}
    holders = pd.concat([df["id"] for df in files.values()]).value_counts()
    shared = sorted(holders.index[holders == m])
    assert all(len(df) == s + r for df in files.values())
    assert len(shared) == s and (holders == 1).sum() == m * r and set(holders) <= {1, m}
    for df in files.values():  # each party's columns of the records it holds, exactly
        assert set(shared) <= set(df["id"])
        cols = list(df.columns[1:])
        assert (df[cols].to_numpy() == real.iloc[df["id"]][cols].to_numpy()).all()
        assert not df["id"].is_monotonic_increasing  # a random order
    if s:  # each party's own order: the shared records in a different order in every file
        assert len({tuple(df["id"][df["id"].isin(shared)]) for df in files.values()}) == m
    union = sorted(holders.index)
    for name, rows in (("shared", shared), ("all", union)):
        table = pd.read_csv(tmp_path / f"{name}.csv")
        assert list(table.columns) == list(spec.names)
        assert (table.to_numpy() == real.iloc[rows].to_numpy()).all() and len(table) == len(rows)
    out = capsys.readouterr().out
    assert f"rows every party holds: {s:,}; rows each party holds alone: {r:,}; " in out
    assert f"rows no party holds: {n - s - m * r:,} (of {n:,})" in out
    assert f"A: wrote {tmp_path / 'A.csv'} ({s + r:,} rows;" in out
    if union:  # the fraction config's --expected-shared takes (shared over all records held)
        assert f"--expected-shared {s / len(union):.2f}`" in out


def test_overlap_files_depend_on_the_seed_only(tmp_path):
    for name, seed in (("a", "3"), ("b", "3"), ("c", "4")):
        assert _split(tmp_path / name, "--overlap", "0.5", "--seed", seed) == 0
    assert _files(tmp_path / "a") == _files(tmp_path / "b") != _files(tmp_path / "c")
    assert _split(tmp_path / "d", "--overlap", "0.5") == 0
    assert _split(tmp_path / "e", "--overlap", "0.5", "--seed", "0") == 0
    assert _files(tmp_path / "d") == _files(tmp_path / "e")  # the default seed is 0


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["--overlap", "1.5"], "overlap must be a fraction from 0 to 1"),
        (["--overlap", "-0.2"], "overlap must be a fraction from 0 to 1"),
        (["--overlap", "nan"], "overlap must be a fraction from 0 to 1"),
        (["--overlap", "half"], "--overlap takes a fraction from 0 to 1; got 'half'"),
        (["--seed", "3"], "--seed draws the records of --overlap"),
        (["--overlap", "0.5", "--seed", "-1"], "--seed must be a whole number >= 0"),
    ],
)
def test_a_bad_overlap_or_seed_is_one_line_and_writes_nothing(tmp_path, capsys, extra, why):
    assert _split(tmp_path, *extra) == 2
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1
    assert not list(tmp_path.iterdir())


def test_overlap_never_overwrites_shared_csv_nor_names_a_party_shared(tmp_path, capsys):
    (tmp_path / "shared.csv").write_text("mine\n")
    assert _split(tmp_path, "--overlap", "0.5") == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert _files(tmp_path) == {"shared.csv": b"mine\n"}
    assert _split(tmp_path, "--overlap", "0.5", "--force") == 0
    assert (tmp_path / "shared.csv").read_text() != "mine\n"
    argv = ["split", "--dataset", "nltcs", "--party", "shared=0", "--party", "B=1", "--all",
            "--overlap", "0.5", "--out-dir", str(tmp_path / "x")]  # fmt: skip
    assert main(argv) == 2
    assert "name no party 'shared'" in capsys.readouterr().err
