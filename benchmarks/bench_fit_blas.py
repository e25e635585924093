"""The engine's fit with the mirror descent's per-step reductions by the library's kernels
(``vertimrf.kernels.loss.dot_diff`` and ``weighted_squares``) against the same fit with them
by ``numpy.dot`` (numpy's BLAS, as before the kernels), in the same process, interleaved.

The difference shows when the cores are busy: numpy's BLAS splits a dot of 10,000 doubles
over threads, and waking them on busy cores costs milliseconds a call, on every trial step.
``--busy N`` starts N processes that spin for the whole run (default 0: the machine as it is;
the load before the run is printed).

At each point: one warm-up fit of each, then ``--repeats`` rounds of (kernels, numpy.dot),
seed = the round; the fit alone (``PrivMRF(selection="engine").fit``), delta 1e-6. The ratio
is of the medians.

    python benchmarks/bench_fit_blas.py nltcs adult --json benchmarks/results/fit_blas.json \
        --md benchmarks/results/fit_blas.md
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, load_average, run_head, write_results  # noqa: E402

DELTA = 1e-6


def _by_numpy_dot() -> dict:
    """The reductions as they were: numpy temporaries and ``numpy.dot``."""
    return {
        "dot_diff": lambda g, a, b: float(np.dot(g, a - b)),
        "weighted_squares": lambda w, r: float(np.dot(w, r**2)),
    }


def _fit(df, spec, epsilon: float, seed: int, reductions: dict | None) -> float:
    """Seconds of one engine fit, with ``reductions`` in place of the kernels if given."""
    from vertimrf import PrivMRF
    from vertimrf.kernels import loss

    kept = {name: getattr(loss, name) for name in ("dot_diff", "weighted_squares")}
    for name, fn in (reductions or {}).items():
        setattr(loss, name, fn)
    try:
        start = time.perf_counter()
        PrivMRF(epsilon, DELTA, seed=seed, selection="engine", progress=False).fit(df, spec)
        return time.perf_counter() - start
    finally:
        for name, fn in kept.items():
            setattr(loss, name, fn)


def measure(dataset: str, epsilon: float, repeats: int) -> dict:
    """Seconds per round of each variant, their medians and the ratio."""
    from vertimrf import load_dataset

    df, spec = load_dataset(dataset)
    times = interleaved(
        lambda seed: _fit(df, spec, epsilon, seed, None),
        lambda seed: _fit(df, spec, epsilon, seed, _by_numpy_dot()),
        repeats,
    )
    return {
        "dataset": dataset,
        "epsilon": epsilon,
        "kernels_seconds": times["first"],
        "numpy_dot_seconds": times["second"],
        "kernels_median": times["first_median"],
        "numpy_dot_median": times["second_median"],
        "ratio": times["ratio"],
    }


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# The engine's fit: per-step reductions by kernels against numpy.dot (BLAS)",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}; {head['busy']} spinning processes started by the benchmark; "
        f"delta {DELTA}; a warm-up fit of each, then the rounds interleaved.",
        "",
        "| dataset | epsilon | kernels s (median) | numpy.dot s (median) | numpy.dot / kernels |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['dataset']} | {r['epsilon']:g} | {r['kernels_median']:.2f} "
            f"| {r['numpy_dot_median']:.2f} | {r['ratio']:.2f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["nltcs", "adult"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 1.6])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args()
    head = {**run_head(__file__, None), "load": load_average(), "busy": args.busy}
    spin = "while True:\n    pass\n"
    spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(args.busy)]
    try:
        rows = []
        for dataset in args.datasets:
            for epsilon in args.epsilons:
                rows.append(measure(dataset, epsilon, args.repeats))
                print(markdown(head, rows).splitlines()[-1], flush=True)
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
