"""Benchmark of the MRF engine on an Adult-sized junction tree.

Times, in one run on this machine: one calibration (median of repeats after warm-up) against a
plain numpy calibration (broadcasting, same tree, potentials and message schedule, same
beliefs and log Z), the two timed in turn so they see the same machine load; 1000
mirror-descent iterations fitting 15 measured 2-way marginals of Adult; sampling 45,222 rows.
If the optional ``mbi`` (private-pgm) package is installed, also its Hugin marginal oracle on
the same cliques and potentials (float64). Prints a table and writes JSON:

* ``numpy_ratio`` = numpy seconds / ours, ``mbi_ratio`` = mbi seconds / our calibration;
  ``mbi_ratio_with_marginals`` compares like for like (mbi returns the clique marginals).
* ``cpu_count``, ``numba_threads`` and ``load_average`` say what the times were measured on:
  other processes on the cores slow parallel kernels (OpenMP threads spin-wait), so rerun on
  a quiet machine, or with ``NUMBA_NUM_THREADS=1`` / ``OMP_WAIT_POLICY=passive`` to compare.

    python benchmarks/bench_mrf.py --json benchmarks/results/bench_mrf.json \
        --md benchmarks/results/bench_mrf.md
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf import JunctionTree, MarkovRandomField, Measurement, mirror_descent
from vertimrf.mrf.reference import NumpyCalibrator

ROOT = Path(__file__).resolve().parents[1]

N_ADULT = 45_222

#: Cliques of the benchmark model over Adult's 15 attributes: 3- and 4-way cliques such as a
#: PrivMRF-style attribute graph gives, 360,648 cells in all (largest 167,936).
CLIQUES = [
    (0, 2, 3, 13),
    (0, 4, 13),
    (3, 6, 12),
    (1, 5, 11, 12),
    (6, 7, 8, 9),
    (10, 13, 14),
    (4, 11, 12),
]

#: The 15 measured marginals: 2-way marginals inside the cliques.
MEASURED = [
    (0, 13),
    (2, 3),
    (3, 13),
    (0, 4),
    (4, 13),
    (3, 6),
    (6, 12),
    (1, 5),
    (11, 12),
    (5, 11),
    (6, 7),
    (8, 9),
    (10, 14),
    (13, 14),
    (3, 12),
]


def load_domain() -> Domain:
    """Adult's domain from shared/data (next to the repository), else the bundled copy."""
    for path in (
        ROOT.parent / "shared" / "data" / "adult.domain.json",
        ROOT / "vertimrf" / "datasets" / "adult.domain.json",
    ):
        if path.exists():
            spec = json.loads(path.read_text())
            names = sorted(spec, key=int)
            return Domain(tuple(names), tuple(int(spec[k]["domain"]) for k in names))
    raise SystemExit("adult.domain.json not found in ../shared/data or vertimrf/datasets")


def load_adult(domain: Domain) -> np.ndarray | None:
    """Adult's integer codes, or None when no copy is around."""
    import pandas as pd

    for path in (
        ROOT.parent / "shared" / "data" / "adult.csv",
        ROOT / "vertimrf" / "datasets" / "adult.csv.gz",
    ):
        if path.exists():
            codes = pd.read_csv(path)[list(domain.names)].to_numpy(dtype=np.int64)
            if codes.min() >= 0 and (codes.max(axis=0) < np.array(domain.sizes)).all():
                return codes
    return None


def measurements(
    domain: Domain, data: np.ndarray | None, rng: np.random.Generator
) -> list[Measurement]:
    """Counts of the MEASURED marginals from Adult (or from a random model if it is absent)."""
    if data is None:
        model = MarkovRandomField(domain, CLIQUES, total=N_ADULT)
        model.potentials.values[:] = rng.normal(size=model.potentials.values.size)
        data = model.sample(N_ADULT, rng)
    out = []
    for attrs in MEASURED:
        idx = np.ravel_multi_index(data[:, list(attrs)].T, domain.shape(attrs))
        counts = np.bincount(idx, minlength=domain.size(attrs)).astype(np.float64)
        out.append(Measurement(attrs, counts))
    return out


