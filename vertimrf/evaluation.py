"""What ``vertimrf evaluate`` shows: tables, figures, a markdown page and
sdmetrics' QualityReport; design notes in docs/design/core.md."""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vertimrf.domain import CATEGORICAL, DATETIME, NUMERIC, ColumnSpec, DomainSpec
from vertimrf.errors import ConfigError
from vertimrf.metrics import (
    ColumnDistance,
    PairTrend,
    column_distances,
    column_values,
    pair_trends,
    pair_tvd,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

MATPLOTLIB = 'evaluate --report draws its figures with matplotlib: pip install "vertimrf[report]"'
SDMETRICS = (
    "evaluate --sdmetrics needs the sdmetrics package, which is not installed: "
    'pip install "vertimrf[quality]", or leave out --sdmetrics'
)
HEATMAP = "pair-trends.png"
REPORT = "report.md"
SDMETRICS_FILES = {
    "Column Shapes": "sdmetrics-column-shapes.csv",
    "Column Pair Trends": "sdmetrics-column-pair-trends.csv",
}
# A categorical column's figure shows at most this many values, the most common first.
_MOST_BARS = 30
# A numeric column's histogram has this many bins (fewer for few distinct integers).
_HIST_BINS = 40
# The heatmap prints each cell's value up to this many columns.
_ANNOTATE = 12
_METRIC = {"ks": "KS", "tvd": "TVD"}
_TREND = {"correlation": "correlation", "cramers_v": "Cramér's V"}
COLUMNS_NOTE = "KS distance of the values for numbers and times, 1-way TVD otherwise"
PAIRS_NOTE = "2-way TVD"


@dataclass(frozen=True)
class Evaluation:
    """A synthetic table measured against the real one: each column's distance, each
    pair's 2-way TVD and each pair's trend in both tables (keys in the spec's order)."""

    columns: dict[str, ColumnDistance]
    pairs: dict[tuple[str, str], float]
    trends: dict[tuple[str, str], PairTrend]

    def worst_columns(self, k: int | None = None) -> list[ColumnDistance]:
        """The ``k`` columns of largest distance (all without ``k``), worst first."""
        ranked = sorted(self.columns.values(), key=lambda c: (-c.distance, c.column))
        return ranked if k is None else ranked[:k]

    def worst_pairs(self, k: int | None = None) -> list[tuple[tuple[str, str], float]]:
        """The ``k`` pairs of largest 2-way TVD (all without ``k``), worst first."""
        ranked = sorted(self.pairs.items(), key=lambda p: (-p[1], p[0]))
        return ranked if k is None else ranked[:k]


def evaluate(real: pd.DataFrame, synth: pd.DataFrame, spec: DomainSpec) -> Evaluation:
    """Measure ``synth`` against ``real`` (frames with the spec's columns)."""
    return Evaluation(
        column_distances(real, synth, spec),
        pair_tvd(real, synth, spec),
        pair_trends(real, synth, spec),
    )


def text_table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[str] = ()
) -> list[str]:
    """Lines of a plain-text table, indented by two spaces: one header line, then the rows;
    the columns named in ``right`` (numbers) are aligned right, the others left."""
    cells = [list(header), *(list(r) for r in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    flush = [h in right for h in header]
    return [
        "  "
        + "  ".join(
            c.rjust(w) if r else c.ljust(w) for c, w, r in zip(row, widths, flush, strict=True)
        ).rstrip()
        for row in cells
    ]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Lines of a markdown table (a ``|`` in a cell is escaped)."""
    line = lambda cells: "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"  # noqa: E731
    return [line(header), line(["---"] * len(header)), *(line(r) for r in rows)]


def column_rows(columns: Sequence[ColumnDistance]) -> list[list[str]]:
    """The cells of the columns' table: column, type, metric, distance."""
    return [[c.column, c.kind, _METRIC[c.metric], f"{c.distance:.4f}"] for c in columns]


COLUMN_HEADER = ("column", "type", "metric", "distance")


def column_lines(evaluation: Evaluation, k: int) -> list[str]:
    """The table of the ``k`` worst columns, with a title line (none when ``k`` is 0)."""
    if k == 0:
        return []
    worst = evaluation.worst_columns(k)
    title = f"Columns, worst first ({len(worst)} of {len(evaluation.columns)}; {COLUMNS_NOTE}):"
    return [title, *text_table(COLUMN_HEADER, column_rows(worst), right=("distance",))]


def pair_lines(evaluation: Evaluation, k: int) -> list[str]:
    """The table of the ``k`` worst column pairs, with a title line (none when ``k`` is 0
    or the table has one column)."""
    if k == 0 or not evaluation.pairs:
        return []
    worst = evaluation.worst_pairs(k)
    title = f"Column pairs, worst first ({len(worst)} of {len(evaluation.pairs)}; {PAIRS_NOTE}):"
    rows = [[u, v, f"{value:.4f}"] for (u, v), value in worst]
    return [title, *text_table(("column 1", "column 2", "tvd2"), rows, right=("tvd2",))]


# ------------------------------------------------------------------ sdmetrics


@dataclass(frozen=True)
class Quality:
    """The scores of sdmetrics' QualityReport (NaN where sdmetrics gives none) and its
    details, one table per property."""

    column_shapes: float
    column_pair_trends: float
    overall: float
    details: dict[str, pd.DataFrame]

    def line(self) -> str:
        """The scores in one line."""
        pairs = _score(self.column_pair_trends)
        if math.isnan(self.column_pair_trends):
            pairs += " (sdmetrics scores only the pairs strongly associated in the real table)"
        return (
            f"sdmetrics QualityReport: Column Shapes {_score(self.column_shapes)}, "
            f"Column Pair Trends {pairs}; overall {_score(self.overall)}"
        )


def _score(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"


def require_sdmetrics() -> None:
    """A one-line :class:`ConfigError` saying how to install sdmetrics when it is missing."""
    try:
        import sdmetrics  # noqa: F401
    except ImportError:
        raise ConfigError(f"{SDMETRICS}.") from None


def sdmetrics_metadata(spec: DomainSpec) -> dict[str, Any]:
    """sdmetrics' single-table metadata for ``spec``: a numeric column is ``numerical``, a
    datetime column ``datetime`` in its format, any other ``categorical``."""
    columns: dict[str, dict[str, str]] = {}
    for c in spec.columns:
        if c.kind == NUMERIC:
            columns[c.name] = {"sdtype": "numerical"}
        elif c.kind == DATETIME and c.time is not None:
            columns[c.name] = {"sdtype": "datetime", "datetime_format": c.time.format}
        else:
            columns[c.name] = {"sdtype": "categorical"}
    return {"columns": columns}


def sdmetrics_quality(real: pd.DataFrame, synth: pd.DataFrame, spec: DomainSpec) -> Quality:
    """sdmetrics' single-table QualityReport (Column Shapes, Column Pair Trends) of
    ``synth`` against ``real``, with metadata from ``spec`` (:func:`sdmetrics_metadata`)."""
    require_sdmetrics()
    names = list(spec.names)
    metadata = sdmetrics_metadata(spec)
    with warnings.catch_warnings():  # its deprecation and data warnings are not the user's
        warnings.simplefilter("ignore")
        try:
            from sdmetrics.reports.single_table import QualityReport

            data: tuple[Any, Any, Any] = (real[names], synth[names], metadata)
        except ImportError:  # a release without the single-table module: the unified one
            from sdmetrics.reports import QualityReport

            data = (
                {"table": real[names]},
                {"table": synth[names]},
                {"tables": {"table": metadata}},
            )
        report = QualityReport()
        try:
            report.generate(*data, verbose=False)
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(
                f"sdmetrics' QualityReport refused the tables: {_first_line(exc)}; evaluate "
                "without --sdmetrics, or check the tables against the spec."
            ) from None
        scores = report.get_properties().set_index("Property")["Score"]
        details = {p: _details(report, p) for p in SDMETRICS_FILES}
        overall = float(report.get_score())
    return Quality(
        float(scores.get("Column Shapes", math.nan)),
        float(scores.get("Column Pair Trends", math.nan)),
        overall,
        details,
    )


def _details(report: Any, prop: str) -> pd.DataFrame:
    try:
        return report.get_details(prop)
    except (ValueError, TypeError):  # the unified report asks for the table
        return report.get_details(prop, table_name="table")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0].rstrip(".") if text else type(exc).__name__


# ------------------------------------------------------------------ the report folder


def require_matplotlib() -> None:
    """A one-line :class:`ConfigError` saying how to install matplotlib when it is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ConfigError(f"{MATPLOTLIB}.") from None


def figure_names(spec: DomainSpec) -> dict[str, str]:
    """The PNG file of each column, numbered in the spec's order (column names may hold
    any character; file names hold letters, digits, ``_``, ``.`` and ``-``)."""
    width = len(str(len(spec)))
    names = {}
    for i, name in enumerate(spec.names, start=1):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "column"
        names[name] = f"column-{i:0{width}d}-{slug}.png"
    return names


def report_names(spec: DomainSpec, quality: bool) -> list[str]:
    """Every file a report over ``spec`` writes (with sdmetrics' details when ``quality``)."""
    extra = list(SDMETRICS_FILES.values()) if quality else []
    return [REPORT, *figure_names(spec).values(), HEATMAP, *extra]


def report_files(
    evaluation: Evaluation,
    real: pd.DataFrame,
    synth: pd.DataFrame,
    spec: DomainSpec,
    *,
    averages: Mapping[str, float],
    worst: int,
    sources: tuple[str, str] = ("real", "synthetic"),
    quality: Quality | None = None,
) -> dict[str, bytes]:
    """The report's files by name (:func:`report_names`): a PNG per column, the pair-trend
    heatmap, sdmetrics' details as CSV (with ``quality``) and ``report.md``, which links them
    with the tables (every column; the ``worst`` worst pairs) and the ``averages``.
    ``sources`` name the two tables."""
    require_matplotlib()
    a, b = real[list(spec.names)], synth[list(spec.names)]
    names = figure_names(spec)
    files = {names[c.name]: column_png(c, a, b, evaluation.columns[c.name]) for c in spec.columns}
    files[HEATMAP] = heatmap_png(evaluation, list(spec.names))
    if quality is not None:
        for prop, file in SDMETRICS_FILES.items():
            files[file] = quality.details[prop].to_csv(index=False).encode("utf-8")
    text = _markdown(evaluation, spec, (len(a), len(b)), averages, worst, sources, quality)
    return {REPORT: text.encode("utf-8"), **files}


def _markdown(
    evaluation: Evaluation,
    spec: DomainSpec,
    rows: tuple[int, int],
    averages: Mapping[str, float],
    worst: int,
    sources: tuple[str, str],
    quality: Quality | None,
) -> str:
    names = figure_names(spec)
    out = [
        "# A synthetic table against the real one",
        "",
        f"- real: `{sources[0]}`, {rows[0]:,} rows",
        f"- synthetic: `{sources[1]}`, {rows[1]:,} rows",
    ]
    if averages:
        out.append("- averages: " + ", ".join(f"{k} {v:.4f}" for k, v in averages.items()))
    out += [
        "",
        "## Columns, worst first",
        "",
        f"Distance: {COLUMNS_NOTE}; 0 is a perfect match.",
        "",
    ]
    ranked = evaluation.worst_columns()
    cells = column_rows(ranked)
    links = [f"[{names[c.column]}]({names[c.column]})" for c in ranked]
    out += markdown_table(
        (*COLUMN_HEADER, "figure"),
        [[_md(r[0]), *r[1:], f] for r, f in zip(cells, links, strict=True)],
    )
    shown = evaluation.worst_pairs(worst)
    out += ["", f"## Column pairs, worst first ({len(shown)} of {len(evaluation.pairs)})", ""]
    if shown:
        out += [
            f"{PAIRS_NOTE} of each pair, and how the pair moves together in each table "
            "(Pearson's correlation of two numeric columns, Cramér's V otherwise).",
            "",
        ]
        pair_rows = []
        for (u, v), value in shown:
            t = evaluation.trends[(u, v)]
            pair_rows.append(
                [_md(u), _md(v), f"{value:.4f}", _TREND[t.metric], f"{t.real:.3f}",
                 f"{t.synth:.3f}", f"{t.difference:.3f}"]
            )  # fmt: skip
        header = ("column 1", "column 2", "tvd2", "trend", "real", "synthetic", "difference")
        out += [*markdown_table(header, pair_rows), ""]
    out.append(f"![Pair trends, real against synthetic]({HEATMAP})")
    if quality is not None:
        out += ["", "## sdmetrics QualityReport", ""]
        out += markdown_table(
            ("property", "score"),
            [["Column Shapes", _score(quality.column_shapes)],
             ["Column Pair Trends", _score(quality.column_pair_trends)]],
        )  # fmt: skip
        out += ["", "Details: " + ", ".join(f"[{f}]({f})" for f in SDMETRICS_FILES.values())]
    out += ["", "## Figures"]
    for name in spec.names:
        out += ["", f"### {_md(name)}", "", f"![{_md(name)}]({names[name]})"]
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """``text`` with markdown's link, code and emphasis characters escaped."""
    return re.sub(r"([\\`*\[\]<>])", r"\\\1", text)


# ------------------------------------------------------------------ figures


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _png(fig: Any) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
    return out.getvalue()


def column_png(
    col: ColumnSpec, real: pd.DataFrame, synth: pd.DataFrame, distance: ColumnDistance
) -> bytes:
    """One column's figure: a histogram of the values, real against synthetic, for a
    numeric column compared as numbers; bars of each value's (or bin's) share otherwise."""
    fig = _figure(7.0, 4.2)
    ax = fig.subplots()
    metric = "KS distance" if distance.metric == "ks" else "1-way TVD"
    title = f"{col.name}: {metric} {distance.distance:.3f}"
    if distance.metric == "ks":
        _histogram(ax, col, real, synth)
    else:
        title += _bars(ax, col, real[col.name], synth[col.name])
    ax.set_title(title)
    ax.set_xlabel(col.name)
    ax.set_ylabel("share of rows")
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.2)  # room for the legend above the bars
    ax.legend(fontsize="small", loc="upper right")
    return _png(fig)


def _histogram(ax: Axes, col: ColumnSpec, real: pd.DataFrame, synth: pd.DataFrame) -> None:
    """Histograms of a column's values (a datetime column's times, labelled as dates), as
    shares of all rows; the legend gives each table's share of empty cells."""
    x, y = column_values(real, col), column_values(synth, col)
    if x is None or y is None:
        raise ConfigError(f"column {col.name!r} holds no numbers to draw.")
    present = np.concatenate([x[~np.isnan(x)], y[~np.isnan(y)]])
    lo, hi = (present.min(), present.max()) if present.size else (0.0, 1.0)
    if col.kind == NUMERIC and np.all(present == np.round(present)) and hi - lo < _HIST_BINS:
        edges = np.arange(lo - 0.5, hi + 1.5)  # one bin per integer
    else:
        edges = np.linspace(lo, hi, _HIST_BINS + 1) if hi > lo else np.array([lo - 0.5, lo + 0.5])
    shown = edges
    if col.kind == DATETIME:  # matplotlib's date numbers: days since its epoch
        from matplotlib import dates

        epoch = float(np.datetime64(dates.get_epoch(), "s").astype(np.int64))
        shown = (edges - epoch) / 86400.0
    for values, label, style in (
        (x, "real", {"fill": True, "alpha": 0.45}),
        (y, "synthetic", {"fill": False, "linewidth": 2.0, "color": "tab:orange"}),
    ):
        counts, _ = np.histogram(values[~np.isnan(values)], bins=edges)
        empty = np.isnan(values).mean()
        note = f", {empty:.1%} empty" if empty > 0 else ""
        ax.stairs(
            counts / values.size, shown, label=f"{label} ({values.size:,} rows{note})", **style
        )
    if col.kind == DATETIME:
        locator = dates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(dates.ConciseDateFormatter(locator))


def _bars(ax: Axes, col: ColumnSpec, real: pd.Series, synth: pd.Series) -> str:
    """Bars of each value's share, real beside synthetic; the title's note when only the
    most common values are shown."""
    labels, p, q = _shares(col, real, synth)
    note = ""
    if len(labels) > _MOST_BARS:
        keep = np.sort(np.argsort(-np.maximum(p, q), kind="stable")[:_MOST_BARS])
        note = f" ({_MOST_BARS} most common of {len(labels)} values)"
        labels, p, q = [labels[i] for i in keep], p[keep], q[keep]
    pos = np.arange(len(labels))
    ax.bar(pos - 0.2, p, 0.4, label=f"real ({len(real):,} rows)")
    ax.bar(pos + 0.2, q, 0.4, label=f"synthetic ({len(synth):,} rows)")
    rotate = 45 if len(labels) > 6 or max((len(s) for s in labels), default=0) > 8 else 0
    ax.set_xticks(pos, labels, rotation=rotate, ha="right" if rotate else "center")
    return note


def _shares(
    col: ColumnSpec, real: pd.Series, synth: pd.Series
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Each value's label and share of rows in both tables: categories, or bins for a
    numeric column not held as numbers; "(empty)" last for a column with empty cells."""
    from vertimrf.encoding import TableEncoder

    encoder = TableEncoder(DomainSpec([col]))
    codes = [encoder.encode(s.to_frame(col.name))[:, 0] for s in (real, synth)]
    if col.kind == CATEGORICAL:
        labels = [str(v) for v in col.values]
    else:
        edges = col.edges
        labels = [f"[{lo:g}, {hi:g})" for lo, hi in zip(edges, edges[1:], strict=False)]
    labels += ["(empty)"] * col.missing
    p, q = (np.bincount(c, minlength=col.size) / max(c.size, 1) for c in codes)
    return labels, p, q


def heatmap_png(evaluation: Evaluation, names: Sequence[str]) -> bytes:
    """The heatmap of each pair's trend difference, ``|real - synthetic|`` (Pearson's
    correlation for two numeric columns, Cramér's V otherwise); the diagonal is blank."""
    d = len(names)
    where = {n: i for i, n in enumerate(names)}
    m = np.full((d, d), np.nan)
    for (u, v), trend in evaluation.trends.items():
        m[where[u], where[v]] = m[where[v], where[u]] = trend.difference
    side = min(16.0, max(5.5, 0.45 * d + 3.0))
    fig = _figure(side + 1.2, side)
    ax = fig.subplots()
    from matplotlib import colormaps

    cmap = colormaps["Reds"].with_extremes(bad="#eeeeee")  # the diagonal
    top = max(1.0, float(np.nanmax(m))) if d > 1 else 1.0
    image = ax.imshow(np.ma.masked_invalid(m), cmap=cmap, vmin=0.0, vmax=top)
    ax.set_xticks(np.arange(d), list(names), rotation=45, ha="right")
    ax.set_yticks(np.arange(d), list(names))
    if d <= _ANNOTATE:
        for i in range(d):
            for j in range(d):
                if not np.isnan(m[i, j]):
                    dark = m[i, j] > 0.6 * top
                    ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize="small",
                            color="white" if dark else "black")  # fmt: skip
    ax.set_title("Pair trends, |real − synthetic|")
    ax.set_xlabel("Pearson's correlation for two numeric columns, Cramér's V otherwise")
    fig.colorbar(image, ax=ax, label="|real − synthetic|", shrink=0.8)
    return _png(fig)
