"""Wall time of method secure against the engine on one table (Centralized), in the same
process, interleaved: issue 38's "NLTCS Secure end to end takes at most 1.5x Centralized".

At each epsilon: one warm-up of each (the first run loads the compiled kernels), then
``--repeats`` rounds of (engine fit and sample, secure ``simulate``), seed = the round. The
ratio is of the medians. Delta 1e-6, the paper's split (8 & 8 columns on NLTCS), max_rows
``--max-rows`` (default 65,536, as ``bench_engine.py``; the secure product's work grows with
it, the engine's does not).

    python benchmarks/bench_secure_time.py --json benchmarks/results/secure_time.json \
        --md benchmarks/results/secure_time.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, load_average, run_head, write_results  # noqa: E402

DELTA, SPLIT = 1e-6, 8


def _engine(df, spec, epsilon: float, seed: int) -> float:
    from vertimrf import PrivMRF

    start = time.perf_counter()
    PrivMRF(epsilon, DELTA, seed=seed, selection="engine", progress=False).fit(df, spec).sample()
    return time.perf_counter() - start


def _secure(df, spec, epsilon: float, seed: int, max_rows: int) -> float:
    from vertimrf import simulate

    names = list(spec.names)
    start = time.perf_counter()
    simulate(
        df, spec, [names[:SPLIT], names[SPLIT:]], epsilon, DELTA, method="secure", seed=seed,
        max_rows=max_rows,
    )  # fmt: skip
    return time.perf_counter() - start


def measure(dataset: str, epsilon: float, repeats: int, max_rows: int) -> dict:
    """The engine's and method secure's seconds per round, their medians and the ratio."""
    from vertimrf import load_dataset

    df, spec = load_dataset(dataset)
    times = interleaved(
        lambda seed: _engine(df, spec, epsilon, seed),
        lambda seed: _secure(df, spec, epsilon, seed, max_rows),
        repeats,
    )
    return {
        "dataset": dataset,
        "epsilon": epsilon,
        "max_rows": max_rows,
        "engine_seconds": times["first"],
        "secure_seconds": times["second"],
        "engine_median": times["first_median"],
        "secure_median": times["second_median"],
        "ratio": times["ratio"],
    }


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Method secure's wall time against the engine on one table (Centralized)",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}; delta {DELTA}, split {SPLIT} & the rest; a warm-up run of each, "
        "then the rounds interleaved.",
        "",
        "| dataset | max_rows | epsilon | engine s (median) | secure s (median) "
        "| secure / engine |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['dataset']} | {r['max_rows']:,} | {r['epsilon']:g} | {r['engine_median']:.2f} "
            f"| {r['secure_median']:.2f} | {r['ratio']:.2f} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["nltcs"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 0.8, 1.6, 3.2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--max-rows", type=int, nargs="+", default=[65_536])
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args()
    head = {**run_head(__file__, None), "load": load_average()}
    rows = []
    for dataset in args.datasets:
        for max_rows in args.max_rows:
            for epsilon in args.epsilons:
                rows.append(measure(dataset, epsilon, args.repeats, max_rows))
                print(markdown(head, rows).splitlines()[-1], flush=True)
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
