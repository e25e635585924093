"""3-way TVD and time of Centralized PrivMRF, the engine on one table and method secure.

NLTCS and Adult, delta 1e-6, at each epsilon and seed, three synthesizers on the same table:

* ``privmrf``: ``PrivMRF(epsilon, delta, seed=s)``, the paper's selection (the default);
* ``engine``: ``PrivMRF(..., selection="engine")``, the select-measure-fit engine with the
  local oracle (exact counts plus discrete Gaussian noise, method secure's budget split);
* ``secure``: ``simulate(..., method="secure", max_rows=65_536)`` over two parties (the
  paper's split, 8 & 8 and 8 & 7 columns, as ``bench_budget_spent.py``), the same engine
  with the secure product as its oracle.

Each row has the 3-way TVD (``metrics.tvd``, 300 marginals) of ``round(n_hat)`` synthetic
rows, the ledger's total rho against the budget's, and the seconds of fit and sampling.

    python benchmarks/bench_engine.py --seeds 3 --epsilons 0.4 1.6 \
        --json benchmarks/results/engine.json --md benchmarks/results/engine.md
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

DELTA, MAX_ROWS = 1e-6, 65_536
SPLITS = {"nltcs": 8, "adult": 8}
EPSILONS = (0.4, 1.6)
METHODS = ("privmrf", "engine", "secure")


def measure(dataset: str, method: str, epsilon: float, seed: int) -> dict:
    """One seeded run: the 3-way TVD, spent and budgeted rho, seconds."""
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd
    from vertimrf.privacy.zcdp import epsilon_to_rho

    df, spec = load_dataset(dataset)
    start = time.perf_counter()
    if method == "secure":
        names = list(spec.names)
        parts = [names[: SPLITS[dataset]], names[SPLITS[dataset] :]]
        synth, report = simulate(
            df, spec, parts, epsilon, DELTA, method="secure", seed=seed, max_rows=MAX_ROWS
        )
        spent = report.ledger.total_rho
    else:
        selection = "engine" if method == "engine" else "privmrf"
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection=selection, progress=False)
        synth = fit.fit(df, spec).sample()
        spent = fit.report().rho
    seconds = time.perf_counter() - start
    return {
        "dataset": dataset,
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        "tvd3": tvd(df, synth, spec, ways=3),
        "spent_rho": spent,
        "rho": epsilon_to_rho(epsilon, DELTA),
        "seconds": seconds,
    }


def _mean(values: list[float]) -> tuple[float, float]:
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Centralized PrivMRF, the engine on one table, and method secure",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}; delta {DELTA}, secure max_rows {MAX_ROWS:,}, "
        f"seeds {head['seeds']}.",
        "",
        "| dataset | epsilon | method | 3-way TVD (mean +- se) | spent rho / rho | seconds |",
        "|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["epsilon"]) for r in rows})
    for dataset, epsilon in keys:
        for method in METHODS:
            sel = [r for r in rows if (r["dataset"], r["epsilon"], r["method"]) == (dataset,
                   epsilon, method)]  # fmt: skip
            if not sel:
                continue
            tvd, se = _mean([r["tvd3"] for r in sel])
            frac = [r["spent_rho"] / r["rho"] for r in sel]
            seconds = _mean([r["seconds"] for r in sel])[0]
            out.append(
                f"| {dataset} | {epsilon:g} | {method} | {tvd:.4f} +- {se:.4f} | "
                f"{min(frac):.10f}-{max(frac):.10f} | {seconds:.1f} |"
            )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=list(SPLITS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    with open("/proc/loadavg", encoding="utf-8") as fh:
        load = " ".join(fh.read().split()[:3])
    rows = []
    for dataset in args.datasets:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                for method in args.methods:
                    rows.append(measure(dataset, method, epsilon, seed))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    head = {**run_head(__file__, argv), "seeds": f"0..{args.seeds - 1}", "load": load}
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
