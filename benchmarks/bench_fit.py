"""The server's whole fit (``vertimrf.synth.engine.fit.fit_model``: the warm start on the
first release, then every measurement) on the measurements of one real run, in CPU seconds.

``capture`` runs method secure in this process on Adult resampled to 1M rows (rows drawn
with a fixed seed; 2 parties of 8 and 7 columns, epsilon 1.6, delta 1e-6, seed 0) and, when
the server reaches its fit, saves the fit's inputs and stops the run: the model (domain,
junction tree, n_hat; potentials zero) as the library's model file, the measurements and
the fit's options. ``run`` reads them and fits, with the tree given by PYTHONPATH, so
the trees of two commits run on the same model and measurements (after a fit of one
iteration that compiles the kernels or loads them from the cache); with ``--out`` it saves
the fitted log-potentials, and ``compare`` reports how far two such files are apart.

The inputs of one capture are kept in ``benchmarks/results/fit_time_inputs`` (the default
``--dir``).

    python benchmarks/bench_fit.py capture --dir D
    PYTHONPATH=OLD_TREE python benchmarks/bench_fit.py run --threads 1 --out old.npy
    PYTHONPATH=NEW_TREE python benchmarks/bench_fit.py run --threads 1 --out new.npy
    python benchmarks/bench_fit.py compare old.npy new.npy

``parts`` times each part of an iteration (the calibration, the projections, the step and
the gradient) in one fit; ``orders`` times one calibration with the attributes in other
orders. ``trees`` does the same as ``run`` in turn, ``--rounds`` times at
each of ``--threads-list``:

    python benchmarks/bench_fit.py trees --old OLD_TREE --new NEW_TREE --json J
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, load_average, machine, run_head  # noqa: E402

ROWS, ROW_SEED, EPSILON, DELTA, SPLIT = 1_000_000, 20240611, 1.6, 1e-6, 8
INPUTS = Path(__file__).resolve().parent / "results" / "fit_time_inputs"
OPTIONS = ("convergence_ratio", "final_convergence_ratio", "tol", "check_every")


class _CapturedError(Exception):
    """Raised once the fit's inputs are saved: the run needs go no further."""


