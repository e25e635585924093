"""The engine's model caps: method secure's former ones (scale 1) against four times them
(scale 4, the present defaults of both).

Held-out seeds (100.. by default, not the 0..2 of the comparisons with AIM and MST), delta
1e-6: the engine (``PrivMRF(..., selection="engine")``) with
``EngineOptions(cells_per_precision=2750 k, max_clique_cells=2e5 k, max_total_cells=1e6 k)``
for each scale k, and with ``--methods secure`` method secure (``simulate(..., method="secure",
max_rows=65_536)``, the columns split 8 | the rest) with ``secure_max_clique_cells`` 2e5 k
and ``secure_max_total_cells`` 1e6 k (its cells per unit of precision follow the ceiling:
:func:`vertimrf.synth.engine.plan.cells_per_precision`). Each run is scored by
``metrics.tvd`` (3-way, 300 marginals); the model's cells and the seconds are kept.

    python benchmarks/bench_engine_caps.py adult --epsilons 0.8 1.6 3.2 \
        --json benchmarks/results/engine_caps.json --md benchmarks/results/engine_caps.md
    python benchmarks/bench_engine_caps.py adult --methods secure \
        --json benchmarks/results/secure_caps.json --md benchmarks/results/secure_caps.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, mean_se_text, run_head, write_results  # noqa: E402

DELTA, MAX_ROWS, SPLIT = 1e-6, 65_536, 8
SCALES = (1.0, 4.0)
# Scale 1: method secure's ceilings before they became the engine's (clique, total); the
# cells per unit of precision follow the total (2,750 under 1e6).
BASE = (2e5, 1e6)


def measure(dataset: str, method: str, scale: float, epsilon: float, seed: int) -> dict:
    """One run at ``scale`` times method secure's caps: 3-way TVD, model cells, seconds."""
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd
    from vertimrf.synth.engine.plan import cells_per_precision
    from vertimrf.synth.privmrf import EngineOptions

    df, spec = load_dataset(dataset)
    clique, total = (scale * b for b in BASE)
    per = cells_per_precision(total)
    start = time.perf_counter()
    cells = None
    if method == "secure":
        names = list(spec.names)
        synth, _ = simulate(
            df, spec, [names[:SPLIT], names[SPLIT:]], epsilon, DELTA, method="secure",
            seed=seed, max_rows=MAX_ROWS, secure_max_clique_cells=clique,
            secure_max_total_cells=total,
        )  # fmt: skip
    else:
        engine = EngineOptions(
            cells_per_precision=per, max_clique_cells=clique, max_total_cells=total
        )
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection="engine", engine=engine, progress=False)
        synth = fit.fit(df, spec).sample()
        cells = fit.report.model_size.total_cells
    return {
        "dataset": dataset,
        "method": method,
        "scale": scale,
        "epsilon": epsilon,
        "seed": seed,
        "tvd3": tvd(df, synth, spec, ways=3),
        "cells": cells,
        "seconds": time.perf_counter() - start,
    }


def _mean(rows: list[dict], key: str) -> float:
    return float(np.mean([r[key] for r in rows]))


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# The engine's model caps: method secure's former ones against four times them",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}; delta {DELTA}, {head['held']}seeds {head['seeds']}; 3-way TVD, mean "
        "+- standard error. Scale k: cells per unit of precision 2750 k, clique cap 2e5 k, "
        "total cap 1e6 k.",
        "",
        "| dataset | method | epsilon | TVD, scale 1 | TVD, scale 4 | ratio | model cells, "
        "scale 1 / 4 | seconds, scale 1 / 4 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["method"], r["epsilon"]) for r in rows})
    for key in keys:
        at = {s: [r for r in rows if (r["dataset"], r["method"], r["epsilon"]) == key
                  and r["scale"] == s] for s in SCALES}  # fmt: skip
        if not all(at.values()):
            continue
        one, four = at[SCALES[0]], at[SCALES[1]]
        ratio = _mean(four, "tvd3") / _mean(one, "tvd3")
        cells = "-"
        if one[0]["cells"] is not None:
            cells = f"{_mean(one, 'cells'):,.0f} / {_mean(four, 'cells'):,.0f}"
        seconds = f"{_mean(one, 'seconds'):.1f} / {_mean(four, 'seconds'):.1f}"
        tvds = [mean_se_text([r["tvd3"] for r in rs]) for rs in (one, four)]
        out.append(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {tvds[0]} | {tvds[1]} | {ratio:.3f} | "
            f"{cells} | {seconds} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["adult"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.6, 3.2])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=100)
    parser.add_argument("--methods", nargs="+", choices=["engine", "secure"], default=["engine"])
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    head = run_head(__file__, argv) | {
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "held": "held-out " if args.first_seed >= 100 else "",
        "load": load_average(),
    }
    rows = [
        measure(dataset, method, scale, epsilon, seed)
        for dataset in args.datasets
        for method in args.methods
        for epsilon in args.epsilons
        for scale in SCALES
        for seed in seeds
    ]
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
