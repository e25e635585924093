"""PrivMRF model-size caps: utility and time on Adult at epsilon = 1.6.

For each cap setting (cells per clique / cells in total) and seed, fit PrivMRF on Adult
(delta = 1e-6, public), sample n_hat rows and report the model size, the 3-, 4- and 5-way TVD
and the
wall time of fit + sample. Writes the rows as JSON and a markdown table (means over seeds,
median time), the table quoted in ``PrivMRFOptions``.

Usage: python benchmarks/bench_privmrf_caps.py [--seeds 0 1 2] [--json PATH] [--md PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_json  # noqa: E402
from bench_privmrf import run  # noqa: E402

CAPS = [(5e4, 2.5e5), (2e5, 1e6), (1e6, 5e6)]
DEFAULT_CAPS = (2e5, 1e6)


def table(rows: list[dict]) -> str:
    """Markdown table: one line per cap setting."""
    lines = [
        "| caps per clique / total | model cells | mean 3-way TVD | mean 4-way | mean 5-way "
        "| median fit + sample (s) |",
        "|---|---|---|---|---|---|",
    ]
    for clique, total in dict.fromkeys((r["max_clique_cells"], r["max_total_cells"]) for r in rows):
        sel = [r for r in rows if r["max_clique_cells"] == clique and r["max_total_cells"] == total]
        cells = sorted({r["model_cells"] for r in sel})
        name = f"{clique:.2g} / {total:.2g}".replace("e+0", "e")
        if (clique, total) == DEFAULT_CAPS:
            name += " (default)"
        lines.append(
            f"| {name} | {' to '.join(f'{c:,}' for c in dict.fromkeys(cells[:1] + cells[-1:]))} | "
            + " | ".join(f"{np.mean([r[k] for r in sel]):.4f}" for k in ("tvd3", "tvd4", "tvd5"))
            + f" | {np.median([r['seconds'] for r in sel]):.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--epsilon", type=float, default=1.6)
    ap.add_argument("--json", default=None, help="write the rows to this JSON file")
    ap.add_argument("--md", default=None, help="write the markdown table to this file")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    rows = []
    for clique, total in CAPS:
        for seed in args.seeds:
            r = run("adult", args.epsilon, seed, max_clique_cells=clique, max_total_cells=total)
            rows.append(r)
            print(
                f"caps {clique:g} / {total:g} seed {seed}: {r['model_cells']:,} cells, "
                f"tvd3 {r['tvd3']:.4f} tvd4 {r['tvd4']:.4f} tvd5 {r['tvd5']:.4f}, "
                f"{r['seconds']:.1f} s",
                flush=True,
            )
            write_json(args.json, rows)
    md = table(rows)
    print(md)
    if args.md:
        Path(args.md).write_text(
            f"# PrivMRF model-size caps on Adult, epsilon = {args.epsilon}, delta = 1e-6\n\n"
            f"`python benchmarks/bench_privmrf_caps.py`, seeds "
            f"{', '.join(map(str, args.seeds))}, on {machine()}.\n\n{md}\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
