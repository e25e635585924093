"""Figure: the number of parties."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.metrics import tvd
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FigureData, Panel, register, series


@register(
    "parties",
    "The secure method's mean 3-way TVD as the columns are split over more parties "
    "(contiguous groups; at full and quick sizes the last point is one column per party), "
    "beside Centralized PrivMRF on the whole table, at one epsilon.",
    tiny={"epsilon": 1.6, "parties": [2, 3], "per_column": False, "marginals": 20},
    quick={"epsilon": 1.6, "parties": [2, 3, 4], "per_column": True, "marginals": 100},
    full={"epsilon": 1.6, "parties": [2, 3, 4], "per_column": True, "marginals": 300},
)
def parties_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """Secure at each number of parties and seed; Centralized once per seed."""
    eps, counts = params["epsilon"], list(params["parties"])
    if params["per_column"]:
        counts.append(len(ctx.spec))
    jobs = [(m, s) for m in counts for s in range(ctx.seeds)]
    score: dict[int, list[float]] = {}
    for m, seed in progress_bar(jobs, desc="parties: runs", progress=ctx.progress):
        synth = ctx.run("secure", eps, seed, parties=m).synth
        score.setdefault(m, []).append(
            tvd(ctx.df, synth, ctx.spec, n_marginals=params["marginals"])
        )
    central = [
        tvd(ctx.df, ctx.run("central", eps, s).synth, ctx.spec, n_marginals=params["marginals"])
        for s in range(ctx.seeds)
    ]
    lines = [
        series("Secure", counts, [score[m] for m in counts]),
        series("Centralized PrivMRF", counts, [central] * len(counts)),
    ]
    panel = Panel(f"epsilon = {eps}", "parties", "mean 3-way TVD", lines)
    return FigureData(panels=[panel])
