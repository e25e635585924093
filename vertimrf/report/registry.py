"""The registry of report figures: each one a name, a sentence, its parameters per level and
the function that computes its data."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vertimrf.errors import ConfigError

if TYPE_CHECKING:
    from vertimrf.report.context import ReportContext

# tiny: the tests' smallest run; quick: minutes on 2 cores; full: the committed report.
LEVELS = ("tiny", "quick", "full")


@dataclass(frozen=True)
class Panel:
    """One plot: a line per series against x (``kind="line"``) or grouped bars
    (``kind="bar"``, x holding the group labels)."""

    title: str
    xlabel: str
    ylabel: str
    series: list[dict[str, Any]]
    kind: str = "line"
    xlog: bool = False
    ylog: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The panel as JSON-ready data."""
        keys = ("title", "xlabel", "ylabel", "kind", "xlog", "ylog", "series")
        return {key: getattr(self, key) for key in keys}


def series(
    label: str, x: Sequence[Any], samples: Sequence[Sequence[float]], dashed: bool = False
) -> dict[str, Any]:
    """A plotted series: at each x the mean of its samples (over seeds) and their standard
    deviation as the error bar (0 for one sample)."""
    arrays = [np.asarray(s, dtype=float) for s in samples]
    return {
        "label": label,
        "x": list(x),
        "mean": [float(a.mean()) for a in arrays],
        "err": [float(a.std(ddof=1)) if a.size > 1 else 0.0 for a in arrays],
        "dashed": dashed,
    }


@dataclass
class FigureData:
    """What a figure computed: panels to plot, or a table for REPORT.md, and notes."""

    panels: list[Panel] = field(default_factory=list)
    table: dict[str, list] | None = None  # {"columns": [...], "rows": [[...], ...]}
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Figure:
    """A report figure: ``compute(context, params)`` returns its data at the parameters of
    a level (:data:`LEVELS`); ``caption`` says in one sentence what it shows; ``needs``
    maps each module it imports beyond the package's dependencies to how to install it."""

    name: str
    caption: str
    params: Mapping[str, Mapping[str, Any]]
    compute: Callable[[ReportContext, Mapping[str, Any]], FigureData]
    needs: Mapping[str, str] = field(default_factory=dict)

    def check_needs(self) -> None:
        """Raise a one-line :class:`ConfigError` for a module it needs that is missing."""
        for module, install in self.needs.items():
            try:
                importlib.import_module(module)
            except ImportError:
                raise ConfigError(
                    f"the {self.name} figure needs {module}: {install}, or leave it out with "
                    "--figures."
                ) from None

    @property
    def plotted(self) -> bool:
        """False for a figure that is a table in REPORT.md only."""
        return self.params["tiny"].get("plot", True)


FIGURES: dict[str, Figure] = {}


def register(
    name: str, caption: str, needs: Mapping[str, str] | None = None, **params: Mapping[str, Any]
) -> Callable[[Callable[[ReportContext, Mapping[str, Any]], FigureData]], Figure]:
    """Register the decorated function as the figure ``name``, with one parameter mapping
    per level (keywords ``tiny``, ``quick`` and ``full``) and the optional modules it
    ``needs``. The report draws the figures in the order they were registered."""
    if set(params) != set(LEVELS):
        raise ValueError(f"figure {name!r} needs parameters for every level {LEVELS}")

    def add(compute: Callable[[ReportContext, Mapping[str, Any]], FigureData]) -> Figure:
        figure = Figure(name, caption, params, compute, dict(needs or {}))
        FIGURES[name] = figure
        return figure

    return add
