"""Table: time and bytes per method and role (the paper's Table 5)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.report.context import METHODS, ReportContext
from vertimrf.report.registry import FigureData, register


@register(
    "cost",
    "The seconds of each method's run in one process (and of each phase the run timed) and "
    "the bytes each party sent, at one epsilon and the first seed.",
    tiny={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
    quick={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
    full={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
)
def cost_table(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """One row per method; the runs are the TVD figure's when it ran at this epsilon."""
    rows: list[list[Any]] = []
    for method in progress_bar(params["methods"], desc="cost: runs", progress=ctx.progress):
        run = ctx.run(method, params["epsilon"], 0)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in run.phases.items()) or "fit and sample"
        sent = ", ".join(f"{k} {v:,}" for k, v in run.message_bytes.items()) or "nothing"
        rows.append([METHODS[method], round(run.seconds, 2), phases, sent])
    table: dict[str, list[Any]] = {
        "columns": ["method", "seconds", "seconds per phase", "bytes sent per party"],
        "rows": rows,
    }
    notes = [
        f"epsilon = {params['epsilon']}, {len(ctx.df):,} rows, 2 parties; every role in one "
        "process, so the seconds share the machine's cores and include no network."
    ]
    return FigureData(table=table, notes=notes)
