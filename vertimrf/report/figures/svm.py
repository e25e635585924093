"""Figure: SVM misclassification against epsilon (leak-free folds)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.logs import progress_bar
from vertimrf.report.context import DASHED, METHODS, ReportContext
from vertimrf.report.registry import FigureData, Panel, register, series


@register(
    "svm",
    "The misclassification rate of an RBF SVM trained on each method's synthetic rows and "
    "tested on held-out real rows (the spec's last column as the label; lower is better), "
    "against epsilon.",
    needs={"sklearn": 'pip install "vertimrf[eval]"'},
    tiny={"epsilons": [1.6], "rows": 600, "folds": 2, "methods": ["secure", "central"]},
    quick={
        "epsilons": [0.4, 3.2],
        "rows": 2000,
        "folds": 2,
        "methods": ["secure", "central", "fo"],
    },
    full={"epsilons": [0.4, 0.8, 1.6, 3.2], "rows": 3000, "folds": 3, "methods": list(METHODS)},
)
def svm_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """Each method synthesizes from the training folds of a subsample of the real rows; the
    secure method's public ``max_rows`` is the largest training set, a function of the
    figure's rows and folds (its default, 65,536, would misjudge its budget split)."""
    from vertimrf.metrics import svm_misclassification

    epsilons, methods = params["epsilons"], params["methods"]
    rows = min(params["rows"], len(ctx.df))
    bound = training_rows(rows, params["folds"])
    real = ctx.df.sample(n=rows, random_state=np.random.default_rng(0)).reset_index(drop=True)
    jobs = [(m, e, s) for m in methods for e in epsilons for s in range(ctx.seeds)]
    rates: dict[tuple[str, float], list[float]] = {}
    for method, eps, seed in progress_bar(jobs, desc="svm: runs", progress=ctx.progress):
        result = svm_misclassification(
            real,
            _synthesizer(ctx, method, eps, seed, bound),
            ctx.spec,
            ctx.label,
            folds=params["folds"],
            seed=seed,
        )
        rates.setdefault((method, eps), []).append(result.mean)
    lines = [
        series(METHODS[m], epsilons, [rates[(m, e)] for e in epsilons], m in DASHED)
        for m in methods
    ]
    notes = [
        f"{rows} real rows drawn once, {params['folds']} folds; label column {ctx.label!r}; "
        f"the secure method's max_rows is {bound:,}, the largest training set."
    ]
    panel = Panel(
        f"SVM predicting {ctx.label}", "epsilon", "misclassification rate", lines, xlog=True
    )
    return FigureData(panels=[panel], notes=notes)


def training_rows(rows: int, folds: int) -> int:
    """The most rows a training set of ``folds`` folds of ``rows`` rows holds: all but the
    smallest fold (``numpy.array_split``'s sizes, as :func:`~vertimrf.metrics.svm_misclassification`
    cuts them)."""
    return rows - rows // folds


def _synthesizer(
    ctx: ReportContext, method: str, epsilon: float, seed: int, bound: int
) -> Callable[[pd.DataFrame], pd.DataFrame]:
    """The synthetic table of ``method`` fitted on a fold's training rows (at most
    ``bound``, the secure method's max_rows)."""
    overrides = {"max_rows": bound} if method == "secure" else {}

    def synthesize(train: pd.DataFrame) -> pd.DataFrame:
        return ctx.run(method, epsilon, seed, df=train, **overrides).synth

    return synthesize
