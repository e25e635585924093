"""`vertimrf split`: each party's CSV of a bundled data set, linked by the ID column."""

from __future__ import annotations

import pandas as pd

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
