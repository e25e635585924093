"""``vertimrf evaluate``: TVD and SVM metrics of a synthetic CSV against the real one."""

from __future__ import annotations

import argparse
import importlib

from vertimrf.cli.common import (
    check_outputs,
    force_arg,
    load_spec,
    read_table,
    spec_args,
    write_json,
)
from vertimrf.errors import (
    ConfigError,
)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from vertimrf.metrics import column_tvd, svm_misclassification, tvd

    check_outputs(args, [args.json], [args.spec, args.real, args.synth])
    spec = load_spec(args)
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
    real, synth = read_table(args.real), read_table(args.synth)
    for path, frame in ((args.real, real), (args.synth, synth)):
        missing = [c for c in spec.names if c not in frame.columns]
        if missing:
            raise ConfigError(
                f"{path} lacks the spec's columns {missing}; give a table with every column of "
                "the spec (others are ignored)."
            )
    real, synth = real[list(spec.names)], synth[list(spec.names)]
    out: dict[str, object] = {f"tvd{w}": tvd(real, synth, spec, ways=w) for w in ways}
    if args.label:
        # The synthetic file was made from all real rows; every fold tests on real rows.
        res = svm_misclassification(real, lambda _: synth, spec, args.label)
        out["svm_misclassification"] = res.mean
    for k, v in out.items():
        print(f"{k}: {v:.4f}")
    columns = column_tvd(real, synth, spec)
    for line in worst_columns(columns, args.worst):
        print(line)
    if args.json:
        write_json(args.json, {**out, "tvd1_by_column": columns})
    return 0


def worst_columns(columns: dict[str, float], k: int) -> list[str]:
    """The lines of a table of the ``k`` columns of highest 1-way TVD, worst first (none
    when ``k`` is 0): an average over columns hides one column gone wrong."""
    if k == 0:
        return []
    ranked = sorted(columns.items(), key=lambda c: (-c[1], c[0]))[:k]
    width = max(len("column"), *(len(name) for name, _ in ranked))
    lines = [
        f"1-way TVD by column, worst first ({len(ranked)} of {len(columns)}):",
        f"  {'column':<{width}}  tvd1",
    ]
    return lines + [f"  {name:<{width}}  {v:.4f}" for name, v in ranked]


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
        help="TVD and SVM metrics of a synthetic CSV against the real one",
        description="l-way TVD (300 random marginals), the columns of highest 1-way TVD and, "
        "with --label, the misclassification rate of an RBF SVM trained on the synthetic rows "
        "and tested on real folds.",
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
        help="how many columns of highest 1-way TVD to list, worst first (default 10; 0: none)",
    )
    ev.add_argument(
        "--json",
        default=None,
        help="also write the figures as JSON (with every column's 1-way TVD)",
    )
    force_arg(ev)
    ev.set_defaults(func=cmd_evaluate)
