"""Figure: l-way TVD against epsilon for every method."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.metrics import tvd
from vertimrf.report.context import DASHED, METHODS, ReportContext
from vertimrf.report.registry import FigureData, Panel, register, series

EPSILONS = [0.4, 0.8, 1.6, 3.2]
MBI_NOTE = (
    "MST and AIM are not drawn yet: adding them means running them through mbi >= 2 "
    '(`pip install "mbi>=2"`, not a dependency of vertimrf) with a time cap per run.'
)


@register(
    "tvd",
    "The mean 3-, 4- and 5-way TVD of each method's synthetic table against the real one "
    "(lower is better; error bars: standard deviation over seeds), against epsilon.",
    tiny={"epsilons": [1.6], "ways": [3], "marginals": 20, "methods": list(METHODS)},
    quick={"epsilons": EPSILONS, "ways": [3, 4, 5], "marginals": 100, "methods": list(METHODS)},
    full={"epsilons": EPSILONS, "ways": [3, 4, 5], "marginals": 300, "methods": list(METHODS)},
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
    panels = []
    for w in ways:
        lines = [
            series(METHODS[m], epsilons, [scores[(m, e, w)] for e in epsilons], m in DASHED)
            for m in methods
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
    return FigureData(panels=panels, notes=[MBI_NOTE])
