"""``vertimrf split``: a table (your own, or a bundled data set) as each party's own CSV,
linked by a record-ID column, and optionally the whole table for ``vertimrf evaluate``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import check_outputs, file_name, force_arg, read_table, staged
from vertimrf.cli.config import parse_parties, refuse_positions
from vertimrf.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec

ALL = "all"  # --all writes OUT_DIR/all.csv
SHARED = "shared"  # --all with --overlap also writes OUT_DIR/shared.csv


def cmd_split(args: argparse.Namespace) -> int:
    parties = parse_parties(args.party)
    overlap = _overlap(args)
    folder = Path(args.out_dir)
    paths = {name: folder / f"{file_name(name)}.csv" for name, _ in parties}
    if args.all:
        for whole in (ALL,) if overlap is None else (ALL, SHARED):
            if whole in paths:
                raise ConfigError(f"--all writes {whole}.csv: name no party {whole!r}.")
            paths[whole] = folder / f"{whole}.csv"
    check_outputs(args, list(paths.values()), [args.data, args.spec], make_dirs=True)
    source, df, spec = _table(args)
    _check_parties(parties, spec)
    written = list(spec.names) if args.all else [c for _, cols in parties for c in cols]
    missing = [c for c in written if c not in df.columns]
    if missing:
        raise ConfigError(f"{source} has no columns {missing}; its columns are {list(df.columns)}.")
    df, id_name = _with_ids(args, df, spec)
    import numpy as np

    from vertimrf.datasets.overlap import split_records
    from vertimrf.encoding import TableEncoder

    # A value off the public spec is refused before anything is written.
    TableEncoder(spec.subset(written)).encode(df[written])
    # Without --overlap every party holds every row, in the table's order (overlap 1).
    rng = np.random.default_rng(args.seed or 0)
    held = split_records(len(df), [n for n, _ in parties], 1.0 if overlap is None else overlap, rng)
    everyone = reduce(np.intersect1d, held.values())
    union = reduce(np.union1d, held.values())
    frames = [df[[id_name, *cols]].iloc[held[name]] for name, cols in parties]
    if args.all:
        frames.append(df[written].iloc[union])
        if overlap is not None:
            frames.append(df[written].iloc[everyone])
    with staged(*paths.values()) as temps:
        for frame, tmp in zip(frames, temps, strict=True):
            frame.to_csv(tmp, index=False)
    for name, cols in parties:
        rows = len(held[name])
        print(f"{name}: wrote {paths[name]} ({rows:,} rows; columns {id_name},{','.join(cols)})")
    if overlap is None:
        if args.all:
            print(f"wrote the whole table to {paths[ALL]} (the real table for `vertimrf evaluate`)")
        return 0
    own = len(held[parties[0][0]]) - len(everyone)
    print(
        f"rows every party holds: {len(everyone):,}; rows each party holds alone: {own:,}; "
        f"rows no party holds: {len(df) - len(union):,} (of {len(df):,})"
    )
    if len(union):
        share = len(everyone) / len(union)
        print(
            f"every party holds {share:.0%} of the parties' records: give "
            f"`vertimrf config --expected-shared {share:.2f}`, and the "
            "server warns if the run finds far fewer (IDs that differ in type or format)"
        )
    if args.all:
        print(
            f"wrote the union of the parties' records ({len(union):,} rows) to {paths[ALL]} and "
            f"the rows every party holds to {paths[SHARED]} (the real tables for "
            "`vertimrf evaluate`)"
        )
    return 0


def _overlap(args: argparse.Namespace) -> float | None:
    """--overlap as a fraction (None if not given); --seed only with it."""
    if args.overlap is None:
        if args.seed is not None:
            raise ConfigError("--seed draws the records of --overlap: give --overlap F too.")
        return None
    if args.seed is not None and args.seed < 0:
        raise ConfigError(f"--seed must be a whole number >= 0; got {args.seed}.")
    from vertimrf.datasets.overlap import check_overlap

    try:
        value = float(args.overlap)
    except ValueError:
        raise ConfigError(
            f"--overlap takes a fraction from 0 to 1; got {args.overlap!r}."
        ) from None
    return check_overlap(value)


def _table(args: argparse.Namespace) -> tuple[str, pd.DataFrame, DomainSpec]:
    """The table's name (for messages), the table and its spec (--dataset, or --data and
    --spec)."""
    if args.dataset is not None:
        from vertimrf.datasets import load_dataset

        if args.spec is not None or args.id_column is not None:
            raise ConfigError(
                "a bundled data set has its own spec and no ID column: give no --spec and no "
                "--id-column (name the added ID column with --add-id NAME)."
            )
        df, spec = load_dataset(args.dataset)
        return args.dataset, df, spec
    if args.spec is None:
        raise ConfigError(
            "--data needs --spec SPEC.json, the table's public domain (propose one with "
            "`vertimrf spec --data TABLE --out SPEC.json`, then fix it by hand)."
        )
    from vertimrf.domain import DomainSpec

    spec = DomainSpec.from_json(args.spec)
    return args.data, read_table(args.data), spec


def _check_parties(parties: Sequence[tuple[str, list[str]]], spec: DomainSpec) -> None:
    """ConfigError unless the parties name distinct columns of the spec, by name."""
    named = [c for _, cols in parties for c in cols]
    if len(set(named)) != len(named):
        shared = sorted({c for c in named if named.count(c) > 1})
        raise ConfigError(
            f"--party columns must be distinct columns: {shared} named more than once."
        )
    refuse_positions(parties, spec)
    unknown = [c for c in named if c not in spec.names]
    if unknown:
        raise ConfigError(
            f"--party names {unknown}, which are not columns of the spec {list(spec.names)}."
        )


def _with_ids(
    args: argparse.Namespace, df: pd.DataFrame, spec: DomainSpec
) -> tuple[pd.DataFrame, str]:
    """The table and the name of the parties' record-ID column: the table's own
    (--id-column, checked) or one added (--add-id, numbering the rows 0, 1, 2, ...)."""
    if args.id_column is not None and args.add_id is not None:
        raise ConfigError(
            "give --id-column COL (the table's IDs) or --add-id NAME (number the rows), not both."
        )
    if args.id_column is not None:
        from vertimrf.party.records.ids import record_fingerprints

        if args.id_column not in df.columns:
            raise ConfigError(
                f"{args.data} has no column {args.id_column!r} (--id-column); give its ID "
                "column, or --add-id NAME to number the rows."
            )
        if args.id_column in spec.names:
            raise ConfigError(
                f"--id-column {args.id_column!r} is a column of the spec; IDs are not data: "
                "remove it from the spec."
            )
        record_fingerprints(df[args.id_column])  # unique, present, all integers or all text
        return df, args.id_column
    if args.add_id is None and args.dataset is None:
        raise ConfigError(
            "each party's file needs a record-ID column: give --id-column COL (the table's "
            "own IDs) or --add-id NAME (number the rows)."
        )
    name = args.add_id or "id"
    if name in df.columns:
        raise ConfigError(f"--add-id {name!r} is a column of the table; choose another name.")
    out = df.copy(deep=False)  # not assign(**{name: ...}): the name may be "self"
    out[name] = range(len(df))
    return out, name


def add_split(sub: argparse._SubParsersAction) -> None:
    """The `split` command."""
    split = sub.add_parser(
        "split",
        help="write a table as each party's own CSV (your own table, or a bundled one)",
        description="Write one CSV per party: the record-ID column and the party's columns, "
        "as a party would hold them; --all also writes the whole table (every column of the "
        "spec) as all.csv, the real table `vertimrf evaluate` compares with. Every value "
        "must lie in the spec's public domain. --party takes column NAMES (the table's "
        "header, the spec's names), never positions: A=age,sex, not A=0,1 (the bundled adult "
        "and nltcs name their columns 0, 1, ...; adult_labeled has Adult's own names and "
        "categories). --overlap F gives the parties different record "
        "sets that share a fraction F of each party's records.",
    )
    source = split.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", default=None, help="your table: a CSV or Parquet file")
    source.add_argument(
        "--dataset",
        default=None,
        choices=("adult", "nltcs", "adult_labeled"),
        help="a bundled data set",
    )
    split.add_argument(
        "--spec", default=None, help="with --data: the table's public domain spec (JSON)"
    )
    split.add_argument(
        "--party",
        action="append",
        required=True,
        metavar="NAME=col,col",
        help="a party and its columns, by column NAME (not position); repeat per party",
    )
    split.add_argument(
        "--id-column",
        default=None,
        metavar="COL",
        help="--data: the table's record-ID column, copied to every party's file",
    )
    split.add_argument(
        "--add-id",
        default=None,
        metavar="NAME",
        help="the table has no ID column: add one named NAME that numbers the rows 0, 1, ... "
        "(--dataset: always, default 'id')",
    )
    split.add_argument(
        "--all",
        action="store_true",
        help="also write OUT_DIR/all.csv: the whole table, every column of the spec (with "
        "--overlap: the union of the parties' records, and OUT_DIR/shared.csv, the rows every "
        "party holds)",
    )
    split.add_argument(
        "--overlap",
        default=None,
        metavar="F",
        help="parties hold different records: a fraction F (0 to 1) of EACH party's records is "
        "held by every party, the rest by that party alone. With N rows and m parties, "
        "s = round(N F / (F + m (1 - F))) rows are shared and each party holds "
        "r = floor((N - s) / m) rows of its own, drawn at random (--seed); the rows left over "
        "(fewer than m) are held by no party. Each party's file lists its rows in its own "
        "random order. F = 1 (or no --overlap): every party holds every row, in the table's order",
    )
    split.add_argument(
        "--seed",
        type=int,
        default=None,
        help="with --overlap: the seed that draws each party's records (default 0)",
    )
    split.add_argument("--out-dir", required=True, help="folder for NAME.csv")
    force_arg(split)
    split.set_defaults(func=cmd_split)
