"""VertiMRF end to end: FM, FO and the Centralized baseline (PrivMRF on the whole table).

FM is the paper's method and is NOT differentially private (fm-privacy-gap.md): its rows run
with allow_non_dp=True and are labelled "FM (not DP)" in the summary. Every run is seeded
(reproducible, not for release), so the JSON rows of the vertical methods claim no guarantee:
"dp" is false and total_epsilon null.

Runs NLTCS (8 & 8) and Adult (8 & 7) at each epsilon with delta = 1e-6 (public) and several seeds,
and
reports 3-, 4- and 5-way TVD (300 random marginals each) and wall time per run. Every
method runs in the same process, so the timings are comparable. Optional ablations on Adult
at epsilon = 1.6: without LocMRF, UniSam instead of HisRec, without consistency, and
t = 2000 against t = "auto".

    python benchmarks/bench_vertical.py [--quick] --json PATH [--md PATH] [--ablations]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from vertimrf import PrivMRF, load_dataset, simulate
from vertimrf.io import atomic_write_text
from vertimrf.metrics import tvd
from vertimrf.privacy import DEFAULT_DELTA

SPLITS = {"nltcs": 8, "adult": 8}
LABELS = {"secure": "Secure", "fm": "FM (not DP)", "fo": "FO", "central": "Centralized"}
METHODS = ("secure", "fm", "fo", "central")
PAPER_VARIANT = "paper pipeline"
ABLATIONS = {
    "no_locmrf": {"local_mrf": False},
    "unisam": {"recovery": "unisam"},
    "no_consistency": {"consistency": False},
    "t_auto": {"t": "auto", "max_rows": 50_000},  # a public bound above Adult's 45,222 rows
}


def split(names: list[str], dataset: str, parties: int) -> list[list[str]]:
    """The paper's two-party split, or ``parties`` contiguous groups of near-equal size."""
    if parties == 2:
        k = SPLITS[dataset]
        return [names[:k], names[k:]]
    return [list(g) for g in np.array_split(np.array(names, dtype=object), parties)]


def run_one(
    dataset: str,
    method: str,
    epsilon: float,
    seed: int,
    parties: int = 2,
    delta: float = DEFAULT_DELTA,
    **overrides,
) -> dict:
    df, spec = load_dataset(dataset)
    names = list(spec.names)
    start = time.perf_counter()
    if method == "central":
        synth = (
            PrivMRF(epsilon, delta, seed=seed, selection="privmrf", progress=False)
            .fit(df, spec)
            .sample()
        )
        extra = {}
    else:
        synth, report = simulate(
            df,
            spec,
            split(names, dataset, parties),
            epsilon,
            delta,
            method=method,
            allow_non_dp=method == "fm",
            seed=seed,
            **overrides,
        )
        extra = {"dp": report.dp_guarantee, "total_epsilon": report.total_epsilon}
    seconds = time.perf_counter() - start
    row = {
        "dataset": dataset,
        "method": method,
        "epsilon": epsilon,
        "delta": delta,
        "seed": seed,
        "seconds": seconds,
        **{f"tvd{w}": tvd(df, synth, spec, ways=w) for w in (3, 4, 5)},
        **extra,
    }
    print(json.dumps(row), flush=True)
    return row


def _mean_tvd3(
    rows: list[dict], dataset: str, epsilon: float, method: str, variant: str = ""
) -> float:
    v = [
        r["tvd3"]
        for r in rows
        if (r["dataset"], r["epsilon"], r["method"]) == (dataset, epsilon, method)
        and r.get("variant", "") == variant
    ]
    return float(np.mean(v)) if v else float("nan")


