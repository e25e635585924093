"""A party holding one column, with record sets that really differ: ISLR::Default with 3
parties once gave `student` back exactly 50/50 against 29% real.
No own pair counted the column over its party's records, and the union fit reads a cross
marginal only where an own table holds each party's part: the column had no measurement at
all. The first release now holds its 1-way marginal."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from vertimrf import fit_vertical
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.methods import rules

SPEC = DomainSpec(
    [
        ColumnSpec("student", "categorical", ("No", "Yes")),
        ColumnSpec("x", "numeric", lower=-4, upper=4, bins=8),
        ColumnSpec("y", "categorical", (0, 1, 2)),
    ]
)
PARTIES = [("A", ["student"]), ("B", ["x", "y"])]


def _plan(record_sets: str):
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=SPEC, parties=PARTIES, method="secure",
        record_sets=record_sets, max_rows=16384,
    )  # fmt: skip
    return rules(cfg).secure_plan(cfg)


def test_the_first_release_holds_a_lone_columns_1_way_marginal_with_partial_sets_only():
    assert _plan("partial").lone_attributes() == [0]
    assert (0,) in _plan("partial").first_release()
    assert _plan("equal").lone_attributes() == []
    assert all(len(m) == 2 for m in _plan("equal").first_release())


def test_a_lone_column_keeps_its_distribution():
    rng = np.random.default_rng(0)
    n = 6000
    student = rng.random(n) < 0.3
    df = pd.DataFrame(
        {
            "student": np.where(student, "Yes", "No"),
            "x": (rng.normal(0, 1, n) + student).clip(-4, 4),
            "y": rng.integers(0, 3, n),
        }
    )
    ids = np.arange(n)
    frames = {  # A lacks the last 1,500 records, B the first 1,500
        "A": df[["student"]].assign(id=ids).iloc[: n - 1500],
        "B": df[["x", "y"]].assign(id=ids).iloc[1500:],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit_vertical(
            frames, SPEC, id_column="id", epsilon=1.0, delta=1e-6, max_rows=16384, seed=1
        )
    rows = model.sample(5000, seed=2)
    real = (df["student"] == "Yes").mean()  # 0.297
    # Bound: the 1-way's noise is under 1% of A's 4,500 records, the sample's sd is 0.0065
    # (6 sd: 0.04); before the fix the share was 0.5 exactly, 0.2 off.
    assert abs((rows["student"] == "Yes").mean() - real) < 0.05
