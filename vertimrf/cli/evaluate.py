"""``vertimrf evaluate``: a synthetic table against the real one: TVD averages, each column's
and the worst pairs' distances as tables, the SVM metric, a report folder of figures and
sdmetrics' QualityReport."""

from __future__ import annotations

import argparse
import importlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    check_outputs,
    force_arg,
    load_spec,
    read_table,
    spec_args,
    spec_columns,
    write_all,
)
from vertimrf.errors import (
    ConfigError,
)

if TYPE_CHECKING:
    from vertimrf.domain import DomainSpec
    from vertimrf.evaluation import Evaluation, Quality


def cmd_evaluate(args: argparse.Namespace) -> int:
    from vertimrf.evaluation import (
        column_lines,
        evaluate,
        pair_lines,
        report_files,
        require_matplotlib,
        require_sdmetrics,
        sdmetrics_quality,
    )
    from vertimrf.metrics import svm_misclassification, tvd

    inputs = [args.spec, args.real, args.synth]
    check_outputs(args, [args.json], inputs)
    spec = load_spec(args)
    report = _report_outputs(args, spec)
    check_outputs(args, report, [*inputs, args.json], make_dirs=True)
    ways = _parse_ways(args.ways, len(spec))
    if args.worst < 0:
        raise ConfigError(f"--worst must be 0 or more columns; got {args.worst}.")
    if args.label is not None:
        if args.label not in spec.names:
            raise ConfigError(
                f"--label {args.label!r} is not a column of the spec {list(spec.names)}."
            )
        try:
            importlib.import_module("sklearn")  # the SVM metric's; only in the eval extra
        except ImportError:
            raise ConfigError(
                "--label (the SVM metric) needs scikit-learn: install vertimrf[eval], or leave "
                "out --label for the TVD figures alone."
            ) from None
    if args.sdmetrics:
        require_sdmetrics()
    if report:
        require_matplotlib()
    real, synth = read_table(args.real), read_table(args.synth)
    real, synth = spec_columns(real, spec, args.real), spec_columns(synth, spec, args.synth)
    out: dict[str, float] = {f"tvd{w}": tvd(real, synth, spec, ways=w) for w in ways}
    if args.label:
        # The synthetic file was made from all real rows; every fold tests on real rows.
        res = svm_misclassification(real, lambda _: synth, spec, args.label)
        out["svm_misclassification"] = res.mean
    evaluation = evaluate(real, synth, spec)
    quality = sdmetrics_quality(real, synth, spec) if args.sdmetrics else None
    for k, v in out.items():
        print(f"{k}: {v:.4f}")
    for table in (column_lines(evaluation, args.worst), pair_lines(evaluation, args.worst)):
        if table:
            print("\n" + "\n".join(table))
    if quality is not None:
        print("\n" + quality.line())
    files: dict[Path, bytes] = {}
    if args.json:
        figures = {**out, **_json_figures(evaluation, quality)}
        files[Path(args.json)] = json.dumps(figures, indent=2).encode("utf-8")
    if report:
        made = report_files(
            evaluation, real, synth, spec, averages=out, worst=args.worst,
            sources=(args.real, args.synth), quality=quality,
        )  # fmt: skip
        files.update({Path(args.report) / name: data for name, data in made.items()})
    write_all(files)
    if report:
        print(f"\nwrote the report to {report[0]} and {len(report) - 1} files beside it")
    return 0


def _report_outputs(args: argparse.Namespace, spec: DomainSpec) -> list[Path]:
    """The files ``--report DIR`` writes, report.md first; a ConfigError when DIR is a
    file, or a folder that holds anything and ``--force`` is not given."""
    from vertimrf.evaluation import report_names

    if args.report is None:
        return []
    folder = Path(args.report)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(
            f"{folder}: --report names a file; give a folder for the report (made if missing)."
        )
    if folder.is_dir() and any(folder.iterdir()) and not args.force:
        raise ConfigError(
            f"{folder}: refusing to write the report into a folder that is not empty; give "
            "--force to replace the report's files in it, or choose a new or empty folder."
        )
    return [folder / name for name in report_names(spec, args.sdmetrics)]