def summary(rows: list[dict]) -> str:
    """Markdown tables of the mean over seeds."""
    out = [
        "| dataset | method | variant | epsilon | tvd3 | tvd4 | tvd5 | seconds | seeds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["method"], r.get("variant", ""), r["epsilon"]) for r in rows})
    for key in keys:
        sel = [
            r
            for r in rows
            if (r["dataset"], r["method"], r.get("variant", ""), r["epsilon"]) == key
        ]
        mean = {m: float(np.mean([r[m] for r in sel])) for m in ("tvd3", "tvd4", "tvd5", "seconds")}
        out.append(
            f"| {key[0]} | {LABELS[key[1]]} | {key[2] or '-'} | {key[3]} | {mean['tvd3']:.4f} | "
            f"{mean['tvd4']:.4f} | {mean['tvd5']:.4f} | {mean['seconds']:.1f} | {len(sel)} |"
        )
    columns = [
        (label, top, bottom)
        for label, top, bottom in (
            ("Secure / Centralized", ("secure", ""), ("central", "")),
            ("FM / Centralized", ("fm", ""), ("central", "")),
            ("Secure / FM", ("secure", ""), ("fm", "")),
            ("Secure, paper pipeline / Centralized", ("secure", PAPER_VARIANT), ("central", "")),
        )
        if all(any((r["method"], r.get("variant", "")) == k for r in rows) for k in (top, bottom))
    ]
    ratio = [
        "",
        "3-way TVD ratios (means over seeds; targets: Secure / Centralized <= 1.15, Secure < FM):",
        "",
        "| dataset | epsilon | " + " | ".join(c[0] for c in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for ds in sorted({r["dataset"] for r in rows}):
        for eps in sorted({r["epsilon"] for r in rows if r["dataset"] == ds}):
            cells = [
                _mean_tvd3(rows, ds, eps, *top) / _mean_tvd3(rows, ds, eps, *bottom)
                for _, top, bottom in columns
            ]
            ratio.append(f"| {ds} | {eps} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return "\n".join(out + ratio) + f"\n\nMachine: {os.cpu_count()} cores.\n"


def party_table(rows: list[dict]) -> str:
    """Markdown: secure against Centralized for m parties (target <= 1.25)."""
    out = [
        "| parties | Secure tvd3 | Centralized tvd3 | ratio | seconds | seeds |",
        "|---|---|---|---|---|---|",
    ]
    central = [r["tvd3"] for r in rows if r["method"] == "central"]
    for m in sorted({r["parties"] for r in rows if r["method"] == "secure"}):
        sel = [r for r in rows if r["method"] == "secure" and r["parties"] == m]
        tv = float(np.mean([r["tvd3"] for r in sel]))
        out.append(
            f"| {m} | {tv:.4f} | {np.mean(central):.4f} | {tv / np.mean(central):.2f} | "
            f"{np.mean([r['seconds'] for r in sel]):.1f} | {len(sel)} |"
        )
    return "\n".join(out) + f"\n\nMachine: {os.cpu_count()} cores.\n"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--quick", action="store_true", help="NLTCS at epsilon 0.8, one seed (a smoke test)"
    )
    ap.add_argument("--json", required=True, help="write the rows here")
    ap.add_argument("--md", default=None, help="write a markdown summary here")
    ap.add_argument("--ablations", action="store_true", help="also run the Adult ablations")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--datasets", default="nltcs,adult")
    ap.add_argument("--epsilons", default="0.4,0.8,1.6,3.2")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument(
        "--delta",
        type=float,
        default=DEFAULT_DELTA,
        help="a public delta for every run (default 1e-6); a control run may give the old "
        "committed value, e.g. 2.2113e-5",
    )
    ap.add_argument(
        "--secure-paper",
        action="store_true",
        help="also run secure with the paper's pipeline (secure_pipeline='paper', variant "
        "'paper pipeline') at every dataset, epsilon and seed",
    )
    ap.add_argument(
        "--parties",
        default=None,
        help="e.g. 2,3,4: the m-party table instead (Adult, epsilon 1.6, secure + Centralized)",
    )
    args = ap.parse_args()
    if args.parties:
        rows = []
        for seed in range(args.seeds):
            rows.append({**run_one("adult", "central", 1.6, seed), "parties": 1})
            for m in (int(x) for x in args.parties.split(",")):
                rows.append({**run_one("adult", "secure", 1.6, seed, parties=m), "parties": m})
            atomic_write_text(args.json, json.dumps(rows, indent=1))
        if args.md:
            atomic_write_text(args.md, party_table(rows))
        print(party_table(rows))
        return
    if args.quick:
        datasets, epsilons, seeds = ["nltcs"], [0.8], 1
    else:
        datasets = args.datasets.split(",")
        epsilons = [float(e) for e in args.epsilons.split(",")]
        seeds = args.seeds
    rows = []
    for ds in datasets:
        for eps in epsilons:
            for seed in range(seeds):
                for method in filter(None, args.methods.split(",")):
                    rows.append(run_one(ds, method, eps, seed, delta=args.delta))
                if args.secure_paper:
                    row = run_one(
                        ds, "secure", eps, seed, delta=args.delta, secure_pipeline="paper"
                    )
                    rows.append({**row, "variant": PAPER_VARIANT})
                atomic_write_text(args.json, json.dumps(rows, indent=1))
    if args.ablations and not args.quick:
        for name, overrides in ABLATIONS.items():
            for seed in range(seeds):
                row = run_one("adult", "fm", 1.6, seed, **overrides)
                row["variant"] = name
                rows.append(row)
                atomic_write_text(args.json, json.dumps(rows, indent=1))
    atomic_write_text(args.json, json.dumps(rows, indent=1))
    if args.md:
        atomic_write_text(args.md, summary(rows))
    print(summary(rows))


if __name__ == "__main__":
    main()
