"""Utility of product "paillier" against the dealer (issue 64), from bench_engine's rows.

Reads the rows of ``bench_engine.py`` runs (``--json`` files) and writes, at each dataset and
epsilon: each method's 3-way TVD (mean +- standard error over seeds), whether the Paillier
runs' TVD equals the dealer runs' seed by seed (seeded runs of the two backends give the
same synthetic table, so it must), and whether the Paillier mean is within one standard
error of the dealer with coins (the issue's reference: the standard error of the
difference of the two means).

    cd benchmarks/results && python ../backend_utility.py vs_secure_paillier.json \
        vs_secure_dealer_split.json vs_secure_coins.json vs_secure_paillier_coins.json \
        vs_secure_coins_adult.json vs_secure_paillier_coins_adult.json \
        vs_secure_paillier_coins_adult16.json --md backend_utility.md
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_se  # noqa: E402

# Each Paillier method and the dealer's method that runs the same noise.
PAIRS = {"secure-paillier": "secure", "secure-paillier-coins": "secure-coins"}
REFERENCE = "secure-coins"  # the dealer backend with coins


def _rows(paths: list[str]) -> dict[tuple[str, float, str], dict[int, float]]:
    """TVD by (dataset, epsilon, method) and seed; a later file's row wins."""
    out: dict[tuple[str, float, str], dict[int, float]] = defaultdict(dict)
    for path in paths:
        for r in json.loads(Path(path).read_text())["rows"]:
            out[r["dataset"], float(r["epsilon"]), r["method"]][int(r["seed"])] = float(r["tvd3"])
    return out


def markdown(paths: list[str]) -> str:
    rows = _rows(paths)
    points = sorted({(d, e) for d, e, _ in rows})
    lines = [
        "# Product paillier against the dealer: 3-way TVD (issue 64)",
        "",
        f"`python benchmarks/backend_utility.py {' '.join(paths)}`; the rows of "
        "`bench_engine.py` (delta 1e-6, max_rows 65,536, 2 parties, seeds 0..2).",
        "",
        "| dataset | epsilon | method | 3-way TVD (mean +- se) | same as the dealer's, seed by "
        "seed | within 1 se of the dealer with coins |",
        "|---|---:|---|---|---|---|",
    ]
    for dataset, epsilon in points:
        ref = rows.get((dataset, epsilon, REFERENCE), {})
        for method, dealer in PAIRS.items():
            got = rows.get((dataset, epsilon, method))
            if not got:
                continue
            mean, se = mean_se(list(got.values()))
            theirs = rows.get((dataset, epsilon, dealer), {})
            common = sorted(set(got) & set(theirs))
            same = "no rows" if not common else (
                "yes" if all(got[s] == theirs[s] for s in common) else "NO"
            )  # fmt: skip
            near = "-"
            if len(ref) > 1:
                r_mean, r_se = mean_se(list(ref.values()))
                bound = math.hypot(se, r_se)
                near = f"{'yes' if abs(mean - r_mean) <= bound else 'NO'} ({mean - r_mean:+.4f})"
            lines.append(
                f"| {dataset} | {epsilon:g} | {method} | {mean:.4f} +- {se:.4f} "
                f"({len(got)} seeds) | {same} ({len(common)} seeds) | {near} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+", help="bench_engine.py --json files")
    ap.add_argument("--md")
    args = ap.parse_args(argv)
    text = markdown(args.json)
    if args.md:
        Path(args.md).write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
