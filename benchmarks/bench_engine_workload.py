"""A workload's error with and without telling the engine the workload.

NLTCS and Adult, delta 1e-6, seeds 0..2: the engine (``PrivMRF(..., selection="engine")``),
method secure (``simulate(..., method="secure", max_rows=65_536)``, the columns split 8 |
the rest) and, for reference, the aim-like preset (``selection="aim"``), each fitted twice:
with the default workload (every 3-way marginal) and with a workload of the 3-way marginals
over five columns of both parties (``WORKLOADS``). Each fit is scored by
``metrics.workload_tvd`` on that workload, and by ``metrics.tvd`` (3-way, 300 marginals) on
the whole table.

    python benchmarks/bench_engine_workload.py --json benchmarks/results/engine_workload.json \
        --md benchmarks/results/engine_workload.md
"""

from __future__ import annotations

import argparse
import sys
import time
from itertools import combinations
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

DELTA, MAX_ROWS, SPLIT = 1e-6, 65_536, 8
COLUMNS = {"nltcs": ("0", "3", "7", "10", "15"), "adult": ("0", "3", "5", "9", "14")}
WORKLOADS = {name: [list(m) for m in combinations(cols, 3)] for name, cols in COLUMNS.items()}


def measure(dataset: str, method: str, epsilon: float, seed: int, aware: bool) -> dict:
    """One fit: its workload TVD, whole-table 3-way TVD and seconds."""
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd, workload_tvd
    from vertimrf.synth.privmrf import AIMOptions, EngineOptions

    df, spec = load_dataset(dataset)
    workload = WORKLOADS[dataset]
    start = time.perf_counter()
    if method == "secure":
        names = list(spec.names)
        extra = {"secure_workload": workload} if aware else {}
        synth, _ = simulate(
            df, spec, [names[:SPLIT], names[SPLIT:]], epsilon, DELTA, method="secure",
            seed=seed, max_rows=MAX_ROWS, **extra,
        )  # fmt: skip
    elif method == "aim-like":
        aim = AIMOptions(workload=workload if aware else None)
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection="aim", aim=aim, progress=False)
        synth = fit.fit(df, spec).sample()
    else:
        engine = EngineOptions(workload=workload if aware else None)
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection="engine", engine=engine, progress=False)
        synth = fit.fit(df, spec).sample()
    return {
        "dataset": dataset,
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        "workload_given": aware,
        "workload_tvd": workload_tvd(df, synth, spec, workload),
        "tvd3": tvd(df, synth, spec, ways=3),
        "seconds": time.perf_counter() - start,
    }


def _cell(rows: list[dict], key: str) -> str:
    v = np.asarray([r[key] for r in rows])
    return f"{v.mean():.4f} +- {v.std(ddof=1) / np.sqrt(v.size):.4f}"


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# A workload's error with and without telling the engine the workload",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; delta {DELTA}, "
        f"seeds {head['seeds']}; mean +- standard error. The workload: every 3-way marginal "
        f"of columns {dict(COLUMNS)} (both parties' columns). 'default' is the default "
        "workload (every 3-way marginal of the table); 'given' passes the workload "
        "(`EngineOptions(workload=...)`, the config's `secure_workload`, or "
        "`AIMOptions(workload=...)`).",
        "",
        "| dataset | method | epsilon | workload TVD, default | workload TVD, given | "
        "ratio | 3-way TVD, default | 3-way TVD, given |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["method"], r["epsilon"]) for r in rows})
    for dataset, method, epsilon in keys:
        group = [r for r in rows if (r["dataset"], r["method"], r["epsilon"]) == (dataset,
                 method, epsilon)]  # fmt: skip
        default = [r for r in group if not r["workload_given"]]
        given = [r for r in group if r["workload_given"]]
        ratio = np.mean([r["workload_tvd"] for r in given]) / np.mean(
            [r["workload_tvd"] for r in default]
        )
        out.append(
            f"| {dataset} | {method} | {epsilon:g} | {_cell(default, 'workload_tvd')} | "
            f"{_cell(given, 'workload_tvd')} | {ratio:.2f} | {_cell(default, 'tvd3')} | "
            f"{_cell(given, 'tvd3')} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["nltcs", "adult"])
    parser.add_argument("--methods", nargs="+", default=["engine", "secure", "aim-like"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 1.6])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args()
    head = {**run_head(__file__, None), "seeds": f"0..{args.seeds - 1}"}
    rows = [
        measure(dataset, method, epsilon, seed, aware)
        for dataset in args.datasets
        for method in args.methods
        for epsilon in args.epsilons
        for seed in range(args.seeds)
        for aware in (False, True)
    ]
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
