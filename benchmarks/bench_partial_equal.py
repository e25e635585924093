"""Partial record sets on equal sets (issue 36's must-show): ``record_sets="partial"`` when
every party holds every record, against today's ``record_sets="equal"``, on Adult and NLTCS.

Each table's columns are split as the paper's two parties (Adult: the first 8 and the last
7; NLTCS: 8 and 8). Both configs run the secure method at epsilon 1.6, delta 1e-6, max_rows
65,536 (the partial one spends 2% of the budget on the region counts and models the union,
here every record), for each seed. Reported per run: the 3-way TVD
(``vertimrf.metrics.tvd``, 300 random marginals, seed 0) against the whole table and the
rows sampled; the summary: per table, each config's mean and standard deviation over the
seeds, and whether the partial mean lies within two standard errors of the equal one (the
seeds' spread: "within noise").

    python benchmarks/bench_partial_equal.py --json PATH --md PATH [--seeds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

from vertimrf import load_dataset  # noqa: E402
from vertimrf.driver import local_run  # noqa: E402
from vertimrf.metrics import tvd  # noqa: E402
from vertimrf.protocol import from_preset  # noqa: E402

EPSILON, DELTA, MAX_ROWS = 1.6, 1e-6, 1 << 16
SECRET = bytes(range(32))
WAYS, MARGINALS = 3, 300


def one_run(name: str, record_sets: str, seed: int) -> dict:
    df, spec = load_dataset(name)
    names = list(spec.names)
    half = (len(names) + 1) // 2
    cols = {"A": names[:half], "B": names[half:]}
    data = {p: df[c].assign(id=np.arange(len(df))) for p, c in cols.items()}
    cfg = from_preset(
        "default", epsilon=EPSILON, delta=DELTA, spec=spec, parties=list(cols.items()),
        method="secure", max_rows=MAX_ROWS, record_sets=record_sets,
    )  # fmt: skip
    start = time.perf_counter()
    run = local_run(data, cfg, SECRET, seed=seed)
    synth = run.fitted(run.run()).sample()
    return {
        "table": name,
        "record_sets": record_sets,
        "seed": seed,
        "rows": int(len(synth)),
        "tvd3": tvd(df, synth, spec, ways=WAYS, n_marginals=MARGINALS, seed=0),
        "seconds": time.perf_counter() - start,
    }


def markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# Partial record sets on equal sets (`bench_partial_equal.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']}. Machine: {head['machine']} "
        f"({head['cores']} cores). Epsilon {EPSILON}, delta {DELTA}, max_rows {MAX_ROWS:,}; "
        "two parties; 3-way TVD over 300 random marginals against the whole table.",
        "",
        "| table | record_sets | seed | rows | TVD | seconds |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['table']} | {r['record_sets']} | {r['seed']} | {r['rows']:,} | {r['tvd3']:.4f} | "
        f"{r['seconds']:.0f} |"
        for r in rows
    ]
    lines += ["", "| table | equal: mean (sd) | partial: mean (sd) | partial - equal | "
              "2 standard errors | within noise |", "|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for table in dict.fromkeys(r["table"] for r in rows):
        got = {
            k: np.array([r["tvd3"] for r in rows if r["table"] == table and r["record_sets"] == k])
            for k in ("equal", "partial")
        }
        sd = max(float(got["equal"].std(ddof=1)), float(got["partial"].std(ddof=1)))
        se2 = 2 * sd * np.sqrt(2 / len(got["equal"]))
        diff = float(got["partial"].mean() - got["equal"].mean())
        lines.append(
            f"| {table} | {got['equal'].mean():.4f} ({got['equal'].std(ddof=1):.4f}) | "
            f"{got['partial'].mean():.4f} ({got['partial'].std(ddof=1):.4f}) | {diff:+.4f} | "
            f"{se2:.4f} | {'yes' if abs(diff) <= se2 else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--tables", nargs="+", default=["adult", "nltcs"])
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    rows = []
    for table in args.tables:
        for seed in range(args.seeds):
            for record_sets in ("equal", "partial"):
                rows.append(one_run(table, record_sets, seed))
                r = rows[-1]
                print(f"{table} {record_sets} seed {seed}: {r['tvd3']:.4f}", flush=True)
    write_results(args.json, args.md, run_head(__file__, argv), rows, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
