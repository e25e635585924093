"""CarEst accuracy on NLTCS (its speed: ``benchmarks/kernels/test_bench_carest.py``).

NLTCS, parties 0-7 and 8-15, epsilon = 0.8 for the whole protocol, the paper's sketch share
0.36, t = 2000: mean TVD of the 64 cross 2-way estimates, averaged over seeds. Variants: zCDP
accounting (share of rho; or the sketches' (0.36 eps, delta) converted on its own) against the
paper's formula, and the containment (default), harmonic and paper estimators.

Usage: python benchmarks/bench_carest.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine, write_json  # noqa: E402

from vertimrf.datasets import load_dataset  # noqa: E402
from vertimrf.experiment import cross_marginal_experiment  # noqa: E402
from vertimrf.privacy import (
    DEFAULT_DELTA,  # noqa: E402
    epsilon_to_rho,  # noqa: E402
)

VARIANTS = {
    "zcdp": {},
    "paper": {"accounting": "theorem2"},
    "zcdp_eps_share": {"eps_share": True},
    "zcdp_harmonic": {"method": "harmonic"},
    "paper_harmonic": {"accounting": "theorem2", "method": "harmonic"},
    "zcdp_paper_estimator": {"method": "algorithm4"},
}


def nltcs_accuracy(seeds: list[int], t: int) -> dict:
    df, spec = load_dataset("nltcs")
    names = list(spec.names)
    parties = [names[:8], names[8:]]
    delta = DEFAULT_DELTA
    out: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for s in seeds:
        for name, variant in VARIANTS.items():
            kw = {"epsilon": 0.8, "delta": delta, "t": t, "sketch_share": 0.36, "seed": s}
            kw.update(variant)
            if kw.pop("eps_share", False):
                kw["sketch_rho"] = epsilon_to_rho(0.36 * 0.8, delta)
            out[name].append(cross_marginal_experiment(df, spec, parties, **kw).mean_tvd)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds")
    ap.add_argument("--json", default=None, help="write results to this JSON file")
    args = ap.parse_args()
    seeds = [0, 1] if args.quick else [0, 1, 2, 3, 4]
    acc = nltcs_accuracy(seeds, 2000)
    print(f"machine: {machine()}")
    print(f"{'measure':<52} {'value':>10}")
    print(f"NLTCS, eps=0.8, t=2000: mean cross 2-way TVD over seeds {seeds}")
    for k, v in acc.items():
        print(f"{'  ' + k:<52} {np.mean(v):>10.4f}")
    write_json(
        args.json,
        {
            "machine": machine(),
            "nltcs_cross2way_tvd_zcdp": float(np.mean(acc["zcdp"])),
            "nltcs_cross2way_tvd_paper": float(np.mean(acc["paper"])),
            "nltcs_cross2way_tvd_by_variant": {k: float(np.mean(v)) for k, v in acc.items()},
            "nltcs_seeds": seeds,
            "nltcs_per_seed": acc,
        },
    )


if __name__ == "__main__":
    main()
