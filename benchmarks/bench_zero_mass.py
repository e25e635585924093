"""The mass a least-squares fit with non-negative cells puts on a value whose true count is 0
(issue 59's ames rows): the value's 1-way count and its rows of 2-way tables, each measured
with Gaussian noise, fitted jointly so that every table's row sums to the same mass S.

For fixed S a table's row is mu_j = max(0, y_j - lam) (the projection of its noisy cells onto
the cells >= 0 that sum to S); the loss's slope in S is then -2 lam / sd^2 for the table and
2 (S - y) / sd^2 for the 1-way count, and S is where the slopes sum to 0 (bisection; lam
from the sorted cells). Without
the bound mu >= 0 the mass would be 0 on average; with it, positive noise in the empty cells
of wide rows becomes mass. The designs are the measured tables of ames' `Misc_Feature`
(2 parties, seed 0; `corpus_misses_after.md`): the secure run's 1-way and its tables of 16,
9 and 61 cells a row, and Centralized's 1-way and its tables of 3, 3 and 8.

    python benchmarks/bench_zero_mass.py --json benchmarks/results/zero_mass.json \
        --md benchmarks/results/zero_mass.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_se, run_head, write_results  # noqa: E402

# (cells a row, noise sd) of each table of the value; the 1-way's sd apart.
DESIGNS = {
    "1-way alone (sd 63.8)": (63.8, []),
    "1-way + a row of 3 (sd 78.1)": (63.8, [(3, 78.1)]),
    "1-way + a row of 8 (sd 78.1)": (63.8, [(8, 78.1)]),
    "1-way + a row of 16 (sd 78.1)": (63.8, [(16, 78.1)]),
    "1-way + a row of 61 (sd 78.1)": (63.8, [(61, 78.1)]),
    "secure's design: 1-way (63.8), rows of 16 (63.8), 9 and 61 (78.1)": (
        63.8,
        [(16, 63.8), (9, 78.1), (61, 78.1)],
    ),
    "Centralized's design: 1-way, rows of 3, 3 and 8 (all 70.7)": (
        70.7,
        [(3, 70.7), (3, 70.7), (8, 70.7)],
    ),
}


def _row_level(y: np.ndarray, total: float) -> float:
    """lam with sum(max(0, y - lam)) == total (total >= 0): over the k largest cells,
    lam = (their sum - total) / k, for the largest k whose k-th cell stays above lam."""
    top = np.sort(y)[::-1]
    levels = (np.cumsum(top) - total) / np.arange(1, top.size + 1)
    return float(levels[np.count_nonzero(top > levels) - 1]) if total > 0 else float(top[0])


def _root(slope, lo: float, hi: float) -> float:
    """Where the increasing ``slope`` crosses 0 between ``lo`` and ``hi``, by bisection."""
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if slope(mid) < 0 else (lo, mid)
    return (lo + hi) / 2


def fitted_mass(one_way: float, sd1: float, rows: list[tuple[np.ndarray, float]]) -> float:
    """The least-squares mass S >= 0 of the value: its 1-way count ``one_way`` (sd ``sd1``)
    and its noisy ``rows`` (cells, sd) of tables whose rows all sum to S."""

    def slope(s: float) -> float:
        total = (s - one_way) / sd1**2
        for y, sd in rows:
            total -= _row_level(y, s) / sd**2
        return total

    if slope(0.0) >= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while slope(hi) < 0:
        lo, hi = hi, 2 * hi
    return _root(slope, lo, hi)


def run(draws: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for name, (sd1, tables) in DESIGNS.items():
        masses = []
        for _ in range(draws):
            rows = [(rng.normal(0.0, sd, cells), sd) for cells, sd in tables]
            masses.append(fitted_mass(float(rng.normal(0.0, sd1)), sd1, rows))
        mean, se = mean_se(masses)
        out.append({"design": name, "mean_mass": mean, "se": se, "draws": draws})
    return out


def markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# The mass a fit puts on a value with no records (issue 59)",
        "",
        f"`{head['command']}` at {head['commit']}; {head['machine']}. Mean records the fitted "
        "model puts on one value whose true count is 0, over draws of the noise (fixed seed), "
        "+- its standard error. The fit: least squares with cells >= 0, every table's row of "
        "the value summing to the same mass (`benchmarks/bench_zero_mass.py`).",
        "",
        "| design | mean records | se |",
        "|---|---:|---:|",
    ]
    lines += [f"| {r['design']} | {r['mean_mass']:.1f} | {r['se']:.1f} |" for r in rows]
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    write_results(args.json, args.md, run_head(__file__, argv), run(args.draws, args.seed),
                  markdown)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
