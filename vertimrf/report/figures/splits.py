"""Table: the secure method under VertiBench's attribute splits (the paper's Table 4)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vertimrf.logs import progress_bar
from vertimrf.metrics import tvd
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FigureData, register
from vertimrf.report.splits import correlation_split, importance_split

SPLIT_SEED = 20230  # the splits' own seed: every level and seed of a run sees the same split


SETTINGS = {"epsilon": 1.6, "alphas": [0.1, 1.0, 10.0], "betas": [0.0, 0.5, 1.0], "plot": False}


@register(
    "splits",
    "The secure method's mean 3-way TVD when the columns are split over 2 parties by "
    "VertiBench's importance rule (Dirichlet alpha) and correlation rule (beta), beside the "
    "contiguous halves the other figures use, at one epsilon.",
    tiny={"epsilon": 1.6, "alphas": [1.0], "betas": [0.0], "marginals": 20, "plot": False},
    quick=SETTINGS | {"marginals": 100},
    full=SETTINGS | {"marginals": 300},
)
def splits_table(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """One row per split: its rule, its parameter, the columns per party and the TVD."""
    names = list(ctx.spec.names)
    rng = np.random.default_rng(SPLIT_SEED)
    splits: list[tuple[str, str, list[list[str]]]] = [("contiguous", "-", ctx.parties(2))]
    splits += [
        ("importance", f"alpha {a:g}", importance_split(names, 2, a, rng)) for a in params["alphas"]
    ]
    splits += [
        ("correlation", f"beta {b:g}", correlation_split(ctx.df[names], 2, b, rng))
        for b in params["betas"]
    ]
    jobs = [(i, s) for i in range(len(splits)) for s in range(ctx.seeds)]
    scores: dict[int, list[float]] = {}
    for i, seed in progress_bar(jobs, desc="splits: runs", progress=ctx.progress):
        synth = ctx.run("secure", params["epsilon"], seed, parties=splits[i][2]).synth
        scores.setdefault(i, []).append(
            tvd(ctx.df, synth, ctx.spec, n_marginals=params["marginals"])
        )
    rows = [
        [
            rule,
            parameter,
            " / ".join(", ".join(g) for g in groups),
            round(float(np.mean(scores[i])), 5),
            round(float(np.std(scores[i], ddof=1)) if len(scores[i]) > 1 else 0.0, 5),
        ]
        for i, (rule, parameter, groups) in enumerate(splits)
    ]
    table: dict[str, list[Any]] = {
        "columns": ["split", "parameter", "party 1 / party 2", "mean 3-way TVD", "sd over seeds"],
        "rows": rows,
    }
    notes = [
        f"epsilon = {params['epsilon']}, 2 parties, {ctx.seeds} seed(s); the splits are drawn "
        f"once with seed {SPLIT_SEED}. The rules are VertiBench's (Wu et al. 2023) as "
        "vertimrf.report.splits implements them: the vertibench package needs torch, shap and "
        "pymoo, and its correlation split's genetic search is a local search of swaps here."
    ]
    return FigureData(table=table, notes=notes)
