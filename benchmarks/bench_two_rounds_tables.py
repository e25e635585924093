"""Two rounds and the smallest ring on the bundled tables, against the one-round code.

Adult, 2 parties (the paper's split, 8 & 7 columns), max_rows 65,536, epsilon 1.6,
delta 1e-6: the bytes each party sends and the 3-way TVD (300 marginals) of Secure, from the
baseline tree (the commit before the change) and from this tree, and of Centralized PrivMRF,
on the same seeds. NLTCS, 2 parties (8 & 8), the same settings: the end-to-end time of
Secure (``simulate``, in process) against Centralized's, in the same run.

Every measurement is its own process, run with the tree's code (PYTHONPATH), one after
another; the process first runs the same job once with another seed, untimed, so Numba's
kernels are loaded and the timed run is warm.

    python benchmarks/bench_two_rounds_tables.py --baseline ../base --seeds 3 --json J --md M
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
from _common import git_commit, machine, write_json  # noqa: E402

HERE = Path(__file__).resolve().parents[1]
EPSILON, DELTA, MAX_ROWS = 1.6, 1e-6, 65_536
SPLITS = {"adult": 8, "nltcs": 8}


def measure(dataset: str, method: str, seed: int) -> dict:
    """One run in this process (after an untimed warm-up run): seconds, bytes and TVD."""
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd

    df, spec = load_dataset(dataset)
    names = list(spec.names)
    parts = [names[: SPLITS[dataset]], names[SPLITS[dataset] :]]

    def job(s: int) -> tuple:
        if method == "central":
            central = PrivMRF(EPSILON, DELTA, seed=s, selection="privmrf", progress=False)
            return central.fit(df, spec).sample(), None
        return simulate(df, spec, parts, EPSILON, DELTA, method="secure", seed=s,
                        max_rows=MAX_ROWS)  # fmt: skip

    job(seed + 1000)
    start = time.perf_counter()
    synth, report = job(seed)
    seconds = time.perf_counter() - start
    sent = report.to_dict()["message_bytes"] if report is not None else {}
    return {"seconds": seconds, "sent": sent, "tvd3": tvd(df, synth, spec, ways=3)}


def one(tree: Path, label: str, dataset: str, method: str, seed: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, __file__, "--one", dataset, method, str(seed)]
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} {dataset} {method} {seed} failed:\n{proc.stderr[-3000:]}")
    row = {"tree": label, "dataset": dataset, "method": method, "seed": seed,
           **json.loads(proc.stdout.strip().rpartition("\n")[2])}  # fmt: skip
    print(json.dumps(row), flush=True)
    return row


def _mean(rows: list[dict], key: str, **where: str) -> float:
    v = [r[key] for r in rows if all(r[k] == w for k, w in where.items())]
    return float(np.mean(v))


def markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# Two rounds and the smallest ring on Adult and NLTCS (`bench_two_rounds_tables.py`)",
        "",
        f"2 parties, max_rows {MAX_ROWS:,}, epsilon {EPSILON}, delta {DELTA}, seeds "
        f"{head['seeds']}. Baseline: the tree of commit {head['baseline_commit']}; current: "
        f"{head['current_commit']}. Machine: {head['machine']}. Each run is its own process "
        "after an untimed warm-up run.",
        "",
        "| tree | dataset | method | seed | seconds | bytes sent per party | 3-way TVD |",
        "|---|---|---|---:|---:|---|---:|",
    ]
    for r in rows:
        sent = " / ".join(f"{v:,}" for v in r["sent"].values()) or "-"
        lines.append(f"| {r['tree']} | {r['dataset']} | {r['method']} | {r['seed']} | "
                     f"{r['seconds']:.1f} | {sent} | {r['tvd3']:.4f} |")  # fmt: skip
    lines += ["", "| figure | value | target |", "|---|---:|---|"]
    for ds in ("adult", "nltcs"):
        base = [r for r in rows if (r["tree"], r["dataset"]) == ("baseline", ds)]
        new = [r for r in rows if r["tree"] == "current" and r["dataset"] == ds
               and r["method"] == "secure"]  # fmt: skip
        for party in new[0]["sent"]:
            b = np.mean([r["sent"][party] for r in base])
            n = np.mean([r["sent"][party] for r in new])
            lines.append(f"| {ds}: {party} bytes, current / baseline | {n:,.0f} / {b:,.0f} = "
                         f"{n / b:.3f} | <= 0.25 (Adult) |")  # fmt: skip
        central = _mean(rows, "tvd3", tree="current", dataset=ds, method="central")
        for label in ("baseline", "current"):
            t = _mean(rows, "tvd3", tree=label, dataset=ds, method="secure")
            lines.append(f"| {ds}: 3-way TVD, {label} Secure / Centralized | {t:.4f} / "
                         f"{central:.4f} = {t / central:.3f} | <= 1.15 (Adult) |")  # fmt: skip
        s = _mean(rows, "seconds", tree="current", dataset=ds, method="secure")
        c = _mean(rows, "seconds", tree="current", dataset=ds, method="central")
        lines.append(f"| {ds}: seconds, current Secure / Centralized | {s:.1f} / {c:.1f} = "
                     f"{s / c:.2f} | <= 3 (NLTCS) |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="a checkout of the baseline commit")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--datasets", default="adult,nltcs")
    parser.add_argument("--one", nargs=3, metavar=("DATASET", "METHOD", "SEED"),
                        help=argparse.SUPPRESS)  # fmt: skip
    parser.add_argument("--json", default=None)
    parser.add_argument("--md", default=None)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one[0], args.one[1], int(args.one[2]))))
        return
    if not args.baseline:
        parser.error("--baseline is required")
    baseline = Path(args.baseline).resolve()
    head = {"machine": machine(), "seeds": args.seeds, "baseline_commit": git_commit(baseline),
            "current_commit": git_commit(HERE)}  # fmt: skip
    rows = []
    for ds in args.datasets.split(","):
        for seed in range(args.seeds):
            rows.append(one(baseline, "baseline", ds, "secure", seed))
            rows.append(one(HERE, "current", ds, "secure", seed))
            rows.append(one(HERE, "current", ds, "central", seed))
    write_json(args.json, {**head, "runs": rows})
    if args.md:
        from vertimrf.io import atomic_write_text

        atomic_write_text(args.md, markdown(head, rows))


if __name__ == "__main__":
    main()
