"""Figure: l-way TVD against epsilon for every method."""

from __future__ import annotations

import importlib.util
import tempfile
from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.metrics import tvd
from vertimrf.report.baselines import LABELS, run_capped
from vertimrf.report.context import DASHED, METHODS, ReportContext
from vertimrf.report.opendp_mechanisms import CONFIGURATIONS
from vertimrf.report.registry import FigureData, Panel, register, series

EPSILONS = [0.4, 0.8, 1.6, 3.2]
NO_MBI_NOTE = (
    "MST and AIM are drawn when OpenDP's extras.mbi can run "
    '(`pip install "vertimrf[baselines]"`); it cannot here (mbi or polars is missing).'
)


# Shared by --quick and --full. An AIM run on Adult takes 13-21 minutes on a core at epsilon
# 0.4-0.8, so neither runs it (`vertimrf report --baselines mst,aim` does, from a run store).
ALL_EPSILONS = {"epsilons": EPSILONS, "ways": [3, 4, 5], "methods": list(METHODS)}


MST_NOTE = (
    "MST's model is a spanning tree of 2-way marginals, so no budget takes it below the best "
    "tree's error: on NLTCS a tree fitted to exact counts has a 3-way TVD of 0.13 (Chow-Liu) "
    "to 0.14 (MST's own score), where OpenDP's MST lands (benchmarks/bench_mst_tree.py)."
)


@register(
    "tvd",
    "The mean 3-, 4- and 5-way TVD of each method's synthetic table against the real one "
    "(lower is better; error bars: standard deviation over seeds), against epsilon.",
    tiny={
        "epsilons": [1.6],
        "ways": [3],
        "marginals": 20,
        "methods": list(METHODS),
        "baselines": [],
        "cap": 0,
    },
    # quick: MST once (AIM took over 240 s on NLTCS under load; the quick run keeps to 10 min)
    quick=ALL_EPSILONS
    | {"marginals": 100, "baselines": ["mst"], "cap": 240, "only_at": {"mst": [1.6]}},
    full=ALL_EPSILONS | {"marginals": 300, "baselines": ["mst"], "cap": 900},
)
def tvd_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """Each method at each epsilon and seed; one panel per marginal size."""
    epsilons, ways, methods = params["epsilons"], params["ways"], params["methods"]
    jobs = [(m, e, s) for m in methods for e in epsilons for s in range(ctx.seeds)]
    scores: dict[tuple[str, float, int], list[float]] = {}
    for method, eps, seed in progress_bar(jobs, desc="tvd: runs", progress=ctx.progress):
        synth = ctx.run(method, eps, seed).synth
        for w in ways:
            value = tvd(ctx.df, synth, ctx.spec, ways=w, n_marginals=params["marginals"])
            scores.setdefault((method, eps, w), []).append(value)
    labels = {m: METHODS[m] for m in methods}
    notes = [NO_MBI_NOTE] if params["baselines"] else []
    if params["baselines"] and all(importlib.util.find_spec(m) for m in ("mbi", "polars")):
        notes = _baselines(ctx, params, scores)
        labels |= {m: LABELS[m] for m in params["baselines"]}
    panels = []
    for w in ways:
        lines = [
            series(label, *_points(scores, m, epsilons, w), dashed=m in DASHED)
            for m, label in labels.items()
        ]
        panels.append(
            Panel(
                f"{w}-way marginals",
                "epsilon",
                f"mean {w}-way TVD (log scale)",
                lines,
                xlog=True,
                ylog=True,
            )
        )
    return FigureData(panels=panels, notes=notes)


def _points(
    scores: dict[tuple[str, float, int], list[float]], method: str, epsilons: list[float], w: int
) -> tuple[list[float], list[list[float]]]:
    """The epsilons at which ``method`` has scores (a timed-out baseline has none), and them."""
    kept = [e for e in epsilons if scores.get((method, e, w))]
    return kept, [scores[(method, e, w)] for e in kept]


def _baselines(
    ctx: ReportContext, params: Mapping[str, Any], scores: dict[tuple[str, float, int], list[float]]
) -> list[str]:
    """Score MST and AIM into ``scores``, each run killed at the cap (or read from the
    context's baseline store); the notes saying so."""
    jobs = [
        (m, e, s)
        for m in params["baselines"]
        for e in params.get("only_at", {}).get(m, params["epsilons"])
        for s in range(ctx.seeds)
    ]
    outcomes: dict[str, list[str]] = {}
    any_reused = False
    with tempfile.TemporaryDirectory() as cache:  # JAX's compiled programs, shared by the runs
        for method, eps, seed in progress_bar(jobs, desc="tvd: baselines", progress=ctx.progress):
            cap, store = params["cap"], ctx.baseline_store
            run = run_capped(method, ctx.df, ctx.spec, eps, ctx.delta, seed, cap, cache, store)
            reused = "reused from the store, " if run.reused else ""
            any_reused = any_reused or run.reused
            outcomes.setdefault(method, []).append(
                f"eps {eps} seed {seed}: {reused}{run.status} {run.seconds:.0f} s"
            )
            for w in params["ways"]:
                cell = scores.setdefault((method, eps, w), [])
                if run.synth is not None:
                    n = params["marginals"]
                    cell.append(tvd(ctx.df, run.synth, ctx.spec, ways=w, n_marginals=n))
    head = (
        f"{' and '.join(LABELS[m] for m in params['baselines'])} through OpenDP's extras.mbi "
        "(vertimrf.report.opendp_mechanisms; OpenDP's noise is not seeded): "
        + "; ".join(f"{LABELS[m]}: {CONFIGURATIONS[m]}" for m in params["baselines"])
        + ". Each run "
        f"in a child process killed after {params['cap']} s (the cap per run); a point is "
        "drawn where at least one seed finished, and the mean is over the seeds that did. TVD "
        "is vertimrf.metrics.tvd on the same marginals for every method."
    )
    if any_reused:
        head += (
            " A run reused from the store was made by an earlier report or benchmark on the "
            "same table (`--baseline-store`), possibly under a longer cap."
        )
    runs = [f"{LABELS[m]}: " + "; ".join(text) for m, text in outcomes.items()]
    return [head, *runs] + ([MST_NOTE] if "mst" in params["baselines"] else [])
