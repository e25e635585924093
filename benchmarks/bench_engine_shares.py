"""3-way TVD of the engine on one table (Centralized) under first-release shares of rho.

NLTCS and Adult, delta 1e-6, at each epsilon and share s: ``PrivMRF(..., selection="engine",
engine=EngineOptions(select=s, measure=0.999 - s))`` (the count keeps 0.001), seeds 0..2,
``metrics.tvd`` (3-way, 300 marginals) of ``round(n_hat)`` synthetic rows. It chose the
default first-release share of the engine and of method secure. With ``--rows N`` each seed
fits a sample of N rows of the table (``DataFrame.sample(random_state=seed)``) and is scored
against that sample: the SVM figure's folds are 2,000 rows.

    python benchmarks/bench_engine_shares.py --json benchmarks/results/engine_shares.json \
        --md benchmarks/results/engine_shares.md
    python benchmarks/bench_engine_shares.py adult --rows 2000 --shares 0.2 0.5 --seeds 5 \
        --json benchmarks/results/engine_shares_2000.json \
        --md benchmarks/results/engine_shares_2000.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

DELTA, COUNT = 1e-6, 0.001


def measure(
    dataset: str, epsilon: float, share: float, seeds: int, rows: int | None = None
) -> dict:
    """The 3-way TVD of each seed's fit at first-release share ``share`` (on a sample of
    ``rows`` rows, drawn by the seed, if given)."""
    from vertimrf import PrivMRF, load_dataset
    from vertimrf.metrics import tvd
    from vertimrf.synth.privmrf import EngineOptions

    df, spec = load_dataset(dataset)
    options = EngineOptions(count=COUNT, select=share, measure=round(1.0 - COUNT - share, 9))
    tvds = []
    for seed in range(seeds):
        real = df if rows is None else df.sample(n=rows, random_state=seed, ignore_index=True)
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection="engine", engine=options, progress=False)
        tvds.append(tvd(real, fit.fit(real, spec).sample(), spec, ways=3))
    return {"dataset": dataset, "epsilon": epsilon, "share": share, "tvd3": tvds}


def markdown(head: dict, rows: list[dict]) -> str:
    shares = sorted({r["share"] for r in rows})
    out = [
        "# The engine's 3-way TVD against its first-release share",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; delta {DELTA}, "
        f"seeds {head['seeds']}; {head['rows']}; mean +- standard error.",
        "",
        "| dataset | epsilon | " + " | ".join(f"share {s:g}" for s in shares) + " |",
        "|---|---|" + "---|" * len(shares),
    ]
    for dataset, epsilon in sorted({(r["dataset"], r["epsilon"]) for r in rows}):
        cells = []
        for s in shares:
            (row,) = [r for r in rows if (r["dataset"], r["epsilon"], r["share"]) == (dataset,
                      epsilon, s)]  # fmt: skip
            v = np.asarray(row["tvd3"])
            cells.append(f"{v.mean():.4f} +- {v.std(ddof=1) / np.sqrt(v.size):.4f}")
        out.append(f"| {dataset} | {epsilon:g} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["nltcs", "adult"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 0.8, 1.6, 3.2])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.2, 0.3, 0.5])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rows", type=int, help="fit and score a sample of this many rows")
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args()
    head = {**run_head(__file__, None), "seeds": f"0..{args.seeds - 1}"}
    head["rows"] = "the whole table" if args.rows is None else f"samples of {args.rows:,} rows"
    rows = [
        measure(dataset, epsilon, share, args.seeds, args.rows)
        for dataset in args.datasets
        for epsilon in args.epsilons
        for share in args.shares
    ]
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
