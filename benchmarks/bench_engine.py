"""3-way TVD and time of Centralized PrivMRF, the engine, aim-like, method secure, MST, AIM.

NLTCS and Adult, delta 1e-6, at each epsilon and seed, these synthesizers on the same table:

* ``privmrf``: ``PrivMRF(epsilon, delta, seed=s, selection="privmrf")``, the paper's selection;
* ``engine``: ``PrivMRF(..., selection="engine")``, the select-measure-fit engine with the
  local oracle (exact counts plus discrete Gaussian noise, method secure's budget split);
* ``aim-like``: ``PrivMRF(..., selection="aim")``, AIM's rounds on the engine's MRF;
* ``secure``: ``simulate(..., method="secure", max_rows=65_536)`` over two parties (the
  paper's split, 8 & 8 and 8 & 7 columns, as ``bench_budget_spent.py``), the same engine
  with the secure product as its oracle;
* ``secure-coins``: the same with ``cross_noise="coins"`` (w = 1: each cross count carries
  sigma^2, not 1.5 sigma^2; docs/accounting.md, "Coins");
* ``secure-paillier``, ``secure-paillier-coins``: ``secure`` and ``secure-coins`` with
  ``product="paillier"`` (no dealer);
* ``mst``, ``aim``: MST and AIM through OpenDP (``vertimrf.report.baselines``; MST at
  OpenDP's contingency table's defaults, AIM as its paper configures it on the exact domain),
  each in a child process killed after ``--cap`` seconds (default 3600), its status and
  seconds kept; OpenDP's noise is not seeded. Only when asked for with ``--methods``.

Each row has the 3-way TVD (``metrics.tvd``, 300 marginals) of ``round(n_hat)`` synthetic
rows, the ledger's total rho against the budget's (OpenDP keeps its own: None there), and the
seconds of fit and sampling. With ``--resume`` the rows already in ``--json`` are kept and not
run again, and the files are written after every row, so a long run (AIM: up to an hour a
run) can stop and go on. With ``--store DIR`` each MST and AIM run is kept in DIR
(``vertimrf.report.run_store``, shared with ``vertimrf report --baseline-store``) and read back
instead of run again, its row marked ``reused`` with the stored run's seconds. With
``--stored-only`` (MST and AIM only) nothing runs: the rows are the store's runs, and a run it
does not hold is a row "not run", so the table of runs made over several sessions and
processes is written by one command. The store of the committed results is
``benchmarks/results/baseline_runs``, in the repository, so that runs made on one machine are
not lost with it.

    python benchmarks/bench_engine.py --seeds 3 --epsilons 0.4 1.6 \
        --json benchmarks/results/engine.json --md benchmarks/results/engine.md
    python benchmarks/bench_engine.py --seeds 3 --epsilons 0.4 0.8 1.6 3.2 \
        --methods engine secure mst aim --resume \
        --store benchmarks/results/baseline_runs \
        --json benchmarks/results/vs_aim.json --md benchmarks/results/vs_aim.md
    python benchmarks/bench_engine.py nltcs adult --seeds 3 --epsilons 0.4 0.8 1.6 3.2 \
        --methods aim --stored-only --store benchmarks/results/baseline_runs \
        --json benchmarks/results/vs_aim.json --md benchmarks/results/vs_aim.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, mean_se, mean_se_text, run_head, write_results  # noqa: E402

DELTA, MAX_ROWS = 1e-6, 65_536
SPLITS = {"nltcs": 8, "adult": 8}
EPSILONS = (0.4, 1.6)
METHODS = (
    "privmrf", "engine", "aim-like", "secure", "secure-coins", "secure-paillier",
    "secure-paillier-coins", "mst", "aim",
)  # fmt: skip
# method secure's cross noise, and its product backend
NOISES = {
    "secure": "split", "secure-coins": "coins", "secure-paillier": "split",
    "secure-paillier-coins": "coins",
}  # fmt: skip
PRODUCTS = {"secure-paillier": "paillier", "secure-paillier-coins": "paillier"}
SELECTIONS = {"privmrf": "privmrf", "engine": "engine", "aim-like": "aim"}
BASELINES = ("mst", "aim")


def measure(
    dataset: str,
    method: str,
    epsilon: float,
    seed: int,
    cap: float,
    cache: str | None,
    store: str | None = None,
    stored_only: bool = False,
) -> dict:
    """One run: the 3-way TVD (None for a baseline that did not finish), spent and budgeted
    rho, status and seconds; ``cap``, ``cache`` and ``store`` are a baseline's time cap, JAX
    cache (None: none) and run store (a baseline read from the store has the seconds of the
    run stored); ``stored_only``: a baseline is only read from the store ("not run" if it is
    not there)."""
    from vertimrf import PrivMRF, load_dataset, simulate
    from vertimrf.metrics import tvd
    from vertimrf.privacy.zcdp import epsilon_to_rho
    from vertimrf.report.baselines import run_capped

    df, spec = load_dataset(dataset)
    start = time.perf_counter()
    status, spent, reused = "finished", None, False
    if method in BASELINES:
        run = run_capped(
            method, df, spec, epsilon, DELTA, seed, cap, cache, store, run_missing=not stored_only
        )
        synth, status, reused = run.synth, run.status, run.reused
    elif method in NOISES:
        names = list(spec.names)
        parts = [names[: SPLITS[dataset]], names[SPLITS[dataset] :]]
        with tempfile.TemporaryDirectory() as mail:  # messages through files: no blob whole
            synth, report = simulate(
                df, spec, parts, epsilon, DELTA, method="secure", seed=seed, max_rows=MAX_ROWS,
                cross_noise=NOISES[method], message_dir=mail,
                product=PRODUCTS.get(method, "dealer"),
            )  # fmt: skip
        spent = report.ledger.total_rho
    else:
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection=SELECTIONS[method], progress=False)
        synth = fit.fit(df, spec).sample()
        spent = fit.report.rho
    seconds = run.seconds if reused else time.perf_counter() - start
    row = {
        "dataset": dataset,
        "method": method,
        "epsilon": epsilon,
        "seed": seed,
        "tvd3": None if synth is None else tvd(df, synth, spec, ways=3),
        "spent_rho": spent,
        "rho": epsilon_to_rho(epsilon, DELTA),
        "status": status,
        "seconds": seconds,
    }
    return row | ({"reused": True} if reused else {})


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Centralized PrivMRF, the engine and aim-like on one table, method secure, MST and AIM",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; load before the "
        f"run {head['load']}; delta {DELTA}, secure max_rows {MAX_ROWS:,}, "
        f"seeds {head['seeds']}.",
        "",
        "| dataset | epsilon | method | 3-way TVD (mean +- se) | spent rho / rho | runs "
        "| seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = sorted({(r["dataset"], r["epsilon"]) for r in rows})
    for dataset, epsilon in keys:
        for method in METHODS:
            sel = [r for r in rows if (r["dataset"], r["epsilon"], r["method"]) == (dataset,
                   epsilon, method)]  # fmt: skip
            if not sel:
                continue
            done = [r["tvd3"] for r in sel if r["tvd3"] is not None]
            tvd = mean_se_text(done) if done else "-"
            frac = [r["spent_rho"] / r["rho"] for r in sel if r["spent_rho"] is not None]
            spent = f"{min(frac):.10f}-{max(frac):.10f}" if frac else "OpenDP's"
            ran = [r["seconds"] for r in sel if r.get("status") != "not run"]
            seconds = f"{mean_se(ran)[0]:.1f}" if ran else "-"
            runs = "; ".join(_run(r) for r in sel)
            out.append(
                f"| {dataset} | {epsilon:g} | {method} | {tvd} | {spent} | {runs} | {seconds} |"
            )
    return "\n".join(out) + "\n"


def _run(row: dict) -> str:
    """A run's status and seconds, as the table lists it."""
    status = row.get("status", "finished")
    return status if status == "not run" else f"{status} {row['seconds']:.0f} s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=list(SPLITS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--cap", type=float, default=3600.0, help="seconds per MST or AIM run")
    parser.add_argument("--resume", action="store_true", help="keep --json's rows, run the rest")
    parser.add_argument(
        "--jax-cache",
        help="a folder for MST's and AIM's compiled programs, kept between runs (none by "
        "default: AIM's are seldom asked again, and writing them took ~7%% of a run)",
    )
    parser.add_argument(
        "--store",
        help="a folder keeping MST's and AIM's runs across processes (and vertimrf report "
        "--baseline-store): a run it holds is read, not run again",
    )
    parser.add_argument(
        "--stored-only",
        action="store_true",
        help="run nothing: MST's and AIM's rows are --store's runs ('not run' if missing)",
    )
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    if args.stored_only and (not args.store or set(args.methods) - set(BASELINES)):
        only = "--stored-only reads MST's and AIM's runs from --store: give --store and "
        parser.error(only + "only the methods mst and aim")
    head = {**run_head(__file__, argv), "seeds": f"0..{args.seeds - 1}", "load": load_average()}
    rows = []
    if args.resume and args.json and Path(args.json).exists():
        rows = json.loads(Path(args.json).read_text(encoding="utf-8"))["rows"]
    done = {(r["dataset"], r["method"], r["epsilon"], r["seed"]) for r in rows}
    for dataset in args.datasets:
        for epsilon in args.epsilons:
            for seed in range(args.seeds):
                for method in args.methods:
                    if (dataset, method, epsilon, seed) in done:
                        continue
                    rows.append(
                        measure(
                            dataset,
                            method,
                            epsilon,
                            seed,
                            args.cap,
                            args.jax_cache,
                            args.store,
                            args.stored_only,
                        )  # fmt: skip
                    )
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
                    if args.resume:
                        write_results(args.json, args.md, head, rows, markdown)
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