def capture(folder: Path) -> None:
    """Run method secure up to the server's fit and save the fit's inputs in ``folder``."""
    import vertimrf.server.secure.fit as server_fit
    from vertimrf import load_dataset, simulate
    from vertimrf.mrf import MarkovRandomField

    def save(plan, tree, n_hat, again, pairs):
        folder.mkdir(parents=True, exist_ok=True)
        MarkovRandomField(plan.domain, tree, total=n_hat).save(folder / "model.vmrf")
        arrays: dict[str, np.ndarray] = {}
        kinds = []
        for i, m in enumerate([*again, *pairs]):
            arrays[f"attrs{i}"] = np.array(m.attrs, dtype=np.int64)
            arrays[f"values{i}"] = m.values
            arrays[f"weight{i}"] = np.array(m.weight)
            for a, b in enumerate(m.bins or ()):
                if b is not None:
                    arrays[f"bins{i}_{a}"] = b
            kinds.append("again" if i < len(again) else "pair")
        np.savez_compressed(folder / "measurements.npz", **arrays)
        opts = {name: getattr(plan.options, name) for name in OPTIONS}
        meta = {"iters": plan.iters, "kinds": kinds, **opts}
        (folder / "fit.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        raise _CapturedError

    df, spec = load_dataset("adult")
    rows = np.random.default_rng(ROW_SEED).integers(0, len(df), ROWS)
    big = df.iloc[rows].reset_index(drop=True)
    names = list(spec.names)
    server_fit.fit_model = save  # type: ignore[assignment]
    try:
        simulate(big, spec, [names[:SPLIT], names[SPLIT:]], EPSILON, DELTA, seed=0,
                 max_rows=1 << 21)  # fmt: skip
    except Exception as exc:  # the run reports the stop as a step's error
        if not isinstance(exc.__cause__, _CapturedError):
            raise
        print(f"saved the fit's inputs in {folder}")
        return
    raise SystemExit("the run finished without reaching the server's fit")


def load(folder: Path):
    """The fit's plan (its domain, options and iteration cap), tree, n_hat and measurements."""
    from vertimrf.mrf import MarkovRandomField
    from vertimrf.mrf.estimation import Measurement

    model = MarkovRandomField.load(folder / "model.vmrf")
    meta = json.loads((folder / "fit.json").read_text(encoding="utf-8"))
    arrays = np.load(folder / "measurements.npz")
    again, pairs = [], []
    for i, kind in enumerate(meta["kinds"]):
        attrs = tuple(int(a) for a in arrays[f"attrs{i}"])
        bins = tuple(arrays.get(f"bins{i}_{a}") for a in range(len(attrs)))
        m = Measurement(
            attrs,
            arrays[f"values{i}"],
            float(arrays[f"weight{i}"]),
            bins=bins if any(b is not None for b in bins) else None,
        )
        (again if kind == "again" else pairs).append(m)
    options = SimpleNamespace(**{name: meta[name] for name in OPTIONS})
    plan = SimpleNamespace(domain=model.domain, options=options, iters=meta["iters"])
    return plan, model.tree, model.total, again, pairs


def _ready(folder: Path, threads: int, iters: int | None):
    """The fit's inputs (:func:`load`), ``iters`` its cap if given, after a fit of one
    iteration on ``threads`` threads that compiles the kernels or loads them from the cache."""
    import numba

    from vertimrf.synth.engine.fit import fit_model

    numba.set_num_threads(threads)
    plan, tree, n_hat, again, pairs = load(folder)
    warm = SimpleNamespace(domain=plan.domain, options=plan.options, iters=1)
    fit_model(warm, tree, n_hat, again, pairs)  # type: ignore[arg-type]  # compile or load
    if iters is not None:
        plan.iters = iters
    return plan, tree, n_hat, again, pairs


def run(folder: Path, threads: int, out: Path | None, iters: int | None = None) -> dict:
    """One whole fit (each of its two fits capped at ``iters`` if given, else the run's cap):
    CPU and wall seconds, iterations, the tree's commit and the load."""
    import vertimrf
    from vertimrf.synth.engine.fit import fit_model

    plan, tree, n_hat, again, pairs = _ready(folder, threads, iters)
    load_before = load_average()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    model, iterations = fit_model(plan, tree, n_hat, again, pairs)  # type: ignore[arg-type]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    if out is not None:
        np.save(out, model.potentials.values)
    return {
        "commit": git_commit(Path(vertimrf.__file__).resolve().parents[1]),
        "threads": threads,
        "cpu_s": cpu,
        "wall_s": wall,
        "iterations": iterations,
        "cells": int(model.layout.total_cells),
        "measurements": len(again) + len(pairs),
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
    }


def parts(folder: Path, threads: int, iters: int | None) -> dict:
    """One whole fit (each fit capped at ``iters`` if given) with a CPU timer around each
    part of an iteration: the calibration, the measurements' projections, the step and
    the gradient (its scatter, ``expand_add``, is counted apart and inside it)."""
    import vertimrf.mrf.estimation as estimation
    from vertimrf.mrf.cliques import SharedSumOutPlan
    from vertimrf.mrf.model import MarkovRandomField
    from vertimrf.synth.engine.fit import fit_model

    plan, tree, n_hat, again, pairs = _ready(folder, threads, iters)
    spent: dict[str, list[float]] = {}

    def timed(name, call):
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return call(*args, **kwargs)
            finally:
                row = spent.setdefault(name, [0.0, 0])
                row[0] += time.process_time() - start
                row[1] += 1

        return wrapper

    targets = [
        (MarkovRandomField, "calibrate_buffer", "calibration"),
        (SharedSumOutPlan, "project", "projections"),
        (SharedSumOutPlan, "expand_add", "gradient's expand_add"),
        (estimation._Objective, "step", "step (axpy)"),
        (estimation._Objective, "gradient", "gradient"),
    ]
    saved = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in targets]
    for owner, name, label in targets:
        setattr(owner, name, timed(label, getattr(owner, name)))
    load_before = load_average()
    try:
        cpu0 = time.process_time()
        _, iterations = fit_model(plan, tree, n_hat, again, pairs)  # type: ignore[arg-type]
        cpu = time.process_time() - cpu0
    finally:
        for owner, name, method in saved:
            if method is None:  # inherited: drop the wrapper
                delattr(owner, name)
            else:
                setattr(owner, name, method)
    total = sum(iterations)
    return {
        "threads": threads,
        "cpu_s": cpu,
        "iterations": iterations,
        "parts": {
            name: {"cpu_s": s, "calls": n, "ms_per_call": 1e3 * s / n, "calls_per_iter": n / total}
            for name, (s, n) in spent.items()
        },
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
    }


