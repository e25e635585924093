"""CarEst speed on Adult and accuracy on NLTCS.

* Speed: all 56 cross-party 2-way marginals of Adult (parties 0-7 and 8-14) at t = 2000,
  on a fresh estimator (empty cache, JIT already warm). Baseline in the same run: a plain
  numpy CarEst (broadcast max over repetitions per marginal).
* Accuracy: NLTCS, parties 0-7 and 8-15, epsilon = 0.8 for the whole protocol, the paper's
  sketch share 0.36, t = 2000: mean TVD of the 64 cross 2-way estimates, averaged over seeds.
  Variants: zCDP accounting (share of rho; or the sketches' (0.36 eps, delta) converted on
  its own) against the paper's formula, and the containment (default), harmonic and paper
  estimators.

Usage: python benchmarks/bench_carest.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
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
from vertimrf.server import carest  # noqa: E402
from vertimrf.server.carest import CarEst, invert_containment  # noqa: E402


def numpy_carest(merged, n_hat, attrs_idx):
    """Plain numpy baseline of the default (containment) CarEst for one 2-way marginal."""
    i, j = attrs_idx
    oi, oj = merged.offsets[i], merged.offsets[j]
    ui, uj = merged.domain.sizes[i], merged.domain.sizes[j]
    union = np.maximum(merged.comp_t[oi : oi + ui, None, :], merged.comp_t[None, oj : oj + uj, :])
    full = np.maximum(merged.full[i], merged.full[j])
    p_hat = (full > union).mean(axis=2).ravel()
    k_p = merged.noise.k_p
    total = n_hat + k_p * (ui + uj)
    inside = invert_containment(p_hat, total, merged.gamma, merged.noise.alpha_min)
    return np.maximum(inside - 2 * k_p, 0.0).reshape(ui, uj)


def adult_speed(t: int, repeats: int) -> dict:
    df, spec = load_dataset("adult")
    names = list(spec.names)
    parties = [names[:8], names[8:]]
    res = cross_marginal_experiment(df, spec, parties, epsilon=1.6, t=t, seed=0)
    sketches = res.sketches
    pairs = list(itertools.product(parties[0], parties[1]))
    ours = []
    for _ in range(repeats):
        est = CarEst(sketches, res.n_hat)
        carest._containment_grid.cache_clear()
        start = time.perf_counter()
        for p in pairs:
            est.marginal(p)
        ours.append(time.perf_counter() - start)
    merged = CarEst(sketches, res.n_hat).merged
    carest._containment_grid.cache_clear()
    start = time.perf_counter()
    for a, b in pairs:
        ref = numpy_carest(merged, res.n_hat, (merged.domain.index(a), merged.domain.index(b)))
    base = time.perf_counter() - start
    np.testing.assert_allclose(ref, est.marginal(pairs[-1]), rtol=1e-9, atol=1e-6)
    return {
        "pairs": len(pairs),
        "seconds": float(np.median(ours)),
        "numpy_seconds": base,
        "ratio": base / float(np.median(ours)),
    }


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
    ap.add_argument("--quick", action="store_true", help="fewer seeds and repeats")
    ap.add_argument("--json", default=None, help="write results to this JSON file")
    args = ap.parse_args()
    seeds = [0, 1] if args.quick else [0, 1, 2, 3, 4]
    speed = adult_speed(2000, 3 if args.quick else 10)
    acc = nltcs_accuracy(seeds, 2000)
    print(f"machine: {machine()}")
    print(f"{'measure':<52} {'value':>10}")
    print(f"{'Adult: 56 cross 2-way CarEst, t=2000 (s, median)':<52} {speed['seconds']:>10.4f}")
    print(f"{'  numpy baseline, same marginals (s)':<52} {speed['numpy_seconds']:>10.4f}")
    print(f"{'  ratio numpy / ours':<52} {speed['ratio']:>10.1f}")
    print(f"NLTCS, eps=0.8, t=2000: mean cross 2-way TVD over seeds {seeds}")
    for k, v in acc.items():
        print(f"{'  ' + k:<52} {np.mean(v):>10.4f}")
    write_json(
        args.json,
        {
            "machine": machine(),
            "adult_cross_pairs_seconds": speed["seconds"],
            "adult_cross_pairs_numpy_seconds": speed["numpy_seconds"],
            "adult_cross_pairs_numpy_ratio": speed["ratio"],
            "nltcs_cross2way_tvd_zcdp": float(np.mean(acc["zcdp"])),
            "nltcs_cross2way_tvd_paper": float(np.mean(acc["paper"])),
            "nltcs_cross2way_tvd_by_variant": {k: float(np.mean(v)) for k, v in acc.items()},
            "nltcs_seeds": seeds,
            "nltcs_per_seed": acc,
        },
    )


if __name__ == "__main__":
    main()
