"""Budget spent and 3-way TVD of method secure, before and after the exact noise scales.

NLTCS and Adult (two parties, the paper's split: 8 & 8, 8 & 7 columns), delta 1e-6, equal
record sets as ``simulate`` on one frame (max_rows 65,536), at each epsilon and seed: the
server ledger's total rho against the config's, and the 3-way TVD (``metrics.tvd``, 300
marginals) of the synthetic table. The baseline tree (``--baseline``, e.g. ``git archive``
of the commit before the change) and this tree each run in their own process
(PYTHONPATH), one after the other, so their numbers come from the same machine; a config
a tree refuses is recorded with its message.

    python benchmarks/bench_budget_spent.py --baseline ../base --baseline-commit C --seeds 3 \
        --json J --md M
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, run_head, write_results  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
DELTA, MAX_ROWS = 1e-6, 65_536
SPLITS = {"nltcs": 8, "adult": 8}
EPSILONS = (0.4, 1.6, 60.0)


def measure(dataset: str, epsilon: float, seed: int) -> dict:
    """One seeded run of secure in this process: spent and budgeted rho, TVD, seconds."""
    from vertimrf import load_dataset, simulate
    from vertimrf.errors import ConfigError
    from vertimrf.metrics import tvd
    from vertimrf.privacy.zcdp import epsilon_to_rho

    df, spec = load_dataset(dataset)
    names = list(spec.names)
    parts = [names[: SPLITS[dataset]], names[SPLITS[dataset] :]]
    row: dict = {"dataset": dataset, "epsilon": epsilon, "seed": seed}
    row["rho"] = epsilon_to_rho(epsilon, DELTA)
    start = time.perf_counter()
    try:
        synth, report = simulate(
            df, spec, parts, epsilon, DELTA, method="secure", seed=seed, max_rows=MAX_ROWS
        )
    except ConfigError as exc:
        return {**row, "refused": str(exc)}
    row["seconds"] = time.perf_counter() - start
    row["spent_rho"] = report.ledger.total_rho
    row["spent_epsilon"] = report.ledger.total_epsilon(DELTA)
    row["tvd3"] = tvd(df, synth, spec, ways=3)
    return row


def worker(datasets: list[str], epsilons: list[float], seeds: int) -> None:
    for dataset in datasets:
        for epsilon in epsilons:
            for seed in range(seeds):
                print(json.dumps(measure(dataset, epsilon, seed)), flush=True)


def run_tree(
    tree: Path, label: str, datasets: list[str], epsilons: list[float], seeds: int
) -> list[dict]:
    """Every run with ``tree``'s code, in one process."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, __file__, "--worker", "--seeds", str(seeds), *datasets]
    args += ["--epsilons", *(str(e) for e in epsilons)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd=tree)
    rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return [{"tree": label, **r} for r in rows]


def _mean(rows: list[dict], key: str) -> tuple[float, float]:
    v = [r[key] for r in rows if key in r]
    if not v:
        return float("nan"), float("nan")
    return float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Budget spent by method secure, before and after",
        "",
        f"`{head['command']}`; commit {head['commit']} (baseline {head['baseline_commit']}); "
        f"{head['machine']}; delta {DELTA}, max_rows {MAX_ROWS:,}, seeds 0..{head['seeds'] - 1}.",
        "",
        "| dataset | epsilon | tree | spent rho / rho | spent epsilon | 3-way TVD (mean +- se) "
        "| seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["epsilon"]) for r in rows})
    for dataset, epsilon in keys:
        for tree in ("before", "after"):
            sel = [r for r in rows if (r["dataset"], r["epsilon"], r["tree"]) == (dataset,
                   epsilon, tree)]  # fmt: skip
            if sel:
                out.append(f"| {dataset} | {epsilon:g} | {tree} | {_cells(sel)} |")
    return "\n".join(out) + "\n"


def _cells(sel: list[dict]) -> str:
    """The spent fraction, spent epsilon, TVD and seconds of one tree's runs at one epsilon."""
    if "refused" in sel[0]:
        return f"refused: {sel[0]['refused']} | | |"
    frac = [r["spent_rho"] / r["rho"] for r in sel]
    tvd, se = _mean(sel, "tvd3")
    spent = np.mean([r["spent_epsilon"] for r in sel])
    seconds = _mean(sel, "seconds")[0]
    return (
        f"{min(frac):.10f}-{max(frac):.10f} | {spent:.4g} | {tvd:.4f} +- {se:.4f} | {seconds:.1f}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=list(SPLITS))
    parser.add_argument("--baseline", type=Path, help="the tree before the change")
    parser.add_argument("--baseline-commit", help="its commit, when it is not a git tree")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.datasets, args.epsilons, args.seeds)
        return
    rows = []
    if args.baseline is not None:
        base = args.baseline.resolve()
        rows += run_tree(base, "before", args.datasets, args.epsilons, args.seeds)
    rows += run_tree(HERE, "after", args.datasets, args.epsilons, args.seeds)
    head = {
        **run_head(__file__, argv),
        "seeds": args.seeds,
        "baseline_commit": args.baseline_commit
        or (git_commit(args.baseline) if args.baseline else None),
    }
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
