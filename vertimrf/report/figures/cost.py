"""Table: time and bytes per method and role (the paper's Table 5)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vertimrf.logs import progress_bar
from vertimrf.protocol import schedule
from vertimrf.report.context import METHODS, ReportContext
from vertimrf.report.registry import FigureData, register

# The steps the parties take (every other timed phase is the server's: its steps, the fit,
# the sampling); a phase "<party> <part>" is that party's part of its local step.
PARTY_STEPS = frozenset(
    v.name
    for v in vars(schedule).values()
    if isinstance(v, schedule.StepRule) and v.by == schedule.PARTIES
)


def _role(phase: str, parties: list[str]) -> tuple[str, str]:
    """A timed phase's role ("server", "parties" or a party's name) and its name in it."""
    head = phase.split(" ", 1)[0]
    if head in parties:
        return head, phase.split(" ", 1)[1]
    return ("parties" if phase in PARTY_STEPS else "server"), phase


def by_role(phases: Mapping[str, float], parties: list[str]) -> dict[str, str]:
    """The timed phases of a run, as text per role ("server", "parties" or a party's name)."""
    roles: dict[str, list[str]] = {}
    for phase, seconds in phases.items():
        role, rest = _role(phase, parties)
        roles.setdefault(role, []).append(f"{rest} {seconds:.2f}")
    return {role: ", ".join(items) for role, items in roles.items()}


@register(
    "cost",
    "The seconds of each method's run in one process, per role and phase, and the bytes "
    "each party sent, at one epsilon and the first seed.",
    tiny={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
    quick={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
    full={"epsilon": 1.6, "methods": list(METHODS), "plot": False},
)
def cost_table(ctx: ReportContext, params: Mapping[str, Any]) -> FigureData:
    """One row per method; the runs are the TVD figure's when it ran at this epsilon."""
    rows: list[list[Any]] = []
    for method in progress_bar(params["methods"], desc="cost: runs", progress=ctx.progress):
        run = ctx.run(method, params["epsilon"], 0)
        parties = list(run.message_bytes)
        roles = by_role(run.phases, parties) if run.phases else {"server": "fit and sample"}
        seconds = "; ".join(f"{role}: {text}" for role, text in roles.items())
        sent = ", ".join(f"{k} {v:,}" for k, v in run.message_bytes.items()) or "nothing"
        rows.append([METHODS[method], round(run.seconds, 2), seconds, sent])
    table: dict[str, list[Any]] = {
        "columns": ["method", "seconds", "seconds per role and phase", "bytes sent per party"],
        "rows": rows,
    }
    notes = [
        f"epsilon = {params['epsilon']}, {len(ctx.df):,} rows, 2 parties; every role runs in "
        "one process, one after another, so the seconds include no network. Centralized "
        "PrivMRF is one role that holds the whole table."
    ]
    return FigureData(table=table, notes=notes)
