"""A table with empty cells in three columns (categorical of integers, numeric, categorical
of text) over two parties, shared by the missing-value tests of the secure and central paths."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vertimrf.domain import ColumnSpec, DomainSpec

N = 4000
SPEC = DomainSpec(
    [
        ColumnSpec("c0", "categorical", tuple(range(6)), missing=True),
        ColumnSpec("c1", "categorical", (0, 1)),
        ColumnSpec("c2", "numeric", None, 0, 90, 6, missing=True),
        ColumnSpec("c3", "categorical", ("w", "x", "y", "z")),
        ColumnSpec("c4", "categorical", ("p", "q", "r", "s", "t"), missing=True),
    ]
)
PARTIES = [("A", ["c0", "c1", "c2"]), ("B", ["c3", "c4"])]
EMPTY = ("c0", "c2", "c4")


def missing_table() -> pd.DataFrame:
    """Every column a noisy function of one latent code; about 10%, 20% and 30% of c0, c2
    and c4 empty, all of them in rows whose latent code is 3 or more."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 6, N)

    def noisy(values: np.ndarray, size: int) -> np.ndarray:
        return np.where(rng.random(N) < 0.7, values % size, rng.integers(0, size, N))

    frame = pd.DataFrame(
        {
            "id": rng.permutation(10 * N)[:N],
            "c0": noisy(latent, 6).astype(float),  # as pandas reads integers with gaps
            "c1": noisy(latent, 2),
            "c2": (latent * 15 + rng.uniform(0, 15, N)).round(2),
            "c3": np.array(SPEC["c3"].values, dtype=object)[noisy(latent, 4)],
            "c4": np.array(SPEC["c4"].values, dtype=object)[noisy(latent, 5)],
        }
    )
    for column, rate in zip(EMPTY, (0.1, 0.2, 0.3), strict=True):
        frame.loc[rng.random(N) < 2 * rate * (latent >= 3), column] = None
    return frame
