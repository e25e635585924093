"""Partial record sets on Adult (issue 36's utility must-show): two parties that share 80% or
50% of their records, against Centralized PrivMRF run on the shared records alone.

Adult is the bundled ``adult`` (45,222 records, 15 columns), its columns split as the
paper's two parties (the first 8 and the last 7). ``split_records`` (``vertimrf split
--overlap F``) gives each party its records: a fraction F of each party's records is held by
both, the rest by it alone (drawn with ``--split-seed`` plus the seed). The secure method
runs with ``record_sets="partial"`` (its default population, the records every party holds)
at epsilon 1.6 and delta 1e-6, max_rows 65,536, for each seed; Centralized PrivMRF runs at the
same budget on the shared records alone, the same seed.

Reported per run: the 3-way TVD (``vertimrf.metrics.tvd``, 300 random marginals, seed 0) of
each synthetic table against the shared records; the published region counts and the true
ones; the union model's presence pattern (its expected count of records held by A only, B
only and both) against the truth, with three standard deviations of the published counts'
noise (each region count has the dummies' and the server's discrete Gaussian noise, of
sigma each, so sqrt(2) sigma). The summary: per overlap, the mean TVDs over the seeds and
their ratio (the issue asks at most 1.15), and the times.

    python benchmarks/bench_partial_utility.py --json PATH --md PATH [--seeds 3]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

from vertimrf import PrivMRF, load_dataset  # noqa: E402
from vertimrf.datasets.overlap import split_records  # noqa: E402
from vertimrf.driver import local_run  # noqa: E402
from vertimrf.metrics import tvd  # noqa: E402
from vertimrf.protocol import from_preset  # noqa: E402

EPSILON, DELTA, MAX_ROWS = 1.6, 1e-6, 1 << 16
SECRET = bytes(range(32))
WAYS, MARGINALS = 3, 300


def one_run(df, spec, overlap: float, seed: int, split_seed: int) -> dict:
    """The secure run on the parties' records and Centralized PrivMRF on the shared ones."""
    names = list(spec.names)
    cols = {"A": names[:8], "B": names[8:]}
    held = split_records(len(df), list(cols), overlap, np.random.default_rng(split_seed + seed))
    data = {p: df.iloc[held[p]][c].assign(id=held[p]) for p, c in cols.items()}
    shared = np.intersect1d(held["A"], held["B"])
    truth = df.iloc[shared].reset_index(drop=True)
    cfg = from_preset(
        "default", epsilon=EPSILON, delta=DELTA, spec=spec, parties=list(cols.items()),
        method="secure", max_rows=MAX_ROWS, record_sets="partial",
    )  # fmt: skip
    start = time.perf_counter()
    run = local_run(data, cfg, SECRET, seed=seed)
    model = run.fitted(run.run())
    synth = model.sample()
    secure_seconds = time.perf_counter() - start
    server = run.server.server.secure
    assert server is not None and server.data.union is not None
    start = time.perf_counter()
    central = (
        PrivMRF(EPSILON, DELTA, seed=seed, selection="privmrf", progress=False)
        .fit(truth, spec)
        .sample()
    )
    central_seconds = time.perf_counter() - start
    d = len(names)
    pattern = server.data.union.marginal([d, d + 1])  # presence of A, B: [absent, held]
    only_a, only_b = len(held["A"]) - len(shared), len(held["B"]) - len(shared)
    regions = server.record_sets.released or {}
    assert server.plan.regions is not None
    sigma = math.sqrt(2.0) * server.plan.regions.sigma
    return {
        "overlap": overlap,
        "seed": seed,
        "shared": int(len(shared)),
        "secure_rows": int(len(synth)),
        "tvd3_secure": tvd(truth, synth, spec, ways=WAYS, n_marginals=MARGINALS, seed=0),
        "tvd3_central": tvd(truth, central, spec, ways=WAYS, n_marginals=MARGINALS, seed=0),
        "secure_seconds": secure_seconds,
        "central_seconds": central_seconds,
        "regions_true": {"A": only_a, "B": only_b, "A+B": int(len(shared))},
        "regions_released": {"A": regions.get(1), "B": regions.get(2), "A+B": regions.get(3)},
        "pattern_model": {
            "A": float(pattern[1, 0]),
            "B": float(pattern[0, 1]),
            "A+B": float(pattern[1, 1]),
        },  # fmt: skip
        "region_sigma": sigma,
        "skipped_marginals": int(server.data.skipped),
    }


def markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# Partial record sets on Adult: secure against Centralized PrivMRF on the shared "
        "records (`bench_partial_utility.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']}. Machine: {head['machine']} "
        f"({head['cores']} cores). Epsilon {EPSILON}, delta {DELTA}, max_rows {MAX_ROWS:,}; "
        "two parties (Adult's first 8 columns and last 7); 3-way TVD over 300 random "
        "marginals against the records both parties hold.",
        "",
        "| overlap | seed | shared records | secure rows | TVD secure | TVD centralized | "
        "secure (s) | centralized (s) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['overlap']:.0%} | {r['seed']} | {r['shared']:,} | {r['secure_rows']:,} | "
            f"{r['tvd3_secure']:.4f} | {r['tvd3_central']:.4f} | {r['secure_seconds']:.0f} | "
            f"{r['central_seconds']:.0f} |"
        )
    lines += ["", "| overlap | mean TVD secure | mean TVD centralized | ratio | at most 1.15 |",
              "|---:|---:|---:|---:|---|"]  # fmt: skip
    for overlap in sorted({r["overlap"] for r in rows}, reverse=True):
        sel = [r for r in rows if r["overlap"] == overlap]
        s = float(np.mean([r["tvd3_secure"] for r in sel]))
        c = float(np.mean([r["tvd3_central"] for r in sel]))
        met = "yes" if s / c <= 1.15 else "NO"
        lines.append(f"| {overlap:.0%} | {s:.4f} | {c:.4f} | {s / c:.3f} | {met} |")
    lines += [
        "",
        "The presence pattern (records held by A only, B only, both): the truth, the published "
        "region counts, the union model's expectation, and 3 sqrt(2) sigma (three standard "
        "deviations of a published count's noise).",
        "",
        "| overlap | seed | region | true | published | model | 3 sqrt(2) sigma | within |",
        "|---:|---:|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        bound = 3 * r["region_sigma"]
        for region in ("A", "B", "A+B"):
            true, pub, mod = (r[k][region] for k in ("regions_true", "regions_released",
                                                      "pattern_model"))  # fmt: skip
            ok = abs(mod - true) <= bound
            lines.append(
                f"| {r['overlap']:.0%} | {r['seed']} | {region} | {true:,} | {pub:,} | "
                f"{mod:,.0f} | {bound:.0f} | {'yes' if ok else 'NO'} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--overlaps", type=float, nargs="+", default=[0.8, 0.5])
    ap.add_argument("--split-seed", type=int, default=360)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    df, spec = load_dataset("adult")
    rows = []
    for overlap in args.overlaps:
        for seed in range(args.seeds):
            rows.append(one_run(df, spec, overlap, seed, args.split_seed))
            r = rows[-1]
            print(f"overlap {overlap} seed {seed}: secure {r['tvd3_secure']:.4f} "
                  f"central {r['tvd3_central']:.4f}", flush=True)  # fmt: skip
    write_results(args.json, args.md, run_head(__file__, argv), rows, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
