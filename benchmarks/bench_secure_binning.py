"""Secure's per-marginal binning against full domains, on a large-domain table from real data.

ProtocolConfig's ``secure_binning`` decides how method="secure" measures each 2-way
marginal: "auto" (the default) lets the server re-measure a marginal on bins when its
estimated error binned is lower than at the full domain (the fit then takes the bin sums
as linear queries); "off" measures every marginal at its full domain. Bundled Adult has
small domains (at most 41 values), so this benchmark builds "adult-merged": within each
party of the paper's split (columns 0-7 and 8-14), pairs of columns become one product
column (code = a * u_b + b),
giving domains of up to 656 values (see PARTIES). Each method runs on the merged table,
and its synthetic table is split back into Adult's 15 columns and scored against Adult by
the mean 2-way TVD (all 105 marginals) and 3-way TVD (300 random marginals, fixed seed).

Methods, at each epsilon and seed with delta = 1e-6 (public): "secure-auto" and "secure-off"
(``simulate`` with method="secure" and secure_binning "auto" / "off", max_rows left to
simulate's default as in bench_vertical.py) and "central" (PrivMRF on the whole merged
table). All run in the same process, interleaved per seed, so the seconds compare. Each run
prints one JSON line; --json gets every row, --md a summary (means over seeds, auto/off and
auto/central ratios).

    python benchmarks/bench_secure_binning.py --json PATH [--md PATH] [--quick]
        [--epsilons 0.8,1.6] [--seeds 3] [--methods secure-auto,secure-off,central]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time

import numpy as np
import pandas as pd

from vertimrf import PrivMRF, load_dataset, simulate
from vertimrf.domain import CATEGORICAL, ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.io import atomic_write_text
from vertimrf.metrics import tvd
from vertimrf.privacy import DEFAULT_DELTA
from vertimrf.protocol import ProtocolReport

# Each party's merged columns (groups of Adult columns). Columns 3 and 4 of Adult are the
# same attribute twice (16 joint values), so they go into different groups.
PARTIES: tuple[tuple[tuple[str, ...], ...], ...] = (
    (("0", "3"), ("2", "6"), ("4", "5"), ("1", "7")),
    (("12", "13"), ("10", "11"), ("8", "9"), ("14",)),
)
METHODS = ("secure-auto", "secure-off", "central")
RATIOS = (("auto / off", "secure-auto", "secure-off"), ("auto / central", "secure-auto", "central"))


def merged_name(group: tuple[str, ...]) -> str:
    return "x".join(group)


def merge_spec(spec: DomainSpec) -> DomainSpec:
    """The public spec of the merged table: one categorical column of prod(u) codes a group."""
    return DomainSpec(
        [
            ColumnSpec(
                merged_name(group),
                CATEGORICAL,
                tuple(range(math.prod(spec[c].size for c in group))),
            )
            for party in PARTIES
            for group in party
        ]
    )


def merge(df: pd.DataFrame, spec: DomainSpec) -> pd.DataFrame:
    """The merged table: each group's codes as one mixed-radix code (first column highest)."""
    codes = pd.DataFrame(TableEncoder(spec).encode(df).astype(np.int64), columns=spec.names)
    out = {}
    for group in (g for party in PARTIES for g in party):
        code = np.zeros(len(codes), dtype=np.int64)
        for c in group:
            code = code * spec[c].size + codes[c].to_numpy()
        out[merged_name(group)] = code
    return pd.DataFrame(out)


def unmerge(merged: pd.DataFrame, spec: DomainSpec) -> pd.DataFrame:
    """A merged table split back into the original columns (decoded by ``spec``)."""
    codes = {}
    for group in (g for party in PARTIES for g in party):
        code = merged[merged_name(group)].to_numpy().astype(np.int64)
        for c in reversed(group):
            code, codes[c] = np.divmod(code, spec[c].size)
    table = np.column_stack([codes[c] for c in spec.names])
    return TableEncoder(spec).decode(table)


def binned(report: ProtocolReport) -> int | None:
    """How many marginals the server binned, when the report says so (else None)."""
    value = getattr(report, "binned", None)
    if value is None:
        value = next((v for k, v in report.to_dict().items() if "binned" in k), None)
    return len(value) if isinstance(value, list | tuple | set | dict) else value


