"""A column may be called ``self``, as COUNT::rwm1984's self-employment dummy is: a model
fitted on such a frame samples it in its dtype, and ``vertimrf split --add-id self`` numbers
the rows. Both once went through ``DataFrame.assign(**{name: ...})``, whose own first
parameter is ``self`` ("got multiple values for argument 'self'", the corpus's traceback in
Centralized PrivMRF on rwm1984)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from vertimrf import PrivMRF
from vertimrf.cli import main
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.synth.dtypes import column_dtypes, typed

SPEC = DomainSpec(
    [
        ColumnSpec("self", "categorical", (0, 1)),
        ColumnSpec("age", "numeric", lower=25, upper=65, bins=8),
    ]
)


def _frame(n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"self": rng.integers(0, 2, n), "age": rng.integers(25, 66, n)})


def test_typed_casts_a_column_named_self() -> None:
    dtypes = column_dtypes(_frame(), SPEC)
    assert dtypes == {"self": "int64", "age": "int64"}

    def decode(codes: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"self": codes[:, 0].astype(float), "age": [30.2, 41.7, 64.9]})

    out = typed(decode, SPEC, dtypes)(np.array([[0, 0], [1, 2], [1, 7]]))
    assert out["self"].tolist() == [0, 1, 1] and out["age"].tolist() == [30, 42, 65]
    assert out.dtypes.map(str).to_dict() == {"self": "int64", "age": "int64"}


@pytest.mark.parametrize("selection", ["privmrf", "engine"])
def test_a_model_fitted_on_a_column_named_self_samples_it(selection: str) -> None:
    model = PrivMRF(1.0, 1e-6, seed=0, selection=selection, progress=False)
    synth = model.fit(_frame(), SPEC).sample(50, seed=0)
    assert list(synth.columns) == ["self", "age"] and len(synth) == 50
    assert str(synth["self"].dtype) == "int64" and set(synth["self"]) <= {0, 1}
    assert synth["age"].between(25, 65).all()


def test_split_add_id_may_be_named_self(tmp_path: Path) -> None:
    frame = _frame(20).rename(columns={"self": "employed"})
    frame.to_csv(tmp_path / "t.csv", index=False)
    spec = DomainSpec([ColumnSpec("employed", "categorical", (0, 1)), SPEC["age"]])
    spec.to_json(tmp_path / "spec.json")
    argv = ["split", "--data", str(tmp_path / "t.csv"), "--spec", str(tmp_path / "spec.json"),
            "--add-id", "self", "--party", "A=employed", "--party", "B=age",
            "--out-dir", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 0
    for name, column in (("A", "employed"), ("B", "age")):
        written = pd.read_csv(tmp_path / "out" / f"{name}.csv")
        assert written.columns.tolist() == ["self", column]
        assert sorted(written["self"]) == list(range(20))
        assert written[column].tolist() == frame[column].iloc[written["self"]].tolist()
