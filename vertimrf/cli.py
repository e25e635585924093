"""The ``vertimrf`` command."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

from vertimrf.errors import VertimrfError


def _cmd_demo(args: argparse.Namespace) -> int:
    import numpy as np

    from vertimrf.datasets import load_dataset
    from vertimrf.sketch.experiment import cross_marginal_experiment

    df, spec = load_dataset("adult")
    names = list(spec.names)
    parties = [names[:8], names[8:]]
    print(
        f"Sketch demo: bundled Adult (n={len(df)}), parties {parties[0][0]}-{parties[0][-1]} "
        f"and {parties[1][0]}-{parties[1][-1]}, epsilon={args.epsilon}, delta=1/n, t={args.t}, "
        f"{os.cpu_count()} cores"
    )
    res = cross_marginal_experiment(
        df,
        spec,
        parties,
        epsilon=args.epsilon,
        t=args.t,
        sketch_share=args.sketch_share,
        seed=args.seed,
    )
    tv = np.array(list(res.tvd.values()))
    print(f"\nper-sketch epsilon' = {res.eps_prime:.3e}; noisy n = {res.n_hat:.0f}")
    for i, s in enumerate(res.encode_seconds):
        note = " (first use compiles or loads the Numba kernels)" if i == 0 else ""
        print(f"party{i} LocEnc{note}: {s:.3f} s")
    print(
        f"CarEst, all {len(tv)} cross-party 2-way marginals (incl. first-use kernel compile "
        f"or load): {res.carest_seconds:.3f} s"
    )
    print(
        f"TVD of the cross 2-way estimates vs the real marginals: mean {tv.mean():.4f}, "
        f"median {np.median(tv):.4f}, max {tv.max():.4f}"
    )
    print()
    print(res.ledger.report())
    if args.json:
        from vertimrf.io import atomic_write_text

        out = {
            "dataset": "adult",
            "epsilon": args.epsilon,
            "t": args.t,
            "eps_prime": res.eps_prime,
            "encode_seconds": res.encode_seconds,
            "carest_seconds": res.carest_seconds,
            "cross2way_tvd_mean": float(tv.mean()),
            "cross2way_tvd_median": float(np.median(tv)),
            "cross2way_tvd_max": float(tv.max()),
            "total_epsilon": res.ledger.total_epsilon(),
        }
        atomic_write_text(args.json, json.dumps(out, indent=2))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="vertimrf",
        description="Differentially private synthetic data for vertically partitioned tables.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser(
        "demo",
        help="encode bundled Adult as two parties and score the cross-party estimates",
        description="Encode bundled Adult as two parties (columns 0-7 and 8-14) with DP FM "
        "sketches and print the accuracy and time of every cross-party 2-way marginal estimate.",
    )
    demo.add_argument("--epsilon", type=float, default=1.6, help="total budget (default 1.6)")
    demo.add_argument("--t", type=int, default=2000, help="sketch repetitions (default 2000)")
    demo.add_argument(
        "--sketch-share", type=float, default=0.36, help="share of rho for sketches (0.36)"
    )
    demo.add_argument("--seed", type=int, default=None, help="seed for reproducible runs")
    demo.add_argument("--json", default=None, help="also write the figures to this JSON file")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``vertimrf`` command."""
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except VertimrfError as exc:
        print(f"vertimrf: error: {exc}", file=sys.stderr)
        return 2
