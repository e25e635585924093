"""PrivMRF utility and speed on Adult and NLTCS.

For every dataset, epsilon in {0.4, 0.8, 1.6, 3.2} (delta = 1e-6, public) and seed, fit PrivMRF
(the paper's selection, ``selection="privmrf"``), sample n_hat rows and report the 3-, 4- and
5-way TVD against the real table and the wall time of fit + sample. ``--quick`` runs only
epsilon = 1.6 with seed 0. The count and the marginal measurements get exact discrete Gaussian
noise: with a seed from the seeded exact sampler, with ``--secure`` from OpenDP's
cryptographically secure one (the production path; its TVDs are not reproducible). Each row
records how many discrete noise values the fit drew.

``--reproduce`` instead runs the issue's reproduction check on NLTCS at epsilon = 0.8 (seeds
0-2): the defaults against ``gdp_accounting=True`` with the reference's model caps (1e7 cells
per clique, 5e7 in total), and writes a markdown summary with ``--md``.

Usage: python benchmarks/bench_privmrf.py [--quick | --reproduce] [--secure] [--json PATH]
       [--md PATH]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_json  # noqa: E402

from vertimrf import PrivMRF, load_dataset, metrics  # noqa: E402
from vertimrf.privacy import DEFAULT_DELTA  # noqa: E402
from vertimrf.privacy.samplers import SecureSampler  # noqa: E402


def run(dataset: str, epsilon: float, seed: int, secure: bool = False, **options: object) -> dict:
    """One fit + sample, scored by 3-, 4- and 5-way TVD."""
    df, spec = load_dataset(dataset)
    start = time.perf_counter()
    noise = SecureSampler() if secure else None
    synth = PrivMRF(
        epsilon,
        DEFAULT_DELTA,
        seed=seed,
        noise=noise,
        selection="privmrf",
        progress=False,
        **options,
    ).fit(df, spec)
    fake = synth.sample()
    seconds = time.perf_counter() - start
    row = {
        "dataset": dataset,
        "epsilon": epsilon,
        "seed": seed,
        "seconds": seconds,
        "model_cells": synth.model.tree.size.total_cells,
        "rho": synth.report.rho,
        "noise": "secure" if secure else "seeded",
        "discrete_noise_values": 1 + sum(m.values.size for m in synth.measurements),
        "machine": machine(),
    }
    for ways in (3, 4, 5):
        row[f"tvd{ways}"] = metrics.tvd(df, fake, spec, ways=ways, seed=seed)
    row.update(options)
    return row


REFERENCE = {"gdp_accounting": True, "max_clique_cells": 1e7, "max_total_cells": 5e7}


def reproduce(json_path: str | None, md_path: str | None) -> None:
    """NLTCS at epsilon = 0.8: the defaults and the reference's accounting and caps."""
    print(f"machine: {machine()}")
    rows = []
    for name, options in (("defaults", {}), ("gdp_accounting + caps 1e7 / 5e7", REFERENCE)):
        for seed in (0, 1, 2):
            r = run("nltcs", 0.8, seed, **options)
            r["setting"] = name
            rows.append(r)
            print(
                f"{name:<36} seed {seed}: tvd3 {r['tvd3']:.4f} tvd4 {r['tvd4']:.4f} "
                f"tvd5 {r['tvd5']:.4f} rho {r['rho']:.5f} {r['seconds']:.1f} s",
                flush=True,
            )
            write_json(json_path, rows)
    lines = [
        "| setting | rho spent | model cells | mean 3-way TVD | mean 4-way | mean 5-way | "
        "median fit + sample (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in dict.fromkeys(r["setting"] for r in rows):
        sel = [r for r in rows if r["setting"] == name]
        lines.append(
            f"| {name} | {sel[0]['rho']:.5f} | {sel[0]['model_cells']:,} | "
            + " | ".join(f"{np.mean([r[k] for r in sel]):.4f}" for k in ("tvd3", "tvd4", "tvd5"))
            + f" | {np.median([r['seconds'] for r in sel]):.1f} |"
        )
    print("\n".join(lines))
    if md_path:
        Path(md_path).write_text(
            "# PrivMRF reproduction check: NLTCS, epsilon = 0.8, delta = 1e-6, seeds 0-2\n\n"
            f"`python benchmarks/bench_privmrf.py --reproduce` on {machine()}.\n\n"
            + "\n".join(lines)
            + "\n",
            encoding="utf-8",
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="epsilon 1.6, seed 0 only")
    ap.add_argument(
        "--reproduce",
        action="store_true",
        help="NLTCS at epsilon 0.8: defaults vs gdp_accounting with the reference's caps",
    )
    ap.add_argument("--json", default=None, help="write the rows to this JSON file")
    ap.add_argument("--md", default=None, help="with --reproduce: write the summary here")
    ap.add_argument("--datasets", nargs="+", default=["nltcs", "adult"])
    ap.add_argument("--secure", action="store_true", help="noise from OpenDP's secure sampler")
    args = ap.parse_args()
    if args.reproduce:
        reproduce(args.json, args.md)
        return
    epsilons = [1.6] if args.quick else [0.4, 0.8, 1.6, 3.2]
    seeds = [0] if args.quick else [0, 1, 2]
    print(f"machine: {machine()}")
    print(f"{'dataset':<8} {'eps':>5} {'seed':>4} {'tvd3':>8} {'tvd4':>8} {'tvd5':>8} {'s':>8}")
    rows = []
    for dataset in args.datasets:
        for eps in epsilons:
            for seed in seeds:
                r = run(dataset, eps, seed, secure=args.secure)
                rows.append(r)
                print(
                    f"{dataset:<8} {eps:>5} {seed:>4} {r['tvd3']:>8.4f} {r['tvd4']:>8.4f} "
                    f"{r['tvd5']:>8.4f} {r['seconds']:>8.1f}",
                    flush=True,
                )
                write_json(args.json, rows)
    for dataset in args.datasets:
        for eps in epsilons:
            sel = [r for r in rows if r["dataset"] == dataset and r["epsilon"] == eps]
            print(
                f"mean {dataset:<8} eps={eps}: tvd3 {np.mean([r['tvd3'] for r in sel]):.4f}, "
                f"{np.mean([r['seconds'] for r in sel]):.1f} s"
            )


if __name__ == "__main__":
    main()
