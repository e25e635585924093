"""``vertimrf split``: a bundled data set as each party's own table, to try a run with."""

from __future__ import annotations

import argparse
from pathlib import Path

from vertimrf.cli.common import check_outputs, file_name, force_arg, staged
from vertimrf.cli.config import parse_parties
from vertimrf.errors import ConfigError


def cmd_split(args: argparse.Namespace) -> int:
    from vertimrf.datasets import load_dataset

    df, spec = load_dataset(args.dataset)
    parties = parse_parties(args.party)
    named = [c for _, cols in parties for c in cols]
    unknown = sorted(set(named) - set(spec.names))
    if unknown or len(set(named)) != len(named):
        raise ConfigError(
            f"--party columns must be distinct columns of {args.dataset} ({list(spec.names)}); "
            f"unknown: {unknown}."
        )
    if args.id_column in spec.names:
        raise ConfigError(f"--id-column {args.id_column!r} is a data column; choose another name.")
    folder = Path(args.out_dir)
    paths = {name: folder / f"{file_name(name)}.csv" for name, _ in parties}
    check_outputs(args, list(paths.values()), make_dirs=True)
    folder.mkdir(parents=True, exist_ok=True)
    ids = range(len(df))
    with staged(*paths.values()) as temps:
        for (_, cols), tmp in zip(parties, temps, strict=True):
            df[cols].assign(**{args.id_column: ids})[[args.id_column, *cols]].to_csv(
                tmp, index=False
            )
    for name, cols in parties:
        print(f"{name}: wrote {paths[name]} ({len(df):,} rows; columns {','.join(cols)})")
    return 0


def add_split(sub: argparse._SubParsersAction) -> None:
    """The `split` command."""
    split = sub.add_parser(
        "split",
        help="write a bundled data set as each party's own CSV (to try a run)",
        description="Write one CSV per party of a bundled data set: the record-ID column and "
        "the party's columns, as a party would hold them.",
    )
    split.add_argument("--dataset", required=True, choices=("adult", "nltcs"))
    split.add_argument(
        "--party", action="append", required=True, help="NAME=col,col,... (repeat per party)"
    )
    split.add_argument("--id-column", default="id", help="the record-ID column (default 'id')")
    split.add_argument("--out-dir", required=True, help="folder for NAME.csv")
    force_arg(split)
    split.set_defaults(func=cmd_split)
