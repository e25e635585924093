"""Figure: the budget split theta of the paper pipeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.metrics import tvd
from vertimrf.protocol.options import DEFAULTS
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FigureData, Panel, register, series


def split_shares(theta: float) -> dict[str, float]:
    """The paper pipeline's shares with theta of the local models' and the cross-party
    release's joint share going to the local models (the count and binning shares kept)."""
    base = DEFAULTS["shares"]
    joint = base["locmrf"] + base["locenc"]
    return {**base, "locmrf": theta * joint, "locenc": (1 - theta) * joint}


@register(
    "theta",
    "The mean 3-way TVD of the secure method's paper pipeline (local models, then secure "
    "cross-party estimates) as theta, the local models' part of the budget they share with "
    "the cross-party release, varies.",
    tiny={"epsilons": [1.6], "thetas": [0.3, 0.7], "marginals": 20},
    quick={"epsilons": [0.8], "thetas": [0.2, 0.4, 0.6, 0.8], "marginals": 100},
    full={"epsilons": [0.4, 1.6], "thetas": [0.2, 0.4, 0.6, 0.8], "marginals": 300},
)
def theta_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """The paper pipeline at each theta, epsilon and seed."""
    epsilons, thetas = params["epsilons"], params["thetas"]
    jobs = [(e, th, s) for e in epsilons for th in thetas for s in range(ctx.seeds)]
    score: dict[tuple[float, float], list[float]] = {}
    for eps, theta, seed in progress_bar(jobs, desc="theta: runs", progress=ctx.progress):
        synth = ctx.run(
            "secure", eps, seed, secure_pipeline="paper", shares=split_shares(theta)
        ).synth
        value = tvd(ctx.df, synth, ctx.spec, n_marginals=params["marginals"])
        score.setdefault((eps, theta), []).append(value)
    lines = [series(f"epsilon = {e}", thetas, [score[(e, th)] for th in thetas]) for e in epsilons]
    base = DEFAULTS["shares"]
    theta0 = base["locmrf"] / (base["locmrf"] + base["locenc"])
    notes = [f"The default split is theta = {theta0:.2f} (shares {dict(DEFAULTS['shares'])})."]
    panel = Panel("paper pipeline on secure estimates", "theta", "mean 3-way TVD", lines)
    return FigureData(panels=[panel], notes=notes)