def run_one(
    method: str,
    epsilon: float,
    seed: int,
    df: pd.DataFrame,
    spec: DomainSpec,
    merged: pd.DataFrame,
    merged_spec: DomainSpec,
) -> dict:
    """One run on the merged table, scored on the split-back table against ``df``."""
    delta = DEFAULT_DELTA
    start = time.perf_counter()
    extra: dict = {}
    if method == "central":
        synth = (
            PrivMRF(epsilon, delta, seed=seed, selection="privmrf", progress=False)
            .fit(merged, merged_spec)
            .sample()
        )
    else:
        parties = [[merged_name(g) for g in party] for party in PARTIES]
        synth, report = simulate(
            merged,
            merged_spec,
            parties,
            epsilon,
            delta,
            method="secure",
            seed=seed,
            secure_binning=method.removeprefix("secure-"),
        )
        extra = {"binned": binned(report), "model": report.model}
    seconds = time.perf_counter() - start
    split_back = unmerge(synth, spec)
    row = {
        "dataset": "adult-merged",
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        "seconds": seconds,
        **{f"tvd{w}": tvd(df, split_back, spec, ways=w) for w in (2, 3)},
        **extra,
    }
    print(json.dumps(row), flush=True)
    return row


def _mean(rows: list[dict], epsilon: float, method: str, key: str) -> float:
    v = [r[key] for r in rows if (r["epsilon"], r["method"]) == (epsilon, method)]
    return float(np.mean(v)) if v else float("nan")


def summary(rows: list[dict], merged_spec: DomainSpec) -> str:
    """Markdown: means over seeds per (epsilon, method), then the TVD ratios."""
    domain = ", ".join(f"{c.name}: {c.size}" for c in merged_spec.columns)
    split = " | ".join(", ".join(merged_name(g) for g in party) for party in PARTIES)
    out = [
        f"Machine: {os.cpu_count()} cores; all methods ran in the same process, interleaved "
        "per seed.",
        "",
        f"adult-merged domain sizes: {domain}. Parties: {split}.",
        "",
        "| epsilon | method | tvd2 | tvd3 | seconds | binned marginals | seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    epsilons = sorted({r["epsilon"] for r in rows})
    methods = [m for m in METHODS if any(r["method"] == m for r in rows)]
    for eps in epsilons:
        for method in methods:
            sel = [r for r in rows if (r["epsilon"], r["method"]) == (eps, method)]
            counts = [r["binned"] for r in sel if r.get("binned") is not None]
            shown = f"{np.mean(counts):.1f}" if counts else "-"
            out.append(
                f"| {eps} | {method} | {_mean(rows, eps, method, 'tvd2'):.4f} | "
                f"{_mean(rows, eps, method, 'tvd3'):.4f} | "
                f"{_mean(rows, eps, method, 'seconds'):.1f} | {shown} | {len(sel)} |"
            )
    out += [
        "",
        "TVD ratios (means over seeds; below 1 means secure-auto is better):",
        "",
        "| epsilon | " + " | ".join(f"{n} tvd2 | {n} tvd3" for n, _, _ in RATIOS) + " |",
        "|---|" + "---|---|" * len(RATIOS),
    ]
    for eps in epsilons:
        cells = [
            _mean(rows, eps, top, key) / _mean(rows, eps, bottom, key)
            for _, top, bottom in RATIOS
            for key in ("tvd2", "tvd3")
        ]
        out.append(f"| {eps} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="epsilon 1.6, one seed (a smoke test)")
    ap.add_argument("--json", required=True, help="write the rows here")
    ap.add_argument("--md", default=None, help="write a markdown summary here")
    ap.add_argument("--epsilons", default="0.8,1.6")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1")
    ap.add_argument("--methods", default=",".join(METHODS))
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    if args.quick:
        epsilons, seeds = [1.6], 1
    else:
        epsilons, seeds = [float(e) for e in args.epsilons.split(",")], args.seeds
    df, spec = load_dataset("adult")
    merged, merged_spec = merge(df, spec), merge_spec(spec)
    rows = []
    for eps in epsilons:
        for seed in range(seeds):
            for method in methods:
                rows.append(run_one(method, eps, seed, df, spec, merged, merged_spec))
            atomic_write_text(args.json, json.dumps(rows, indent=1))
    text = summary(rows, merged_spec)
    if args.md:
        atomic_write_text(args.md, text)
    print(text)


if __name__ == "__main__":
    main()
