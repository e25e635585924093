"""Does a second re-measurement round pay? The engine's flow (first release, selection,
re-measurement, fit; ``vertimrf.synth.engine.run.fit_local``) with its re-measurement split
into rounds: round 1 spends ``--fraction`` of the re-measurement's share on the selection,
the model is fitted, and each later round spends an equal part of what is left on marginals
chosen from what is already released (post-processing, as the secure protocol's server
would choose them), then the model is fitted again, warm. The rules for a later round:

* ``again``: every marginal of round 1 once more (a control: the same statistics, the
  budget in two draws);
* ``residual``: the half of round 1's marginals that the fitted model misses most, in units
  of their noise (squared error over cells x sigma^2);
* ``grow``: pairs outside the model's cliques whose first release the model misses by more
  than its noise explains, most first, each added as a clique while the tree stays under the
  model cap (the model regrown on the new tree), and measured (none: as ``again``).

NLTCS and Adult, delta 1e-6, seeds 0..2, 3-way TVD (``metrics.tvd``, 300 marginals). One
round is the engine itself (``PrivMRF(selection="engine")``, checked to give the same TVD).

    python benchmarks/bench_engine_rounds.py --json benchmarks/results/engine_rounds.json \
        --md benchmarks/results/engine_rounds.md
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import run_head, write_results  # noqa: E402

DELTA = 1e-6
VARIANTS = (("engine", 1, 1.0), ("again", 2, 0.7), ("residual", 2, 0.7), ("residual", 3, 0.5))
VARIANTS += (("grow", 2, 0.8),)


@dataclass(frozen=True)
class Rounds:
    """A variant: the rule of the later rounds, the number of rounds, round 1's fraction."""

    rule: str
    rounds: int
    fraction: float


