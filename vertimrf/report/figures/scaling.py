"""Figure: the secure method's time and bytes against the number of rows, measured at sizes
a report can afford (1M and 10M rows at the full level) and projected linearly to the sizes of
10M and 100M rows above them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vertimrf.logs import progress_bar
from vertimrf.report.context import ReportContext
from vertimrf.report.figures.cost import by_phase_role
from vertimrf.report.registry import FigureData, Panel, register

PROJECTED = [10_000_000, 100_000_000]
MEASURED_10M = "benchmarks/results/bench_scaling.md"  # in the repository, outside the docs
SAMPLE_SEED = 7  # the resampling of the table: every level sees the same rows


@register(
    "scaling",
    "The secure method's seconds (all parties, and the server) and bytes sent against the "
    "number of rows, measured on the table resampled to each size and projected by a "
    "straight line through the measured points to 10M and 100M rows, where not measured "
    "(dashed).",
    tiny={"epsilon": 1.6, "rows": [3_000, 6_000]},
    quick={"epsilon": 1.6, "rows": [50_000, 200_000]},
    full={"epsilon": 1.6, "rows": [1_000_000, 10_000_000]},
)
def scaling_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """One secure run per size (seed 0); a least-squares line per quantity."""
    sizes = list(params["rows"])
    rng = np.random.default_rng(SAMPLE_SEED)
    measured: dict[str, list[float]] = {"parties": [], "server": [], "bytes": []}
    for n in progress_bar(sizes, desc="scaling: runs", progress=ctx.progress):
        df = ctx.df.iloc[rng.integers(0, len(ctx.df), n)].reset_index(drop=True)
        # The public max_rows (simulate's default is 65,536): the next power of two.
        run = ctx.run("secure", params["epsilon"], 0, df=df, max_rows=1 << (n - 1).bit_length())
        roles = by_phase_role(run.phases, list(run.message_bytes))
        measured["parties"].append(sum(s for r, s in roles.items() if r != "server"))
        measured["server"].append(roles.get("server", 0.0))
        measured["bytes"].append(float(sum(run.message_bytes.values())))
    beyond = [n for n in PROJECTED if n > max(sizes)]
    projected = {k: linear_projection(sizes, v, beyond) for k, v in measured.items()}
    every = sizes + beyond

    def lines(keys: list[tuple[str, str]]) -> list[dict[str, Any]]:
        out = []
        for key, label in keys:
            out.append(_points(f"{label}, measured", sizes, measured[key], False))
            out.append(_points(f"{label}, projected", every, measured[key] + projected[key], True))
        return out

    panels = [
        Panel(
            "seconds",
            "rows",
            "seconds (log scale)",
            lines([("parties", "all parties"), ("server", "server")]),
            xlog=True,
            ylog=True,
        ),
        Panel(
            "bytes sent by the parties",
            "rows",
            "bytes (log scale)",
            lines([("bytes", "bytes")]),
            xlog=True,
            ylog=True,
        ),
    ]
    notes = [
        f"epsilon = {params['epsilon']}, 2 parties, seed 0, every role in one process; the "
        f"table is resampled with replacement to {', '.join(f'{n:,}' for n in sizes)} rows. "
        f"The points at {' and '.join(f'{n:,}' for n in beyond)} rows are PROJECTED, not "
        "measured: a straight line (least squares) through the measured sizes, so it ignores "
        "effects that only appear at scale (a wider ring for the counts, memory). A measured "
        f"10M-row run with 3 parties, one process per role, is in the repository's "
        f"`{MEASURED_10M}`.",
        f"Projected at {' / '.join(f'{n:,}' for n in beyond)} rows: "
        + "; ".join(
            f"{k} "
            + " / ".join(f"{v:,.0f}" for v in projected[k])
            + (" B" if k == "bytes" else " s")
            for k in measured
        )
        + ".",
    ]
    return FigureData(panels=panels, notes=notes)


def linear_projection(x: list[int], y: list[float], at: list[int]) -> list[float]:
    """The least-squares line through (x, y) at ``at``, never below the largest measured y
    (more rows never take less; at tiny sizes fixed costs can make the slope negative)."""
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return [max(max(y), float(slope * a + intercept)) for a in at]


def _points(label: str, x: list[int], y: list[float], dashed: bool) -> dict[str, Any]:
    return {"label": label, "x": x, "mean": y, "err": [0.0] * len(y), "dashed": dashed}