def orders(folder: Path, repeat: int = 30) -> dict:
    """One calibration of the fit's model (random potentials, one thread; the median of
    ``repeat`` CPU times) with its attributes in other orders, which change the cliques'
    layouts and their runs: as given, the most often summed out first or last, the largest
    first, the smallest first."""
    import numba

    from vertimrf.domain import Domain
    from vertimrf.mrf import MarkovRandomField

    numba.set_num_threads(1)
    base = MarkovRandomField.load(folder / "model.vmrf")
    tree, sizes, names = base.tree, base.domain.sizes, base.domain.names
    summed = [0] * len(sizes)  # how often each attribute is summed out onto a separator
    for e, pair in enumerate(tree.edges):
        for c in pair:
            for a in set(tree.cliques[c]) - set(tree.separators[e]):
                summed[a] += 1
    attrs = range(len(sizes))
    ways = {
        "as given": list(attrs),
        "most summed out first": sorted(attrs, key=lambda a: (-summed[a], a)),
        "most summed out last": sorted(attrs, key=lambda a: (summed[a], a)),
        "largest first": sorted(attrs, key=lambda a: (-sizes[a], a)),
        "smallest first": sorted(attrs, key=lambda a: (sizes[a], a)),
    }
    out = {}
    for label, order in ways.items():
        place = {a: i for i, a in enumerate(order)}
        domain = Domain(tuple(names[a] for a in order), tuple(sizes[a] for a in order))
        cliques = [tuple(sorted(place[a] for a in c)) for c in tree.cliques]
        model = MarkovRandomField(domain, cliques, total=base.total)
        theta = np.random.default_rng(0).normal(size=model.potentials.values.size)
        model.calibrate_buffer(theta)  # compile or load
        times = []
        for _ in range(repeat):
            start = time.process_time()
            model.calibrate_buffer(theta)
            times.append(time.process_time() - start)
        out[label] = {"order": order, "ms": 1e3 * float(np.median(times))}
    return {"calibrations": out, "machine": machine(), "load_after": load_average()}


def compare(folder: Path, first: Path, second: Path) -> dict:
    """How far two fitted potentials are apart: in the potentials and in the model's clique
    marginals (counts)."""
    from vertimrf.mrf import MarkovRandomField

    base = MarkovRandomField.load(folder / "model.vmrf")
    a, b = np.load(first), np.load(second)
    counts = []
    for theta in (a, b):
        model = base.copy()
        model.set_potentials(theta)
        counts.append(model.clique_marginals())
    return {
        "max_abs_theta": float(np.max(np.abs(a - b))),
        "max_abs_counts": float(np.max(np.abs(counts[0] - counts[1]))),
        "max_counts": float(np.max(counts[0])),
    }


def trees(args: argparse.Namespace) -> dict:
    """``run`` under the old and the new tree in turn (each its own process), ``--rounds``
    times for each thread count; the CPU seconds, their medians, the ratio new / old of the
    medians, and how far the fitted potentials are apart."""
    import statistics
    import subprocess
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for threads in args.threads_list:
                for label, tree in (("old", args.old), ("new", args.new)):
                    out = Path(tmp) / f"{label}_{threads}.npy"
                    cmd = [sys.executable, __file__, "run", "--dir", str(args.dir),
                           "--threads", str(threads), "--out", str(out)]  # fmt: skip
                    if args.iters is not None:
                        cmd += ["--iters", str(args.iters)]
                    env = {**os.environ, "PYTHONPATH": str(tree)}
                    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                    row = {"tree": label, "round": rnd, **json.loads(proc.stdout)}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
        apart = {
            threads: compare(
                args.dir, Path(tmp) / f"old_{threads}.npy", Path(tmp) / f"new_{threads}.npy"
            )
            for threads in args.threads_list
        }
    summary = []
    for threads in args.threads_list:
        med = {
            label: statistics.median(
                r["cpu_s"] for r in rows if r["tree"] == label and r["threads"] == threads
            )
            for label in ("old", "new")
        }
        summary.append({"threads": threads, **med, "ratio": med["new"] / med["old"]})
    return {"machine": machine(), "rows": rows, "summary": summary, "apart": apart}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["capture", "run", "compare", "trees", "parts", "orders"])
    ap.add_argument("--dir", type=Path, default=INPUTS, help="the fit's inputs")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, help="run: save the fitted potentials (.npy)")
    ap.add_argument("files", nargs="*", type=Path, help="compare: two saved potentials")
    ap.add_argument("--old", type=Path, help="trees: the old tree")
    ap.add_argument("--new", type=Path, help="trees: the new tree")
    ap.add_argument("--threads-list", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, help="cap each of the two fits (a quick check)")
    ap.add_argument("--json", type=Path, help="trees, parts, orders: write the results here")
    args = ap.parse_args(argv)
    if args.action == "capture":
        capture(args.dir)
    elif args.action == "trees":
        result = trees(args)
        print(json.dumps(result["summary"]), json.dumps(result["apart"]))
        if args.json:
            args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    elif args.action == "run":
        print(json.dumps(run(args.dir, args.threads, args.out, args.iters)))
    elif args.action in ("parts", "orders"):
        found = (
            parts(args.dir, args.threads, args.iters)
            if args.action == "parts"
            else orders(args.dir)
        )
        result = {**run_head(__file__, argv), **found}
        text = json.dumps(result, indent=1) + "\n"
        if args.json:
            args.json.write_text(text, encoding="utf-8")
        print(text, end="")
    else:
        print(json.dumps(compare(args.dir, *args.files)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