def later_round(variant: Rounds, state: dict, rho_round: float) -> None:
    """Choose, measure and refit one later round at zCDP ``rho_round`` (``state``: the
    flow's model, tree, releases and measurements; updated)."""
    from vertimrf.mrf.estimation import Measurement
    from vertimrf.mrf.junction_tree import JunctionTree
    from vertimrf.synth.engine.aim import _regrow
    from vertimrf.synth.engine.fit import _fit
    from vertimrf.synth.engine.local import MARGINAL_SENSITIVITY
    from vertimrf.synth.privmrf.budget_split import sigma_for_share

    model, first, again = state["model"], state["first"], state["again"]
    plan, oracle = state["plan"], state["oracle"]
    if variant.rule == "again":
        picked = [m.attrs for m in again]
    elif variant.rule == "residual":
        misses = sorted(
            (
                float(np.sum((model.marginal(m.attrs).ravel() - m.values.ravel()) ** 2))
                * m.weight**2
                / m.values.size,
                m.attrs,
            )
            for m in again
        )
        picked = [a for _, a in misses[::-1][: max(1, len(misses) // 2)]]
    else:  # grow
        cliques = [tuple(c) for c in state["tree"].cliques]
        inside = [set(c) for c in cliques]
        misses = []
        for m, v in first.values.items():
            if any(set(m) <= c for c in inside):
                continue
            excess = float(np.sum((model.marginal(m).ravel() - v) ** 2))
            excess = excess / (first.scale[m] ** 2 * v.size) - 1.0
            if excess > 0:
                misses.append((excess, m))
        _, max_total = plan.model_caps(state["n_hat"])
        picked, tree = [], state["tree"]
        for _, m in sorted(misses)[::-1][: len(plan.domain)]:
            try:
                grown = JunctionTree.build(
                    plan.domain, [*cliques, m], heuristic="min_fill", max_cells=int(max_total)
                )
            except Exception:  # over the cap: not added
                continue
            cliques.append(m)
            picked.append(m)
            tree = grown
        if not picked:  # the model misses no pair: round 1's marginals again
            picked = [m.attrs for m in again]
        model = state["model"] = _regrow(model, tree)
        state["tree"] = tree
        held = [set(c) for c in tree.cliques]
        state["within"] = [
            Measurement(m, v, 1.0 / first.scale[m])
            for m, v in first.values.items()
            if any(set(m) <= c for c in held)
        ]
    sigma = sigma_for_share(rho_round, len(picked), MARGINAL_SENSITIVITY)
    measured = oracle.measure(picked, sigma, "a later round")
    again += [Measurement(m, v, 1.0 / sigma) for m, v in measured.values.items()]
    ratio = plan.options.final_convergence_ratio
    state["iterations"].append(_fit(plan, model, again + state["within"], ratio))


def patched_fit_local(variant: Rounds):  # noqa: ANN201 - the engine's fit_local
    """The engine's ``fit_local`` with its re-measurement split into ``variant``'s rounds."""
    from vertimrf.synth.engine import run
    from vertimrf.synth.engine.plan import cells_per_precision

    def fit_local(codes, domain, rho, engine, options, noise, rng):  # noqa: ANN001, ANN202
        oracle = run.LocalOracle(codes, domain, noise)
        sigma_n = run.sigma_for_share(rho * engine.count, 1, run.COUNT_SENSITIVITY)
        noise.charge("engine.count", run.COUNT_SENSITIVITY, sigma_n, 1, "noisy record count")
        count = float(noise.gaussian(np.array([codes.shape[0]]), sigma_n)[0])
        pairs = oracle.all_pairs()
        select = run.first_share(domain.sizes, rho, count, pairs)
        rho_measure = rho * (1.0 - engine.count - select)
        sigma1 = run.sigma_for_share(rho * select, len(pairs), run.MARGINAL_SENSITIVITY)
        first = oracle.measure(pairs, sigma1, "first release")
        n_hat = run.record_total(count, 1.0 / sigma_n**2, first)
        per = cells_per_precision(1e6)  # method secure's ceiling when this was measured
        plan = run.EnginePlan(
            domain, sigma1, rho_measure, engine.refine_fraction, engine.iters, options, per
        )
        choice = run.choose(first, n_hat, plan, oracle, rng)
        rho1 = rho_measure * variant.fraction
        sigma2 = run.sigma_for_share(rho1, len(choice.marginals), run.MARGINAL_SENSITIVITY)
        second = oracle.measure(choice.marginals, sigma2, "round 1")
        again, within = run.measurements(first, second, choice.tree)
        model, iterations = run.fit_model(plan, choice.tree, n_hat, again, within)
        state = {
            "model": model, "tree": choice.tree, "first": first, "again": again,
            "within": within, "plan": plan, "oracle": oracle, "n_hat": n_hat,
            "iterations": iterations,
        }  # fmt: skip
        left = rho_measure - rho1
        for r in range(2, variant.rounds + 1):
            share = left / (variant.rounds - r + 1)
            left -= share
            later_round(variant, state, share)
        return run.LocalFit(
            state["model"], choice.graph, state["tree"], n_hat,
            (*state["again"], *state["within"]), sigma2, tuple(state["iterations"]),
        )  # fmt: skip

    return fit_local


def measure(dataset: str, variant: Rounds, epsilon: float, seed: int) -> dict:
    """One fit: its 3-way TVD, the rho it spent and its seconds."""
    from vertimrf import PrivMRF, load_dataset
    from vertimrf.metrics import tvd
    from vertimrf.privacy.zcdp import epsilon_to_rho
    from vertimrf.synth.engine import run

    df, spec = load_dataset(dataset)
    original = run.fit_local
    if variant.rule != "engine":
        run.fit_local = patched_fit_local(variant)
    start = time.perf_counter()
    try:
        fit = PrivMRF(epsilon, DELTA, seed=seed, selection="engine", progress=False)
        synth = fit.fit(df, spec).sample()
    finally:
        run.fit_local = original
    return {
        "dataset": dataset,
        "rule": variant.rule,
        "rounds": variant.rounds,
        "fraction": variant.fraction,
        "epsilon": epsilon,
        "seed": seed,
        "tvd3": tvd(df, synth, spec, ways=3),
        "spent_rho": fit.report.rho,
        "rho": epsilon_to_rho(epsilon, DELTA),
        "seconds": time.perf_counter() - start,
    }


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# A second re-measurement round in the engine",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; delta {DELTA}, "
        "seeds 0..2, 3-way TVD (mean +- standard error). Each variant spends the whole "
        "budget (spent rho = budget, checked).",
        "",
        "| table | eps | rule | rounds | round 1's fraction | 3-way TVD | x one round |",
        "|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["epsilon"], r["rule"], r["rounds"]), []).append(r)
    for (dataset, eps, rule, rounds), rs in groups.items():
        v = np.array([r["tvd3"] for r in rs])
        base = np.mean([r["tvd3"] for r in groups[(dataset, eps, "engine", 1)]])
        se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0
        out.append(
            f"| {dataset} | {eps} | {rule} | {rounds} | {rs[0]['fraction']} | "
            f"{v.mean():.5f} +- {se:.5f} | {v.mean() / base:.2f} |"
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", default=["nltcs", "adult"])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.4, 1.6])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    head = run_head(__file__, argv)
    rows = []
    for dataset in args.datasets:
        for epsilon in args.epsilons:
            for rule, rounds, fraction in VARIANTS:
                for seed in range(args.seeds):
                    row = measure(dataset, Rounds(rule, rounds, fraction), epsilon, seed)
                    if abs(row["spent_rho"] - row["rho"]) > 1e-9 * row["rho"]:
                        raise SystemExit(f"{row}: the budget is not spent exactly")
                    rows.append(row)
                    print(row, file=sys.stderr, flush=True)
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
