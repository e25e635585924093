"""What coins cost against split noise, measured (issue 63, item 4): bytes and party time.

In one process, on each table and epsilon, method secure runs with ``cross_noise="split"``
then ``"coins"`` (w = 1), seed 0, its messages through files in a temporary folder (the
folder transport, so that no blob is held whole). Kept per run: each party's bytes sent
(``message_bytes``: blobs, coins and releases) and the seconds of the parties' steps
(commit, features, release, groups, measure; the run's roles take turns in one process, so
these are the parties' own). One warm-up run first (the compiled kernels load once).

Tables: ``adult`` (the bundled table, 8 & 7 columns, max_rows 65,536, as
``bench_engine.py``) and ``1m`` (``bench_secure_cli``'s 1,000,000 rows x 15 columns over 3
parties, max_rows 2^20, equal record sets). Delta 1e-6.

    PYTHONPATH=. python benchmarks/bench_coins_cost.py adult 1m --epsilons 0.4 1.6 \
        --json benchmarks/results/coins_cost.json --md benchmarks/results/coins_cost.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head, write_results  # noqa: E402
from bench_secure_cli import PARTIES, make_data  # noqa: E402

DELTA = 1e-6
PARTY_STEPS = ("commit", "features", "release", "groups", "measure")
NOISES = ("split", "coins")
# A default is chosen by this test (issue 63): coins at most this many times split's
# bytes and party time, at epsilon 0.4 and 1.6 on the 1M x 15 x 3 table.
LIMIT = 1.3


def _tables(names: list[str], rows: int, folder: Path) -> dict[str, tuple]:
    """Each table's frames (by party, with an ``id`` column), spec, max_rows and record
    sets."""
    from vertimrf import load_dataset
    from vertimrf.domain import DomainSpec

    out: dict[str, tuple] = {}
    if "adult" in names:
        df, spec = load_dataset("adult")
        cols = list(spec.names)
        frames = {
            f"P{i}": df[c].assign(id=range(len(df))) for i, c in enumerate((cols[:8], cols[8:]))
        }
        out["adult"] = (frames, spec, 65_536, "equal")
    if "1m" in names:
        make_data(folder, rows, 0)
        spec = DomainSpec.from_json(folder / "spec.json")
        frames = {n: pd.read_csv(folder / n / f"{n}.csv") for n in PARTIES}
        out["1m"] = (frames, spec, 1 << 20, "equal")
    return out


def one(table: tuple, epsilon: float, noise: str, folder: Path) -> dict:
    """One run: each party's bytes sent and the parties' step seconds."""
    from vertimrf import simulate
    from vertimrf.protocol.factory import from_preset

    frames, spec, max_rows, sets = table
    config = from_preset(
        "default", epsilon=epsilon, delta=DELTA, spec=spec, max_rows=max_rows, record_sets=sets,
        parties=[(n, [c for c in f.columns if c != "id"]) for n, f in frames.items()],
        cross_noise=noise,
    )  # fmt: skip
    start = time.perf_counter()
    with warnings.catch_warnings(), tempfile.TemporaryDirectory(dir=folder) as mail:
        warnings.simplefilter("ignore")
        _, report = simulate(frames, config=config, id_column="id", seed=0, message_dir=mail)
    return {
        "epsilon": epsilon,
        "noise": noise,
        "sends": dict(report.message_bytes),
        "party_seconds": sum(report.seconds.get(s, 0.0) for s in PARTY_STEPS),
        "seconds": time.perf_counter() - start,
    }


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Coins against split noise: bytes and party time, measured",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load "
        f"{head['load_before']} before, {head['load_after']} after; "
        f"delta {DELTA}, w = 1, seed 0. Bytes: what each party sends (blobs, coins, "
        "releases); party time: the seconds of the parties' steps in one process.",
        "",
        "| table | epsilon | party | split (MB) | coins (MB) | bytes ratio | party s, split | "
        f"party s, coins | time ratio | within {LIMIT}x |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    by = {(r["table"], r["epsilon"], r["noise"]): r for r in rows}
    for table, epsilon, noise in by:
        if noise != "split" or (table, epsilon, "coins") not in by:
            continue
        split, coins = by[table, epsilon, "split"], by[table, epsilon, "coins"]
        t_ratio = coins["party_seconds"] / split["party_seconds"]
        for party, sent in split["sends"].items():
            b_ratio = coins["sends"][party] / sent
            ok = "yes" if max(b_ratio, t_ratio) <= LIMIT else "NO"
            out.append(
                f"| {table} | {epsilon:g} | {party} | {sent / 1e6:,.1f} | "
                f"{coins['sends'][party] / 1e6:,.1f} | {b_ratio:.2f} | "
                f"{split['party_seconds']:.1f} | {coins['party_seconds']:.1f} | "
                f"{t_ratio:.2f} | {ok} |"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables", nargs="+", choices=("adult", "1m"))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 1.6])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args()
    head = {**run_head(__file__, None), "load_before": load_average(), "delta": DELTA}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tables = _tables(args.tables, args.rows, folder)
        first = next(iter(tables.values()))
        one(first, 1.6, "coins", folder)  # warm-up: the compiled kernels load once
        for name, table in tables.items():
            for epsilon in args.epsilons:
                for noise in NOISES:
                    rows.append({"table": name, **one(table, epsilon, noise, folder)})
                    print(rows[-1], flush=True)
    write_results(args.json, args.md, {**head, "load_after": load_average()}, rows, markdown)


if __name__ == "__main__":
    main()