def _json_figures(evaluation: Evaluation, quality: Quality | None) -> dict[str, object]:
    """The --json figures beyond the averages: every column's 1-way TVD and distance, every
    pair's 2-way TVD and trends (worst first), and sdmetrics' scores (null where none)."""
    columns = evaluation.columns.values()
    out: dict[str, object] = {
        "tvd1_by_column": {c.column: c.tvd1 for c in columns},
        "columns": {
            c.column: {"type": c.kind, "metric": c.metric, "distance": c.distance} for c in columns
        },
        "pairs": [
            {
                "columns": list(pair),
                "tvd2": value,
                "trend": evaluation.trends[pair].metric,
                "real": evaluation.trends[pair].real,
                "synthetic": evaluation.trends[pair].synth,
            }
            for pair, value in evaluation.worst_pairs()
        ],  # fmt: skip
    }
    if quality is not None:
        scores = {
            "column_shapes": quality.column_shapes,
            "column_pair_trends": quality.column_pair_trends,
            "overall": quality.overall,
        }
        out["sdmetrics"] = {k: None if math.isnan(v) else v for k, v in scores.items()}
    return out


def _parse_ways(value: str, columns: int) -> list[int]:
    """``--ways``: comma-separated marginal sizes, each from 1 to the number of columns."""
    try:
        ways = [int(w) for w in value.split(",")]
    except ValueError:
        ways = []
    if not ways or any(not 1 <= w <= columns for w in ways):
        raise ConfigError(
            f"--ways must be comma-separated integers from 1 to {columns} (the spec's columns), "
            f"e.g. 3,4,5; got {value!r}."
        )
    return ways


def add_evaluate(sub: argparse._SubParsersAction) -> None:
    """The `evaluate` command."""
    ev = sub.add_parser(
        "evaluate",
        help="a synthetic table against the real one: TVD, each column, the worst pairs",
        description="l-way TVD (300 random marginals); each column's distance (the KS distance "
        "of the values for a numeric column, 1-way TVD otherwise) and the column pairs of "
        "highest 2-way TVD, worst first; with --label, the misclassification rate of an RBF "
        "SVM trained on the synthetic rows and tested on real folds; with --report DIR, a "
        "figure per column, a heatmap of the pair trends and report.md; with --sdmetrics, "
        "sdmetrics' QualityReport.",
    )
    spec_args(ev)
    ev.add_argument("--real", required=True, help="real table (CSV or Parquet)")
    ev.add_argument("--synth", required=True, help="synthetic table (CSV or Parquet)")
    ev.add_argument("--ways", default="3,4,5", help="marginal sizes (default 3,4,5)")
    ev.add_argument(
        "--label",
        default=None,
        help="label column for the SVM metric (needs scikit-learn: pip install vertimrf[eval])",
    )
    ev.add_argument(
        "--worst",
        type=int,
        default=10,
        help="how many columns and column pairs to list, worst first (default 10; 0: none)",
    )
    ev.add_argument(
        "--json",
        default=None,
        help="also write the figures as JSON (every column's and every pair's)",
    )
    ev.add_argument(
        "--report",
        default=None,
        metavar="DIR",
        help="write a PNG per column (real against synthetic), a heatmap of the pair trends' "
        "differences and report.md linking them into DIR, a new or empty folder (needs "
        'matplotlib: pip install "vertimrf[report]")',
    )
    ev.add_argument(
        "--sdmetrics",
        action="store_true",
        help="also run sdmetrics' QualityReport (Column Shapes, Column Pair Trends) with the "
        'spec\'s column types (needs pip install "vertimrf[quality]")',
    )
    force_arg(ev)
    ev.set_defaults(func=cmd_evaluate)
