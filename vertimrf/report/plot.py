"""PNG figures from a figure's panels (matplotlib, the ``report`` extra)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import numpy as np

from vertimrf.errors import ConfigError

if TYPE_CHECKING:
    from vertimrf.report.registry import Panel

INSTALL = 'the report\'s figures need matplotlib: pip install "vertimrf[report]"'


def require_matplotlib() -> None:
    """Raise a one-line :class:`ConfigError` saying how to install matplotlib when it is
    missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(f"{INSTALL}.") from None


def png(panels: list[Panel]) -> bytes:
    """One PNG with the panels side by side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    try:
        for ax, panel in zip(axes[0], panels, strict=True):
            (_bars if panel.kind == "bar" else _lines)(ax, panel)
            ax.set_title(panel.title)
            ax.set_xlabel(panel.xlabel)
            ax.set_ylabel(panel.ylabel)
            ax.grid(alpha=0.3)
        axes[0][-1].legend(fontsize="small")
        fig.tight_layout()
        out = io.BytesIO()
        fig.savefig(out, format="png", dpi=110, metadata={"Software": None})
        return out.getvalue()
    finally:
        plt.close(fig)


def _lines(ax: Any, panel: Panel) -> None:
    for s in panel.series:
        ax.errorbar(
            s["x"],
            s["mean"],
            yerr=s["err"],
            label=s["label"],
            linestyle="--" if s["dashed"] else "-",
            marker="o",
            capsize=3,
        )
    if panel.ylog:
        ax.set_yscale("log")
    if panel.xlog:
        ax.set_xscale("log", base=2)
        ticks = sorted({x for s in panel.series for x in s["x"]})
        ax.set_xticks(ticks, [f"{x:g}" for x in ticks])


def _bars(ax: Any, panel: Panel) -> None:
    groups = panel.series[0]["x"]
    width = 0.8 / len(panel.series)
    for i, s in enumerate(panel.series):
        pos = np.arange(len(groups)) + (i - (len(panel.series) - 1) / 2) * width
        ax.bar(pos, s["mean"], width, yerr=s["err"], label=s["label"], capsize=3)
    ax.set_xticks(np.arange(len(groups)), groups)
