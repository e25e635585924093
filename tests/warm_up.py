"""One small run of every kernel path a test reaches (the secure method with partial and with
equal record sets, the engine's fit and sampling, the metrics), made once per test session by
the ``_kernels_ready`` fixture in ``conftest``: Numba compiles (or loads from its cache) every
kernel there, so that no test's time, nor a test's timeout, pays for it."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

from vertimrf import PrivMRF, simulate
from vertimrf.domain import DomainSpec
from vertimrf.metrics import column_tvd, tvd

SPEC = DomainSpec.from_dict(
    {
        "columns": [
            {"name": "a", "type": "categorical", "categories": [0, 1, 2]},
            {"name": "b", "type": "categorical", "categories": [0, 1, 2, 3]},
            {"name": "x", "type": "numeric", "lower": 0, "upper": 100, "bins": 8},
            {"name": "c", "type": "categorical", "categories": [0, 1]},
        ]
    }
)


def warm_up() -> float:
    """Run the kernels' paths once on 300 rows; the seconds it took."""
    start = time.perf_counter()
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 3, n),
            "b": rng.integers(0, 4, n),
            "x": rng.normal(50, 10, n).round(1),
            "c": rng.integers(0, 2, n),
        }
    )
    ids = np.arange(n)
    frames = {  # partial record sets: A lacks the last 50 records, B the first 50
        "A": df[["a", "x"]].assign(id=ids).iloc[: n - 50],
        "B": df[["b", "c"]].assign(id=ids).iloc[50:],
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        simulate(frames, SPEC, id_column="id", epsilon=1.0, delta=1e-6, max_rows=4096, seed=0)
        synth, _ = simulate(df, SPEC, [["a", "x"], ["b", "c"]], 1.0, 1e-6, seed=0, max_rows=4096)
        PrivMRF(1.0, 1e-6, seed=0, progress=False).fit(df, SPEC).sample(100, seed=0)
    tvd(df, synth, SPEC)
    column_tvd(df, synth, SPEC)
    return time.perf_counter() - start
