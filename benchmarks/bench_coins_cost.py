"""What coins would cost on the wire, from a real run's plan (issue 63, item 4, on paper).

Runs method secure in this process on ``bench_secure_cli``'s table (1,000,000 rows x 15
columns over 3 parties, max_rows 2^20, delta 1e-6, seed 0) at each epsilon, and reads from its
ledger every cross release: the pair, sigma and the cells (public values). Coins sent as
one ring word a coin, each way (a Beaver-style product cell by cell, as in commit 0f6062b),
need ``CoinNoise.for_sigma(sigma, w).coins`` words a cell; a party sends that to each peer for each
of its releases. Reported against what each party sends today (``message_bytes``: its feature
blobs and releases). Nothing here draws a coin: this is the wire's arithmetic on the plan.

    PYTHONPATH=. python benchmarks/bench_coins_cost.py --epsilons 0.4 1 1.6 --json OUT
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head  # noqa: E402
from bench_secure_cli import PARTIES, make_data  # noqa: E402

from vertimrf import simulate  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.privacy.coins import CoinNoise  # noqa: E402
from vertimrf.protocol.factory import from_preset  # noqa: E402
from vertimrf.protocol.methods import secure_plan  # noqa: E402

ROWS, MAX_ROWS, DELTA = 1_000_000, 1 << 20, 1e-6


def one(frames: dict[str, pd.DataFrame], spec: DomainSpec, epsilon: float, weights) -> dict:
    config = from_preset(
        "default", epsilon=epsilon, delta=DELTA, spec=spec, max_rows=MAX_ROWS,
        parties=[(n, [c for c in f.columns if c != "id"]) for n, f in frames.items()],
        record_sets="equal",
    )  # fmt: skip
    word = secure_plan(config).word_bytes
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, report = simulate(frames, config=config, id_column="id", seed=0)
    seconds = time.perf_counter() - start
    cross = [
        {"pair": r.party, "release": r.description.split(":")[0], "sigma": r.params["sigma"],
         "cells": r.params["cells"]}
        for r in report.ledger.releases
        if r.mechanism == "distributed_discrete_gaussian"
    ]  # fmt: skip
    sends = {}
    for w in weights:
        out = dict.fromkeys(frames, 0)
        for c in cross:
            words = CoinNoise.for_sigma(c["sigma"], w).coins * c["cells"]
            for name in c["pair"].split("+"):  # each way: both parties send
                out[name] += words * word
        sends[str(w)] = out
    return {
        "epsilon": epsilon, "word_bytes": word, "cross": cross, "seconds": seconds,
        "today": dict(report.message_bytes), "coin_bytes": sends,
    }  # fmt: skip


def markdown(rows: list[dict]) -> str:
    lines = [
        "| epsilon | party | sends today (MB) | coins, w = 1 (MB) | ratio | w = 1/2 (MB) | ratio |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        for name, today in r["today"].items():
            one_, half = r["coin_bytes"]["1.0"][name], r["coin_bytes"]["0.5"][name]
            lines.append(
                f"| {r['epsilon']:g} | {name} | {today / 1e6:,.0f} | {one_ / 1e6:,.0f} | "
                f"{(today + one_) / today:.2f} | {half / 1e6:,.0f} | {(today + half) / today:.2f} |"
            )
    lines += ["", "| epsilon | pair | release | sigma | cells | coins a cell (w = 1) |"]
    lines.append("|---:|---|---|---:|---:|---:|")
    for r in rows:
        for c in r["cross"]:
            coins = CoinNoise.for_sigma(c["sigma"], 1.0).coins
            lines.append(
                f"| {r['epsilon']:g} | {c['pair']} | {c['release']} | {c['sigma']:.1f} | "
                f"{c['cells']} | {coins:,} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 1.0, 1.6])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--json", help="write the rows here (a new file)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_data(folder, args.rows, 0)
        spec = DomainSpec.from_json(folder / "spec.json")
        frames = {n: pd.read_csv(folder / n / f"{n}.csv") for n in PARTIES}
    head = {**run_head(__file__, None), "load_before": load_average(), "rows": args.rows,
            "max_rows": MAX_ROWS, "delta": DELTA}  # fmt: skip
    rows = [one(frames, spec, e, (1.0, 0.5)) for e in args.epsilons]
    print(markdown(rows))
    if args.json:
        with open(args.json, "x", encoding="utf-8") as f:
            json.dump({**head, "load_after": load_average(), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
