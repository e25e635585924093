"""Benchmark of exact marginal queries outside a model's cliques, as AIM's scoring asks them.

A model on Adult's domain (random 3-way cliques, kept while the junction tree stays within
2M cells; random potentials) is asked every 3-way marginal that no clique holds, on a fresh
calibration each time: with the model's query memo (its cliques' probabilities and
conditionals shared by the queries of one calibration) against the same queries with a memo
that keeps no table (the baseline), timed in turn in one run. Times are this process's CPU
seconds (other work on the cores does not count) with BLAS on one thread (its idle threads
spin and would count). The answers are checked equal.

    python benchmarks/bench_queries.py --json benchmarks/results/bench_queries.json \
        --md benchmarks/results/bench_queries.md
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, load_average, run_head, write_results  # noqa: E402
from bench_mrf import load_domain  # noqa: E402

from vertimrf.domain import Domain  # noqa: E402
from vertimrf.errors import ModelTooLargeError  # noqa: E402
from vertimrf.mrf import JunctionTree, MarkovRandomField  # noqa: E402

MAX_CELLS = 2_000_000
N_CLIQUES = 25


def build_model(domain: Domain, seed: int) -> MarkovRandomField:
    """Random 3-way cliques in a random order, each kept if the tree stays within MAX_CELLS."""
    rng = np.random.default_rng(seed)
    triples = list(itertools.combinations(range(len(domain)), 3))
    chosen: list[tuple[int, ...]] = []
    for i in rng.permutation(len(triples)):
        if len(chosen) == N_CLIQUES:
            break
        try:
            JunctionTree.build(domain, [*chosen, triples[i]], max_cells=MAX_CELLS)
        except ModelTooLargeError:
            continue
        chosen.append(triples[i])
    model = MarkovRandomField(domain, chosen)
    model.potentials = rng.normal(0.0, 1.0, model.layout.total_cells)
    return model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    model = build_model(load_domain(), 0)
    triples = itertools.combinations(range(len(model.domain)), 3)
    queries = [t for t in triples if model.layout.smallest_containing(set(t)) is None]
    answers: dict[bool, list[np.ndarray]] = {}
    memo = model.query_memo()
    budget = memo.max_cells

    def run(keep: bool) -> float:
        memo.max_cells = budget if keep else 0
        model.calibrate()
        start = time.process_time()
        answers[keep] = [model.log_marginal(q) for q in queries]
        return time.process_time() - start

    with threadpool_limits(1):
        timing = interleaved(lambda _: run(True), lambda _: run(False), args.repeats)
    worst = max(
        float(np.max(np.abs(np.exp(a) - np.exp(b))))
        for a, b in zip(answers[True], answers[False], strict=True)
    )
    head = {
        **run_head(__file__, argv),
        "load": load_average(),
        "model": f"{len(model.cliques)} cliques, {model.layout.total_cells:,} cells",
        "queries": len(queries),
        "largest_probability_difference": worst,
    }
    rows = [
        {"memo": "kept (2 table sets)", "seconds": timing["first_median"]},
        {"memo": "none (baseline)", "seconds": timing["second_median"]},
    ]
    head["speedup"] = timing["ratio"]
    write_results(args.json, args.md, head, rows, markdown)


def markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# Exact out-of-model marginal queries, with and without the query memo",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}. Model: {head['model']}; {head['queries']} three-way queries no "
        "clique holds, on a fresh calibration; this process's CPU seconds with BLAS on one "
        "thread, median of the repeats, the two timed in turn.",
        "",
        "| memo | CPU seconds for all queries |",
        "|---|---|",
        *(f"| {r['memo']} | {r['seconds']:.2f} |" for r in rows),
        "",
        f"Speedup {head['speedup']:.2f}x; the answers' largest probability difference "
        f"{head['largest_probability_difference']:.1e}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
