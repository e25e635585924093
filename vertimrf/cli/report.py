"""``vertimrf report``: the paper's experiments and ours as figures and one markdown page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from vertimrf.cli.common import (
    check_outputs,
    force_arg,
    read_table,
    spec_columns,
    write_all,
)
from vertimrf.errors import ConfigError

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec

DEFAULT_DATASET = {"tiny": "nltcs", "quick": "nltcs", "full": "adult"}
DEFAULT_SEEDS = {"tiny": 1, "quick": 1, "full": 3}
TINY_ROWS = 3000


def cmd_report(args: argparse.Namespace) -> int:
    from vertimrf.report import FIGURES, ReportContext, build_report, report_files
    from vertimrf.report.build import kept_records
    from vertimrf.report.plot import require_matplotlib

    level = "tiny" if args.tiny else "full" if args.full else "quick"
    names = _figure_names(args.figures, list(FIGURES))
    out = Path(args.out)
    if args.update and not (out / "REPORT.md").is_file():
        raise ConfigError(f"--update needs a report in {out}: make one without --update first.")
    outputs = [out / f for f in report_files(names)]
    if args.update:  # these figures' files and REPORT.md are replaced, as asked
        args.force = True
    check_outputs(args, outputs, [args.data, args.spec], make_dirs=True)
    require_matplotlib()
    seeds = args.seeds if args.seeds is not None else DEFAULT_SEEDS[level]
    if seeds < 1:
        raise ConfigError(f"--seeds must be at least 1; got {seeds}.")
    overrides = _baseline_overrides(args)
    name, df, spec = _table(args, level)
    store = _baseline_store(args.baseline_store)
    ctx = ReportContext(
        name, df, spec, seeds, progress=False if args.quiet else None, baseline_store=store
    )
    kept = kept_records(out, ctx, level, names) if args.update else {}
    print(
        f"vertimrf report --{level}: {', '.join(names)} on {name} ({len(df):,} rows), "
        f"{seeds} seed(s) -> {out}",
        flush=True,
    )
    files = build_report(ctx, level, names, kept, overrides)
    out.mkdir(parents=True, exist_ok=True)
    write_all({out / f: data for f, data in files.items()})
    print(f"wrote {out / 'REPORT.md'} and {len(files) - 1} figure files")
    return 0


def _figure_names(value: str | None, known: list[str]) -> list[str]:
    if value is None:
        return known
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ConfigError(f"--figures takes a comma-separated subset of {known}; got {value!r}.")
    return names


def _baseline_overrides(args: argparse.Namespace) -> dict[str, object]:
    """The TVD figure's baselines and cap as ``--baselines`` and ``--cap`` set them (given
    baselines run at every epsilon)."""
    from vertimrf.report.opendp_mechanisms import MECHANISMS

    overrides: dict[str, object] = {}
    if args.baselines is not None:
        names = [n.strip() for n in args.baselines.split(",") if n.strip()]
        if names == ["none"]:
            names = []
        if any(n not in MECHANISMS for n in names) or len(set(names)) < len(names):
            raise ConfigError(
                f"--baselines takes a comma-separated subset of {list(MECHANISMS)}, or none; "
                f"got {args.baselines!r}."
            )
        overrides |= {"baselines": names, "only_at": {}}
    if args.cap is not None:
        if not args.cap > 0:
            raise ConfigError(f"--cap must be a positive number of seconds; got {args.cap}.")
        overrides["cap"] = args.cap
    return overrides


def _baseline_store(value: str | None) -> str | None:
    """``--baseline-store``: a folder (made if missing), or None."""
    if value is not None and Path(value).exists() and not Path(value).is_dir():
        raise ConfigError(
            f"--baseline-store {value} is a file: give a folder for the baseline runs."
        )
    return value


def _table(args: argparse.Namespace, level: str) -> tuple[str, pd.DataFrame, DomainSpec]:
    """The report's table: ``--data`` with ``--spec``, or a bundled dataset (the tiny level
    keeps its first TINY_ROWS rows)."""
    from vertimrf.datasets import load_dataset
    from vertimrf.domain import DomainSpec

    if (args.data is None) != (args.spec is None):
        raise ConfigError(
            "give --data CSV and --spec JSON together (or neither, for a bundled table)."
        )
    if args.data is not None:
        if args.dataset is not None:
            raise ConfigError("give either --dataset or --data with --spec, not both.")
        spec = DomainSpec.from_json(args.spec)
        frame = spec_columns(read_table(args.data), spec, args.data)
        if len(spec) < 2:
            raise ConfigError("the report splits the columns over parties: give at least 2.")
        return Path(args.data).name, frame, spec
    name = args.dataset or DEFAULT_DATASET[level]
    df, spec = load_dataset(name)
    if level == "tiny":
        df = df.iloc[:TINY_ROWS]
    return name, df, spec


def add_report(sub: argparse._SubParsersAction) -> None:
    """The `report` command."""
    rep = sub.add_parser(
        "report",
        help="the paper's experiments and ours: REPORT.md, PNG figures and their data as JSON",
        description="Run every method (Secure, Centralized PrivMRF, FO and the paper's FM, which "
        "is NOT DP) in one process on a bundled table or your own, and write DIR/REPORT.md, "
        "one PNG per figure and the data behind it as DIR/<figure>.json. --quick (the "
        "default: NLTCS, 1 seed) takes about 6 minutes on 2 cores; --full (Adult, 3 seeds) "
        "regenerates the committed docs/report/ and takes about an hour. Every run is "
        "seeded (reproducible, not for release), with delta = 1e-6. Needs matplotlib "
        '(pip install "vertimrf[report]"); the SVM figure also scikit-learn (the eval extra).',
    )
    level = rep.add_mutually_exclusive_group()
    level.add_argument("--quick", action="store_true", help="small sizes (the default)")
    level.add_argument("--full", action="store_true", help="the committed report's sizes")
    level.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)
    rep.add_argument("--out", required=True, metavar="DIR", help="folder for the report's files")
    rep.add_argument("--dataset", default=None, help="a bundled table: nltcs or adult")
    rep.add_argument("--data", default=None, metavar="CSV", help="your own table (with --spec)")
    rep.add_argument("--spec", default=None, metavar="JSON", help="its domain spec")
    rep.add_argument("--seeds", type=int, default=None, help="seeds per point (quick 1, full 3)")
    rep.add_argument(
        "--figures",
        default=None,
        help="comma-separated figures to make, named as REPORT.md's sections, e.g. tvd,audit "
        "(default: all)",
    )
    rep.add_argument(
        "--update",
        action="store_true",
        help="make only the --figures again in the report in DIR (same table, seeds and "
        "level), replacing their files and REPORT.md, and keep its other figures",
    )
    rep.add_argument(
        "--baselines",
        default=None,
        help="OpenDP's mechanisms in the TVD figure, run at every epsilon: mst, aim, both "
        "(mst,aim) or none (default: quick MST at epsilon 1.6, full MST; AIM takes over 40 "
        "minutes a run on Adult on 2 cores)",
    )
    rep.add_argument(
        "--cap",
        type=float,
        default=None,
        help="seconds each baseline run may take (quick 240, full 900)",
    )
    rep.add_argument(
        "--baseline-store",
        default=None,
        metavar="DIR",
        help="a folder keeping MST and AIM runs across reports (and bench_engine.py --store): "
        "a run it holds (same table, method, epsilon, seed and OpenDP) is read, not run again; "
        "one killed at a cap is reused for a cap no longer than its own",
    )
    rep.add_argument("--quiet", action="store_true", help="no progress bars")
    force_arg(rep)
    rep.set_defaults(func=cmd_report)
