"""Figure: the secure method's seconds and bytes per role against the number of rows, every
role its own OS process as in a deployment (:mod:`vertimrf.report.role_processes`),
measured at sizes a report can afford (1M, 3M and 10M rows at the full level) and projected
linearly to the sizes of 10M and 100M rows above them."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vertimrf.logs import progress_bar
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.plan import run_plan
from vertimrf.report.context import ReportContext
from vertimrf.report.registry import FigureData, Panel, register
from vertimrf.report.role_processes import SERVER, ProcessCost, run_roles

PROJECTED = [10_000_000, 100_000_000]
SAMPLE_SEED = 7  # the resampling of the table: every level sees the same rows
WARMUP_ROWS = 3_000  # a first, unmeasured run compiles (or loads) the Numba kernels
MB = 1 << 20


@register(
    "scaling",
    "The secure method's wall and CPU seconds and bytes sent per role against the number of "
    "rows, the server and each party its own process exchanging files as in a deployment, "
    "measured on the table resampled to each size and projected by a straight line through "
    "the measured points to 10M and 100M rows, where not measured (dashed).",
    tiny={"epsilon": 1.6, "rows": [3_000, 6_000], "warmup": False, "timeout": 600},
    quick={"epsilon": 1.6, "rows": [50_000, 200_000], "warmup": True, "timeout": 600},
    full={
        "epsilon": 1.6,
        "rows": [1_000_000, 3_000_000, 10_000_000],
        "warmup": True,
        "timeout": 3600,
    },
)
def scaling_figure(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """One secure run per size (seed 0), two parties and the server each a process; a
    least-squares line per role and quantity."""
    sizes = list(params["rows"])
    parties = dict(zip("AB", ctx.parties(2), strict=True))
    rng = np.random.default_rng(SAMPLE_SEED)
    costs: list[dict[str, ProcessCost]] = []
    models: list[dict[str, float]] = []  # the plan's memory model per role
    runs = ([WARMUP_ROWS] if params["warmup"] else []) + sizes
    for i, n in enumerate(progress_bar(runs, desc="scaling: runs", progress=ctx.progress)):
        df = ctx.df.iloc[rng.integers(0, len(ctx.df), n)].reset_index(drop=True)
        config = from_preset(
            "default", epsilon=params["epsilon"], delta=ctx.delta, spec=ctx.spec,
            parties=list(parties.items()), method="secure", max_rows=1 << (n - 1).bit_length(),
        )  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="vertimrf-scaling-") as tmp:
            cost = run_roles(Path(tmp), df, config, rng, seed=0, timeout=params["timeout"])
        del df
        if i >= len(runs) - len(sizes):
            costs.append(cost)
            models.append({r.role: r.peak for r in run_plan(config).roles})
    roles = [*parties, SERVER]
    beyond = [n for n in PROJECTED if n > max(sizes)]
    every = sizes + beyond

    def lines(quantity: str) -> list[dict[str, Any]]:
        out = []
        for role in roles:
            y = [float(getattr(c[role], quantity)) for c in costs]
            label = role if role == SERVER else f"party {role}"
            out.append(_points(f"{label}, measured", sizes, y, False))
            out.append(
                _points(f"{label}, projected", every, y + linear_projection(sizes, y, beyond), True)
            )
        return out

    panels = [
        Panel(title, "rows", f"{unit} (log scale)", lines(quantity), xlog=True, ylog=True)
        for title, unit, quantity in (
            ("wall seconds", "seconds", "seconds"),
            ("CPU seconds", "seconds", "cpu_seconds"),
            ("bytes sent", "bytes", "sent_bytes"),
        )
    ]
    peaks = "; ".join(
        f"{n:,} rows "
        + " / ".join(f"{c[r].peak_bytes / MB:,.0f} ({m[r] / MB:,.0f})" for r in roles)
        for n, c, m in zip(sizes, costs, models, strict=True)
    )
    notes = [
        f"epsilon = {params['epsilon']}, delta = {ctx.delta:g}, 2 parties ("
        + ", ".join(f"{p}: {len(c)} columns" for p, c in parties.items())
        + "), "
        f"seed 0, max_rows the next power of two; the table is resampled with replacement to "
        f"{', '.join(f'{n:,}' for n in sizes)} rows. `vertimrf server run` and one `vertimrf "
        "party run` per party, started at once, each its own process exchanging message files "
        "(--inbox/--outbox): a party's wall seconds include its waits for the others, its CPU "
        "seconds do not; bytes sent are the sizes of the message files a role wrote. "
        f"{os.cpu_count()} cores, shared with the runs' other roles (and any other work).",
        f"Peak RSS (MB) of {' / '.join(roles)}, each process's own (wait4), with the memory "
        f"model's estimate (`vertimrf config`) in brackets: {peaks}.",
        f"The points at {' and '.join(f'{n:,}' for n in beyond)} rows are PROJECTED, not "
        "measured: a straight line (least squares) through the measured sizes, so it ignores "
        "effects that only appear at scale (a wider ring for the counts, memory)."
        if beyond
        else "No size is projected: every point is measured.",
    ]
    if beyond:
        notes.append(
            f"Projected at {' / '.join(f'{n:,}' for n in beyond)} rows: "
            + "; ".join(
                f"{role} "
                + ", ".join(
                    f"{what} "
                    + " / ".join(f"{v:,.0f}" for v in linear_projection(sizes, y, beyond))
                    for what, y in (
                        ("wall s", [c[role].seconds for c in costs]),
                        ("CPU s", [c[role].cpu_seconds for c in costs]),
                        ("MB sent", [c[role].sent_bytes / MB for c in costs]),
                    )
                )
                for role in roles
            )
            + "."
        )
    return FigureData(panels=panels, notes=notes)


def linear_projection(x: list[int], y: list[float], at: list[int]) -> list[float]:
    """The least-squares line through (x, y) at ``at``, never below the largest measured y
    (more rows never take less; at tiny sizes fixed costs can make the slope negative)."""
    slope, intercept = np.polyfit(np.asarray(x, float), np.asarray(y, float), 1)
    return [max(max(y), float(slope * a + intercept)) for a in at]


def _points(label: str, x: list[int], y: list[float], dashed: bool) -> dict[str, Any]:
    return {"label": label, "x": x, "mean": y, "err": [0.0] * len(y), "dashed": dashed}
