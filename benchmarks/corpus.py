"""The conformance corpus (``tests/corpus``): every real public table of
``tests/corpus/tables.py`` taken along a user's path through the CLI (``spec`` with the
table's fixes, ``split`` at overlap 0.8, ``config``, a folder run at epsilon 1; a few tables
also over HTTPS), with 2 and 3 parties.

One row per table and party count: how the path ended, the 3-way TVD of the secure
synthetic table against the records every party holds next to Centralized PrivMRF's (the
engine, fitted on those records at the same budget), the worst column's 1-way TVD next to
Centralized's, time and peak memory. Then the median Secure / Centralized 3-way ratio over
the finished runs, the worst, and whether every column's 1-way TVD is within
max(2 x Centralized's, 0.02).

Each run's outcome is kept in the JSON as it finishes; ``--tables`` re-runs some tables and
replaces their rows, keeping the others.

    python benchmarks/corpus.py [--tables NAME ...] [--parties 2 3] [--cap SECONDS]
        [--json benchmarks/results/corpus.json] [--md benchmarks/results/corpus.md]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# Tables also run over HTTPS (one party count each).
HTTPS = {"AER::CPS1985": 2, "ISLR::Wage": 3, "ggplot2::txhousing": 3}
# Seconds for the whole path of the slowest tables (ames: 795-962 s alone, 1,465 s at load
# 4-5, where a 900 s cap stopped its 2-party run after its releases). It assumes one ames
# run at a time: its 2- and 3-party runs side by side both passed 2,400 s in the server's fit.
BIG_CAP = {"nycflights13::flights": 2400.0, "modeldata::ames": 2400.0}


def _key(row: dict) -> tuple[str, int, str, int]:
    return row["table"], row["parties"], row["transport"], row.get("seed", 0)


def pooled(rows: list[dict]) -> dict:
    """One table and party count over its seeds: the finished seeds' mean TVDs (3-way and
    each column's 1-way, Secure's and Centralized's), the first unfinished seed's status."""
    done = [r for r in rows if r["status"] == "finished" and r["tvd3_secure"] is not None]
    out = dict(next((r for r in rows if r["status"] != "finished"), rows[0]))
    out["seeds"] = sorted(r.get("seed", 0) for r in rows)
    out["tracebacks"] = sorted({t for r in rows for t in r["tracebacks"]})
    if not done or len(done) < len(rows):
        return out
    for side in ("secure", "central"):
        out[f"tvd3_{side}"] = statistics.fmean(
            math.nan if r[f"tvd3_{side}"] is None else r[f"tvd3_{side}"] for r in done
        )
        cols = done[0][f"tvd1_{side}"]
        out[f"tvd1_{side}"] = {c: statistics.fmean(r[f"tvd1_{side}"].get(c, math.nan)
                                                   for r in done) for c in cols}  # fmt: skip
    return out


class Row:
    """One run's outcome as the harness wrote it (``tests/corpus/harness.py``'s JSON), with
    the figures the table shows."""

    def __init__(self, row: dict) -> None:
        self.__dict__.update(row)

    @property
    def ratio(self) -> float | None:
        """Secure's 3-way TVD over Centralized's."""
        if self.tvd3_secure is None or not self.tvd3_central:
            return None
        return self.tvd3_secure / self.tvd3_central

    def bound(self, col: str) -> float:
        """The 1-way target of ``col``: max(2 x Centralized's TVD, 0.02)."""
        return max(2 * self.tvd1_central.get(col, math.inf), 0.02)

    def worst_column(self) -> tuple[str, float, float] | None:
        """The column furthest above its 1-way target, its TVD and Centralized's."""
        if not self.tvd1_secure:
            return None
        col = max(self.tvd1_secure, key=lambda c: self.tvd1_secure[c] - self.bound(c))
        return col, self.tvd1_secure[col], self.tvd1_central.get(col, math.nan)

    def one_way_ok(self) -> bool:
        """Every column's 1-way TVD within its target."""
        return all(v <= self.bound(c) for c, v in self.tvd1_secure.items())

    def acceptable(self) -> bool:
        """No traceback, and a synthetic table or a stop before any budget was spent."""
        return not self.tracebacks and (
            self.status == "finished" or (self.status.startswith("refused") and not self.released)
        )


def _harness(args: list[str], cwd: Path) -> list[str]:
    """Run the harness (``python -m tests.corpus.harness ARGS``) to its end; its stdout's
    lines."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "tests.corpus.harness", *args], cwd=cwd,
                          env=env, capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "no output")
    return done.stdout.splitlines()


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def markdown(head: dict, rows: list[dict]) -> str:
    """The corpus table and its summary."""
    outs = [Row(r) for r in rows]
    groups: dict[tuple[str, int, str], list[dict]] = {}
    for r in rows:
        groups.setdefault(_key(r)[:3], []).append(r)
    pools = [Row(pooled(g)) for g in groups.values()]
    finished = [o for o in pools if o.status == "finished" and o.ratio is not None]
    ratios = sorted(o.ratio for o in finished)
    lines = [
        "# Conformance corpus: real public tables along a user's path (`benchmarks/corpus.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']} (working tree). Machine: "
        f"{head['machine']}, **{head['cores']} cores**, shared with other work (load average "
        f"at the end {head.get('load', '?')}). Times are wall clock on those cores.",
        "",
        "Each table (`tests/corpus/tables.py`: where it comes from, the user's fixes to the "
        "proposed spec, each with its reason) goes through `vertimrf spec`, `split --overlap "
        "0.8 --add-id rid --all`, `keys`, `secret share/open`, `config --epsilon 1 --delta "
        "1e-6 --max-rows M` (M: the next power of two at or above rows + 4096) and the roles "
        "(`server run`, `party run`) over folders, or over HTTPS where the transport says so. "
        "TVDs are against `shared.csv`, the records every party holds; Centralized is "
        "PrivMRF fitted on those records at the same budget and seed, sampling as many rows "
        "as the secure table. 1-way: the column furthest above max(2 x Centralized's, 0.02). "
        "Spent: the budget-spending steps any party sent (region counts, first release, "
        "re-measurement). A table run at several seeds (the split's, the roles' and "
        "Centralized's) is judged by its means over them: the 3-way ratio is the mean "
        "Secure TVD over the mean Centralized one, and each column's 1-way bound applies "
        "to the two means.",
        "",
        "## Summary",
        "",
    ]
    if ratios:
        worst = max(finished, key=lambda o: o.ratio)
        ok = [o for o in finished if o.one_way_ok()]
        lines += [
            f"- Runs: {len(outs)} ({len(pools)} tables and party counts, "
            f"{sum(len(o.seeds) > 1 for o in pools)} of them at several seeds); finished "
            f"{sum(o.status == 'finished' for o in outs)} runs ({len(finished)} tables and "
            "party counts, every seed); every run finished or stopped before spending: "
            f"{'yes' if all(o.acceptable() for o in outs) else 'NO'}; any traceback: "
            f"{'yes' if any(o.tracebacks for o in outs) else 'no'}.",
            f"- Median Secure / Centralized 3-way TVD ratio over the finished ones: "
            f"**{statistics.median(ratios):.3f}**; worst **{worst.ratio:.3f}** "
            f"({worst.table}, {worst.parties} parties, {worst.transport}, seeds "
            f"{_seeds(worst)}).",
            f"- Every column's 1-way TVD within max(2 x Centralized's, 0.02): "
            f"{len(ok)} of {len(finished)} finished"
            + ("." if len(ok) == len(finished) else "; the others:"),
        ]
        for o in finished:
            if not o.one_way_ok():
                col, sec, cen = o.worst_column()
                lines.append(
                    f"  - {o.table}, {o.parties} parties (seeds {_seeds(o)}): `{col}` "
                    f"{sec:.3f} against Centralized's {cen:.3f}"
                )
    stopped = [o for o in outs if o.status != "finished"]
    if stopped:
        lines += ["", "## Runs that did not finish", ""]
        for o in stopped:
            spent = ", ".join(o.released) or "nothing"
            lines.append(
                f"- {o.table}, {o.parties} parties, {o.transport}: **{o.status}** at "
                f"`{o.step}` (spent: {spent}): {o.message}"
            )
    lines += [
        "",
        "## Runs",
        "",
        "| table | parties | transport | seed | status | rows | cols | shared | 3-way secure | "
        "3-way central | ratio | worst column | its 1-way secure | central | 1-way ok | "
        "spent | traceback | time s (2 cores) | central s | peak MB |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|---|---:|---:|---:|",
    ]
    for o in outs:
        worst = o.worst_column()
        col, sec, cen = worst if worst else ("-", None, None)
        lines.append(
            f"| {o.table} | {o.parties} | {o.transport} | {getattr(o, 'seed', 0)} | "
            f"{o.status} | {o.rows:,} | "
            f"{o.cols} | {o.shared:,} | {_fmt(o.tvd3_secure)} | {_fmt(o.tvd3_central)} | "
            f"{_fmt(o.ratio, 2)} | {col} | {_fmt(sec)} | {_fmt(cen)} | "
            f"{('yes' if o.one_way_ok() else 'NO') if o.tvd1_secure else '-'} | "
            f"{len(o.released)}/3 | {', '.join(o.tracebacks) or 'no'} | "
            f"{o.seconds:.0f} | {o.central_seconds:.0f} | {o.peak_mb:.0f} |"
        )
    if head.get("defects"):
        lines += ["", "## Defects found", ""] + [f"- {d}" for d in head["defects"]]
    return "\n".join(lines) + "\n"


def _seeds(o: Row) -> str:
    return ", ".join(str(x) for x in getattr(o, "seeds", [0]))


def _write(path: Path, md: Path, head: dict, rows: dict, order: dict) -> None:
    """The rows, in the corpus's order, as JSON at ``path`` and as the table at ``md``."""
    ordered = sorted(rows.values(), key=lambda r: order.get(_key(r), 1 << 30))
    head["load"] = load_average()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**head, "rows": ordered}, indent=1) + "\n")
    md.write_text(markdown(head, ordered))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = _harness(["--list"], ROOT)
    ap.add_argument("--tables", nargs="+", default=names, choices=names)
    ap.add_argument("--parties", nargs="+", type=int, default=[2, 3])
    ap.add_argument(
        "--cap", type=float, default=900.0, help="seconds for a table's path (BIG_CAP's at least)"
    )
    ap.add_argument("--seeds", nargs="+", type=int, default=[0],
                    help="the split's, roles' and Centralized's seeds (default 0)")  # fmt: skip
    ap.add_argument("--no-https", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep every run's folder")
    ap.add_argument("--merge", nargs="+", default=[], help="also take the rows of these JSONs")
    ap.add_argument("--no-run", action="store_true", help="only rewrite the table")
    ap.add_argument("--json", default=str(RESULTS / "corpus.json"))
    ap.add_argument("--md", default=str(RESULTS / "corpus.md"))
    args = ap.parse_args(argv)
    path = Path(args.json)
    old = json.loads(path.read_text()) if path.exists() else {"rows": []}
    rows = {_key(r): r for r in old["rows"]}
    for other in args.merge:
        rows.update({_key(r): r for r in json.loads(Path(other).read_text())["rows"]})
    head = {**run_head(__file__, argv), "defects": old.get("defects", [])}
    # Every table at the first party count, then the next; HTTPS, then the largest, last.
    chosen = sorted((t for t in names if t in args.tables), key=lambda t: t in BIG_CAP)
    jobs = [(t, m, False) for m in args.parties for t in chosen if t not in BIG_CAP]
    if not args.no_https:
        jobs += [(t, HTTPS[t], True) for t in chosen if t in HTTPS]
    jobs += [(t, m, False) for m in args.parties for t in chosen if t in BIG_CAP]
    jobs = [(*job, seed) for seed in args.seeds for job in jobs] if not args.no_run else []
    seeds = sorted({r.get("seed", 0) for r in rows.values()} | set(args.seeds))
    order = {
        key: i
        for i, key in enumerate(
            (t, m, tr, sd) for t in names for m in (2, 3) for tr in ("folders", "https")
            for sd in seeds
        )
    }  # fmt: skip
    for name, parties, https, seed in jobs:
        work = Path(tempfile.mkdtemp(prefix=f"corpus-{name.split(':')[-1]}-{parties}-"))
        cap = max(args.cap, BIG_CAP.get(name, 0.0))
        out = work / "outcome.json"
        run = [name, "--parties", str(parties), "--cap", str(cap), "--dir", str(work / "run"),
               "--json", str(out), "--seed", str(seed),
               *(["--https"] if https else [])]  # fmt: skip
        try:
            _harness(run, ROOT)
            row = json.loads(out.read_text())
        except (RuntimeError, OSError, ValueError) as exc:  # the harness itself failed
            transport = "https" if https else "folders"
            row = {**json.loads(_EMPTY), "table": name, "parties": parties,
                   "transport": transport, "status": "harness error",
                   "message": str(exc)[:400]}  # fmt: skip
        row["seed"] = seed
        rows[_key(row)] = row
        r = Row(row)
        print(
            f"{name} {parties} {r.transport} seed {seed}: {r.status} ratio {_fmt(r.ratio, 2)} "
            f"{r.seconds:.0f} s {r.message[:200]}",
            flush=True,
        )
        if r.status == "finished" and not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"  kept {work}", flush=True)
        _write(path, Path(args.md), head, rows, order)
    _write(path, Path(args.md), head, rows, order)
    print(Path(args.md).read_text())
    return 0


# The fields of a row whose harness did not write one.
_EMPTY = json.dumps({
    "step": "", "message": "", "tracebacks": [], "released": [], "rows": 0, "cols": 0,
    "shared": 0, "synth_rows": 0, "tvd3_secure": None, "tvd3_central": None,
    "tvd1_secure": {}, "tvd1_central": {}, "seconds": 0.0, "path_seconds": 0.0,
    "peak_mb": 0.0, "central_seconds": 0.0,
})  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
