"""Run the registered figures and render REPORT.md, the PNGs and the JSON data; REPORT.md is
rendered from the figures' JSON records, so a report can have some figures made again
(:func:`kept_records`)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vertimrf.errors import ConfigError
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FIGURES, LEVELS

# What a kept figure must share with the report it joins.
SAME_RUN = ("dataset", "rows", "delta", "seeds", "level")

NOT_YET = """## Not in this report yet

- AIM. Run as its paper configures it (OpenDP's measurements on the exact domain, mbi's 1000
  mirror-descent iterations a fit, its rows drawn by our sampler), one run on Adult takes
  13-21 minutes on a core of 2 at epsilon 0.4-0.8 and longer at higher epsilon, so its 12
  runs (3 seeds at 4 epsilons) do not fit in one report run. They are made over several
  sessions and kept in the repository's run store, `benchmarks/results/baseline_runs`
  (`benchmarks/bench_engine.py --store` fills it); `--baselines mst,aim --cap 3600
  --baseline-store benchmarks/results/baseline_runs` draws AIM from it once the 12 are there.
  With 100 iterations a fit its fits stayed far from its own measurements (3-way TVD on Adult
  at epsilon 1.6 0.16, twice MST's), and through OpenDP's contingency table at its defaults
  (a null category in every column, half of rho on one-way marginals) it was not AIM as its
  paper runs it: neither is drawn.
"""


def report_files(names: Sequence[str]) -> list[str]:
    """The file names the report writes for the figures ``names``."""
    files = ["REPORT.md"]
    for name in names:
        files.append(f"{name}.json")
        if FIGURES[name].plotted:
            files.append(f"{name}.png")
    return files


def kept_records(
    out: Path, ctx: ReportContext, level: str, names: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The JSON records in ``out`` of the figures other than ``names``, each checked to come
    from a report on the same table, delta, seeds and level (ConfigError, one line, if not)."""
    kept = {}
    for name, fig in FIGURES.items():
        path = out / f"{name}.json"
        if name in names or not path.exists():
            continue
        record = json.loads(path.read_text(encoding="utf-8"))
        here = _same_run(ctx, level)
        other = {k: record.get(k) for k in SAME_RUN}
        if other != here or (fig.plotted and not (out / f"{name}.png").exists()):
            raise ConfigError(
                f"{path} is from another report ({other}, not {here}) or lacks its PNG: make "
                "the whole report again without --update."
            )
        kept[name] = record
    return kept


def build_report(
    ctx: ReportContext,
    level: str,
    names: Sequence[str],
    kept: dict[str, dict[str, Any]] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, bytes]:
    """Compute the figures ``names`` (registry keys, in the registry's order) at ``level``,
    each parameter in ``overrides`` replacing the level's where a figure has it; return their
    files and REPORT.md, whose sections are theirs and those of the ``kept`` records
    (:func:`kept_records`), in the registry's order."""
    from vertimrf.report.plot import png, require_matplotlib

    require_matplotlib()
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    figures = [FIGURES[n] for n in FIGURES if n in names]
    for fig in figures:
        fig.check_needs()
    files: dict[str, bytes] = {}
    records = dict(kept or {})
    for fig in figures:
        params = dict(fig.params[level])
        params |= {k: v for k, v in (overrides or {}).items() if k in params}
        start = time.perf_counter()
        data = fig.compute(ctx, params)
        seconds = time.perf_counter() - start
        records[fig.name] = {
            "figure": fig.name,
            "caption": fig.caption,
            **_same_run(ctx, level),
            "params": params,
            "panels": [p.to_dict() for p in data.panels],
            "table": data.table,
            "notes": data.notes,
            "seconds": seconds,
        }
        files[f"{fig.name}.json"] = (json.dumps(records[fig.name], indent=2) + "\n").encode()
        if fig.plotted:
            files[f"{fig.name}.png"] = png(data.panels)
    sections = [_section(records[n]) for n in FIGURES if n in records]
    files["REPORT.md"] = _markdown(ctx, level, sections + not_yet(records)).encode("utf-8")
    return files


def not_yet(records: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The section saying what the report does not draw yet: AIM, unless the TVD figure of
    ``records`` (figure name to JSON record) ran it as a baseline."""
    tvd = records.get("tvd")
    if tvd is not None and "aim" in tvd["params"].get("baselines", []):
        return []
    return [NOT_YET]


def _same_run(ctx: ReportContext, level: str) -> dict[str, Any]:
    """The fields of a figure's record that a kept one must share (:data:`SAME_RUN`)."""
    return dict(zip(SAME_RUN, (ctx.name, len(ctx.df), ctx.delta, ctx.seeds, level), strict=True))


def _section(record: dict[str, Any]) -> str:
    name = record["figure"]
    lines = [f"## {name}", "", record["caption"], ""]
    if FIGURES[name].plotted:
        lines += [f"![{name}]({name}.png)", ""]
    table = record["table"]
    if table:
        cols = table["columns"]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table["rows"]]
        lines.append("")
    lines += [f"- {note}" for note in record["notes"]]
    seconds = record["seconds"]
    lines += [f"- Data: [{name}.json]({name}.json); computed in {seconds:.0f} s.", ""]
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
    return "\n".join(head + sections)
