"""A small mixed table, shared by the fitted-model tests: two categorical columns with string
values, a numeric one, an integer one, and a dependent pair (c0, c2)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec

PARTIES = [["c0", "num"], ["c2", "c3"]]
COLUMNS = [
    {"name": "c0", "type": "categorical", "categories": ["a", "b", "c"]},
    {"name": "num", "type": "numeric", "lower": 0, "upper": 10, "bins": 4},
    {"name": "c2", "type": "categorical", "categories": ["x", "y", "z"]},
    {"name": "c3", "type": "categorical", "categories": [0, 1]},
]


def mixed_table(n: int = 600) -> tuple[pd.DataFrame, DomainSpec]:
    """``n`` rows of the table and its spec (seeded: the same rows every call)."""
    rng = np.random.default_rng(0)
    c0 = rng.integers(0, 3, n)
    c2 = np.where(rng.random(n) < 0.7, c0, rng.integers(0, 3, n))
    df = pd.DataFrame(
        {
            "c0": np.array(["a", "b", "c"])[c0],
            "num": rng.uniform(0, 10, n),
            "c2": np.array(["x", "y", "z"])[c2],
            "c3": rng.integers(0, 2, n),
        }
    )
    return df, DomainSpec.from_dict({"columns": COLUMNS})
