"""A small table of correlated columns for the engine's tests."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.mrf.estimation import Measurement

SIZES = (2, 3, 4, 2, 5)


def latent_table(rows: int = 2000, seed: int = 0) -> tuple[pd.DataFrame, DomainSpec]:
    """Correlated columns: each a noisy function of one latent code."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 6, rows)
    cols = {
        f"c{j}": np.where(rng.random(rows) < 0.7, (latent + j) % u, rng.integers(0, u, rows))
        for j, u in enumerate(SIZES)
    }
    return pd.DataFrame(cols), DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(SIZES)})


def assert_exact(df: pd.DataFrame, measurements: Iterable[Measurement]) -> None:
    """Brute force: every cell of every measurement counted row by row."""
    codes = df.to_numpy()
    for m in measurements:
        exact = np.zeros([SIZES[a] for a in m.attrs])
        for cell in product(*(range(SIZES[a]) for a in m.attrs)):
            exact[cell] = np.all(codes[:, list(m.attrs)] == cell, axis=1).sum()
        np.testing.assert_array_equal(m.values.reshape(exact.shape), exact)
