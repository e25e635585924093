"""Run the registered figures and render REPORT.md, the PNGs and the JSON data."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any

from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FIGURES, LEVELS, Figure, FigureData

NOT_YET = """## Not in this report yet

- AIM beside MST in the TVD figure at the full level (`--quick` runs it, on NLTCS).
"""


def report_files(names: Sequence[str]) -> list[str]:
    """The file names the report writes for the figures ``names``."""
    files = ["REPORT.md"]
    for name in names:
        files.append(f"{name}.json")
        if FIGURES[name].plotted:
            files.append(f"{name}.png")
    return files


def build_report(ctx: ReportContext, level: str, names: Sequence[str]) -> dict[str, bytes]:
    """Compute the figures ``names`` (registry keys, in the registry's order) at ``level``;
    return every file of the report by name."""
    from vertimrf.report.plot import png, require_matplotlib

    require_matplotlib()
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    figures = [FIGURES[n] for n in FIGURES if n in names]
    for fig in figures:
        fig.check_needs()
    files: dict[str, bytes] = {}
    sections = []
    for fig in figures:
        params = dict(fig.params[level])
        start = time.perf_counter()
        data = fig.compute(ctx, params)
        seconds = time.perf_counter() - start
        record = _record(fig, params, data, ctx, seconds)
        files[f"{fig.name}.json"] = (json.dumps(record, indent=2) + "\n").encode("utf-8")
        if fig.plotted:
            files[f"{fig.name}.png"] = png(data.panels)
        sections.append(_section(fig, data, seconds))
    files["REPORT.md"] = _markdown(ctx, level, sections).encode("utf-8")
    return files


def _record(
    fig: Figure, params: dict[str, Any], data: FigureData, ctx: ReportContext, seconds: float
) -> dict[str, Any]:
    return {
        "figure": fig.name,
        "caption": fig.caption,
        "dataset": ctx.name,
        "rows": len(ctx.df),
        "delta": ctx.delta,
        "seeds": ctx.seeds,
        "params": params,
        "panels": [p.to_dict() for p in data.panels],
        "table": data.table,
        "notes": data.notes,
        "seconds": seconds,
    }


def _section(fig: Figure, data: FigureData, seconds: float) -> str:
    lines = [f"## {fig.name}", "", fig.caption, ""]
    if fig.plotted:
        lines += [f"![{fig.name}]({fig.name}.png)", ""]
    if data.table:
        cols = data.table["columns"]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in data.table["rows"]]
        lines.append("")
    lines += [f"- {note}" for note in data.notes]
    lines += [f"- Data: [{fig.name}.json]({fig.name}.json); computed in {seconds:.0f} s.", ""]
    return "\n".join(lines)


def _markdown(ctx: ReportContext, level: str, sections: list[str]) -> str:
    head = [
        "# vertimrf report",
        "",
        f"Made by `vertimrf report --{level}` on {ctx.name} ({len(ctx.df):,} rows, "
        f"{len(ctx.spec)} columns), delta = {ctx.delta:g} everywhere, {ctx.seeds} seed(s), "
        f"{os.cpu_count()} cores. Every run is seeded: reproducible noise, not for release. "
        "FM is the paper's sketch method and is NOT differentially private (dashed).",
        "",
    ]
    return "\n".join(head + sections + [NOT_YET])
