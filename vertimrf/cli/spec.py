"""``vertimrf spec``: a domain spec proposed from the data, to be fixed by hand (read off the
data, it is NOT differentially private)."""

from __future__ import annotations

import argparse
import sys
import warnings

from vertimrf.cli.common import check_outputs, force_arg, read_table, staged
from vertimrf.errors import ConfigError

NOT_DP = (
    "this spec is read off the data, so it is NOT differentially private: it reveals the "
    "categories present, each numeric column's min and max, and each datetime column's first "
    "and last date. Fix it by hand before any run: categories from public knowledge (every "
    "value a column may take, not only those seen), numeric bounds and datetime bounds from "
    "public knowledge (never the data's min and max); see docs/own-data.md."
)


def cmd_spec(args: argparse.Namespace) -> int:
    from vertimrf.domain import DomainSpec, PrivacyWarning, SpecWarning, empty_cells
    from vertimrf.propose import infer_spec

    if args.bins < 1 or args.max_categories < 1:
        raise ConfigError("--bins and --max-categories must be positive integers.")
    check_outputs(args, [args.out], [args.data])
    df = read_table(args.data)
    for option, names in (("--id-column", [args.id_column] if args.id_column else []),
                          ("--drop", args.drop)):  # fmt: skip
        unknown = [c for c in names if c not in df.columns]
        if unknown:
            raise ConfigError(
                f"{args.data} has no column {unknown[0]!r} ({option}); its columns are "
                f"{list(df.columns)}."
            )
    kept = df.drop(columns=[*([args.id_column] if args.id_column else []), *args.drop])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", PrivacyWarning)  # it speaks Python; NOT_DP replaces it
        warnings.simplefilter("always", SpecWarning)
        spec = infer_spec(kept, numeric_bins=args.bins, max_categories=args.max_categories)
    dropped = set(args.drop) | set(spec.ignored)
    spec = DomainSpec(spec.columns, [c for c in df.columns if c in dropped and c != args.id_column])
    with staged(args.out) as (tmp,):
        spec.to_json(tmp)
    print(f"wrote a PROPOSED spec to {args.out}, read off the data (NOT DP); fix every column:")
    for col in spec.columns:
        if col.kind == "numeric":
            lower, upper, bins = col.bounds
            seen = f"numeric, bounds [{lower:g}, {upper:g}] = the data's min and max, {bins} bins"
            if col.integer:
                seen += ', whole numbers, so "integer": true'
        elif col.time is not None:
            axis = col.time
            seen = (
                f"datetime, bounds [{axis.lower}, {axis.upper}] = the {axis.unit}s of the data's "
                f"first and last time, {col.bounds[2]} bins of one {axis.unit}, format "
                f"{axis.format!r}, drawn in whole {axis.resolution}s"
            )
        else:
            seen = f"categorical, the {len(col.values)} categories seen in the data"
        empty = int(empty_cells(df[col.name]).sum())
        gaps = f'; {empty} empty cells, so "missing": true (empty is a value)' if empty else ""
        print(f"  {col.name}: {seen}{gaps}")
    for name in spec.ignored:
        why = "--drop" if name in args.drop else "see the warning"
        print(f'  {name}: "type": "ignore", left out of every table ({why})')
    for warning in caught:
        print(f"vertimrf: warning: {warning.message}", file=sys.stderr)
    print(f"vertimrf: warning: {NOT_DP}", file=sys.stderr)
    return 0


def add_spec(sub: argparse._SubParsersAction) -> None:
    """The `spec` command."""
    spec = sub.add_parser(
        "spec",
        help="propose a domain spec from a table (NOT DP: fix it by hand)",
        description="Write a domain spec JSON proposed from the table: a column with at most "
        "--max-categories distinct values is categorical, another numeric column is numeric "
        'with the data\'s min and max as bounds, another text column is "type": "ignore" (left '
        "out); a column of dates (text that one date format reads) is datetime, with the "
        "format read off its cells, bounds at the data's first and last unit, and the finest "
        "unit of minute, hour, day, week, month, year that gives at most 400 bins; a column "
        'with empty cells gets "missing": true (an empty cell is a value of its own). A warning '
        "on stderr names each column you would likely not want as proposed (too many values, "
        "dates or times in no one format, numbers with a few text cells, a different value in "
        "every row, one value in every row). The proposal is read off the data and is "
        "NOT differentially private: replace its categories and bounds with public "
        "knowledge before any run (docs/own-data.md).",
    )
    spec.add_argument("--data", required=True, help="the table: a CSV or Parquet file")
    spec.add_argument("--out", required=True, help="spec JSON to write")
    spec.add_argument(
        "--id-column", default=None, metavar="COL", help="the record-ID column, left out"
    )
    spec.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="COL",
        help='a column to leave out, written as "type": "ignore" (repeat for more)',
    )
    spec.add_argument(
        "--max-categories",
        type=int,
        default=64,
        help="a column with at most this many distinct values is categorical; a text column "
        'with more is proposed as "type": "ignore" (default 64)',
    )
    spec.add_argument(
        "--bins", type=int, default=16, help="equal-width bins of a numeric column (default 16)"
    )
    force_arg(spec)
    spec.set_defaults(func=cmd_spec)