def timed(*fns: Callable[[], object], repeats: int, warmup: int = 2) -> list[float]:
    """Median wall time of each function over ``repeats`` runs after ``warmup`` runs.

    The functions are timed in turn within each repeat, so that a compared pair sees the same
    machine load (other processes may share the cores).
    """
    for fn in fns:
        for _ in range(warmup):
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def bench_mbi(model: MarkovRandomField, repeats: int) -> tuple[float, float, float] | None:
    """mbi's Hugin oracle: (its seconds, ours for calibration + marginals, timed in turn, and
    the max abs difference of the marginals), or None without mbi."""
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_compilation_cache", False)
        import mbi
        from mbi import marginal_oracles
    except ImportError:
        return None
    names = model.domain.names
    dom = mbi.Domain(names, model.domain.sizes)
    cliques = [tuple(names[a] for a in c) for c in model.cliques]
    tables = {
        cl: mbi.Factor(dom.project(cl), jax.numpy.asarray(model.potentials.table(c)))
        for cl, c in zip(cliques, model.cliques, strict=True)
    }
    pot = mbi.CliqueVector(dom, cliques, tables)
    oracle = marginal_oracles.message_passing_hugin

    def run():
        out = oracle(pot, model.total)
        jax.block_until_ready([out[cl].values for cl in cliques])
        return out

    seconds, ours = timed(run, lambda: model.calibrate().clique_marginals(), repeats=repeats)
    out = run()
    err = max(
        float(np.max(np.abs(np.asarray(out[cl].values) - model.clique_marginal(c))))
        for cl, c in zip(cliques, model.cliques, strict=True)
    )
    return seconds, ours, err


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write results to this JSON file")
    ap.add_argument("--md", type=Path, help="write the results table to this Markdown file")
    ap.add_argument("--repeats", type=int, default=20, help="timed calibrations (median)")
    ap.add_argument("--md-iters", type=int, default=1000, help="mirror-descent iterations")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    domain = load_domain()
    tree = JunctionTree.build(domain, CLIQUES)
    size = tree.size
    model = MarkovRandomField(domain, tree, total=N_ADULT)
    model.potentials.values[:] = rng.normal(size=size.total_cells)
    theta = model.potentials.values
    beliefs = np.empty_like(theta)
    probs = np.empty_like(theta)
    pshift = np.empty(len(tree.cliques))
    up = np.empty(int(model.plan.eptr[-1]))
    reference = NumpyCalibrator(model.layout, tree.message_order, tree.separators, tree.root)

    ours, base = timed(
        lambda: model.plan.run(theta, beliefs, probs, pshift, up),
        lambda: reference.calibrate(theta),
        repeats=args.repeats,
    )
    (ours_marg,) = timed(lambda: model.calibrate().clique_marginals(), repeats=args.repeats)
    ref_beliefs, ref_logz = reference.calibrate(theta)
    logz = model.plan.run(theta, beliefs, probs, pshift, up)
    agree = max(float(np.max(np.abs(ref_beliefs - beliefs))), abs(ref_logz - logz))

    data = load_adult(domain)
    meas = measurements(domain, data, rng)
    warm = MarkovRandomField(domain, tree, total=N_ADULT)
    mirror_descent(warm, meas, iters=3, tol=0.0)
    fit_model = MarkovRandomField(domain, tree, total=N_ADULT)
    stamps = [time.perf_counter()]
    fit = mirror_descent(
        fit_model,
        meas,
        iters=args.md_iters,
        tol=0.0,
        callback=lambda _: stamps.append(time.perf_counter()),
    )
    md_seconds = stamps[-1] - stamps[0]
    md_median_iteration = statistics.median(np.diff(stamps))
    tvd = [
        0.5 * float(np.abs(fit_model.marginal(m.attrs).ravel() - m.values).sum()) / N_ADULT
        for m in meas
    ]

    (sample_seconds,) = timed(
        lambda: fit_model.sample(N_ADULT, np.random.default_rng(1)), repeats=5, warmup=1
    )
    mbi_result = bench_mbi(model, args.repeats)

    results = {
        "model_total_cells": size.total_cells,
        "model_max_clique_cells": size.max_clique_cells,
        "model_cliques": [list(c) for c in tree.cliques],
        "repeats": args.repeats,
        "calibrate_seconds": ours,
        "calibrate_marginals_seconds": ours_marg,
        "numpy_calibrate_seconds": base,
        "numpy_ratio": base / ours,
        "numpy_max_abs_diff": agree,
        "md_iterations": fit.iterations,
        "md_seconds": md_seconds,
        "md_iters_per_second": fit.iterations / md_seconds,
        "md_iters_per_second_median": 1.0 / md_median_iteration,
        "md_calibrations": fit.calibrations,
        "md_initial_loss": float(fit.loss_history[0]),
        "md_final_loss": fit.loss,
        "md_max_tvd": max(tvd),
        "md_data": "adult" if data is not None else "synthetic",
        "sample_rows": N_ADULT,
        "sample_seconds": sample_seconds,
        "cpu_count": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "numba_threading_layer": numba.threading_layer(),
        "load_average": list(os.getloadavg()),
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numba": numba.__version__,
        "machine": platform.machine(),
    }
    if mbi_result is not None:
        results["mbi_version"] = importlib.metadata.version("mbi")
        results["mbi_calibrate_seconds"] = mbi_result[0]
        results["mbi_ratio"] = mbi_result[0] / ours
        results["mbi_ratio_with_marginals"] = mbi_result[0] / mbi_result[1]
        results["mbi_max_abs_diff"] = mbi_result[2]
    report(results)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(results))
    return results


def table_rows(r: dict) -> list[tuple[str, str, str]]:
    """(what, time, note) rows of the results table."""
    rows = [
        (
            "calibration, vertimrf (Numba)",
            f"{r['calibrate_seconds'] * 1e3:.2f} ms",
            f"median of {r['repeats']}",
        ),
        (
            "calibration, plain numpy",
            f"{r['numpy_calibrate_seconds'] * 1e3:.2f} ms",
            f"numpy / vertimrf = {r['numpy_ratio']:.2f}x",
        ),
        (
            "calibration + all clique marginals",
            f"{r['calibrate_marginals_seconds'] * 1e3:.2f} ms",
            "",
        ),
    ]
    if "mbi_ratio" in r:
        rows.append(
            (
                f"mbi {r['mbi_version']} Hugin oracle (JAX, float64)",
                f"{r['mbi_calibrate_seconds'] * 1e3:.2f} ms",
                f"mbi / vertimrf = {r['mbi_ratio']:.2f}x; like for like (its output is "
                f"the marginals): {r['mbi_ratio_with_marginals']:.2f}x",
            )
        )
    else:
        rows.append(("mbi (private-pgm)", "-", "not installed, skipped"))
    rows += [
        (
            f"mirror descent, {r['md_iterations']} iterations",
            f"{r['md_seconds']:.2f} s",
            f"{r['md_iters_per_second']:.0f} it/s ({r['md_iters_per_second_median']:.0f} it/s "
            f"at the median iteration), {r['md_calibrations']} calibrations",
        ),
        (f"sample {r['sample_rows']:,} rows", f"{r['sample_seconds'] * 1e3:.1f} ms", "median of 5"),
    ]
    return rows


def header(r: dict) -> str:
    return (
        f"{r['cpu_count']} cores, {r['numba_threads']} Numba threads "
        f"({r['numba_threading_layer']}), load average {r['load_average'][0]:.2f}; "
        f"model {r['model_total_cells']:,} cells in {len(r['model_cliques'])} cliques "
        f"(largest {r['model_max_clique_cells']:,})"
    )


def report(r: dict) -> None:
    """Print the results table."""
    print("MRF engine benchmark: " + header(r))
    rows = table_rows(r)
    width = max(len(a) for a, _, _ in rows)
    for a, b, c in rows:
        print(f"  {a:<{width}}  {b:>10}  {c}")
    print(
        f"  numpy vs vertimrf beliefs: max |diff| = {r['numpy_max_abs_diff']:.1e}; "
        f"fit: loss {r['md_initial_loss']:.4g} -> {r['md_final_loss']:.4g}, "
        f"max TVD {r['md_max_tvd']:.4f} ({r['md_data']} marginals)"
    )


def markdown(r: dict) -> str:
    """The results table in Markdown."""
    lines = [
        "# MRF engine benchmark",
        "",
        header(r) + ".",
        "",
        "| what | time | note |",
        "|---|---:|---|",
    ]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in table_rows(r)]
    lines += [
        "",
        "The machine is a shared 2-core VM: absolute times move by tens of percent with other "
        "processes, so each compared pair (vertimrf and numpy, vertimrf and mbi) is timed in "
        "turn within every repeat. Mirror descent stops at the iteration cap (tol = 0); the "
        "marginals are Adult's exact 2-way counts.",
    ]
    lines += [
        "",
        "Produced by `python benchmarks/bench_mrf.py --json "
        "benchmarks/results/bench_mrf.json --md benchmarks/results/bench_mrf.md`.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
