"""The party step commands' time before and after a party aligns its table once per run (issue
35, item 6): ``bench_secure_cli.py`` (1,000,000 rows x 15 columns over 3 parties, every
command its own process) run on two trees back to back, alternating.

``--pipeline`` is the secure method's pipeline: select (the default) or paper, whose
commands begin with ``party local``. ``--before TREE`` is a checkout of the code before
(``git worktree add DIR REV``); the after is this tree. Each tree's vertimrf is the one on
PYTHONPATH for its runs (the benchmark script is this tree's for both). A small warm-up run
on each tree first lets Numba compile and cache its kernels there. Then ``--pairs`` pairs of
runs (before, after); reported: each party step command's wall time and peak RSS (the median
over the pairs), each party's total over its step commands, and the ratio after / before.

    python benchmarks/bench_align_once.py --before DIR --json J --md M
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, table_head, write_json  # noqa: E402
from bench_secure_cli import PARTIES, PARTY_STEPS  # noqa: E402

from vertimrf.io import atomic_write_text  # noqa: E402

HERE = Path(__file__).resolve().parent


def bench(tree: Path, rows: int, work: Path, pipeline: str) -> dict:
    """One bench_secure_cli run of ``rows`` rows of ``pipeline`` on ``tree``'s code; its
    JSON run."""
    out = Path(tempfile.mkstemp(suffix=".json", dir=work)[1])
    env = {**os.environ, "PYTHONPATH": str(tree)}
    max_rows = 1 << (rows - 1).bit_length()
    cmd = [sys.executable, str(HERE / "bench_secure_cli.py"), "--rows", str(rows),
           "--max-rows", str(max_rows), "--workdir", str(work), "--json", str(out),
           "--pipeline", pipeline]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{tree}: {rows} rows failed:\n{proc.stderr[-3000:]}")
    run = json.loads(out.read_text())["runs"][0]
    out.unlink()
    keep = ("role", "step", "wall", "max_rss_mb", "phases")
    return {
        "load_average": run["load_average"],
        "commands": [{k: c[k] for k in keep} for c in run["commands"] if c["step"] in PARTY_STEPS],
    }


def summary(runs: list[dict]) -> dict:
    """The median wall and peak RSS of each party step command over ``runs``, and each
    party's median total."""
    cells: dict[tuple[str, str], list[dict]] = {}
    for run in runs:
        for c in run["commands"]:
            cells.setdefault((c["role"], c["step"]), []).append(c)
    steps = {
        f"{role} {step}": {
            "wall": statistics.median(c["wall"] for c in cs),
            "max_rss_mb": statistics.median(c["max_rss_mb"] for c in cs),
        }
        for (role, step), cs in cells.items()
    }
    totals = {
        n: statistics.median(
            sum(c["wall"] for c in run["commands"] if c["role"] == n) for run in runs
        )
        for n in PARTIES
    }
    return {"steps": steps, "totals": totals, "all": sum(totals.values())}


def markdown(head: dict, before: dict, after: dict) -> str:
    lines = [
        "# A party aligns its table once per run: the step commands before and after "
        "(`bench_align_once.py`)",
        "",
        f"Command: `python benchmarks/bench_align_once.py --before TREE --pairs "
        f"{head['pairs']} --pipeline {head['pipeline']}`. {head['rows']:,} rows x 15 columns "
        f"over 3 parties, max_rows {head['max_rows']:,}, method secure ({head['pipeline']} "
        "pipeline), each command its own process (`bench_secure_cli.py`). Before: the code "
        "of commit "
        f"{head['before_commit']}; after: {head['after_commit']} (with its uncommitted "
        "changes, if any). The runs alternate (before, after) "
        f"{head['pairs']} times after a warm-up run of each tree; the figures are the "
        f"medians. Machine: {head['machine']}, {head['memory_gb']:.0f} GB RAM, shared with "
        "other work (1-minute load averages at each run's start and end: before "
        f"{head['load']['before']}, after {head['load']['after']}).",
        "",
        "| party step command | before wall (s) | after wall (s) | after / before | "
        "before peak RSS (MB) | after peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for key, b in before["steps"].items():
        a = after["steps"][key]
        lines.append(
            f"| {key} | {b['wall']:.2f} | {a['wall']:.2f} | {a['wall'] / b['wall']:.2f} | "
            f"{b['max_rss_mb']:,.0f} | {a['max_rss_mb']:,.0f} |"
        )
    lines += ["", "| total of the step commands | before (s) | after (s) | after / before |"]
    lines.append("|---|---:|---:|---:|")
    for n in PARTIES:
        b, a = before["totals"][n], after["totals"][n]
        lines.append(f"| party {n} | {b:.1f} | {a:.1f} | {a / b:.2f} |")
    b, a = before["all"], after["all"]
    lines.append(f"| all three parties | {b:.1f} | {a:.1f} | {a / b:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", required=True, help="a checkout of the code before")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=2, help="runs of each tree, alternating")
    parser.add_argument("--pipeline", choices=("select", "paper"), default="select")
    parser.add_argument("--warmup-rows", type=int, default=20_000)
    parser.add_argument("--workdir", default=None, help="folder for the runs (default: a temp)")
    parser.add_argument("--json", default=None, help="also write the figures as JSON")
    parser.add_argument("--md", default=None, help="write the results as Markdown")
    args = parser.parse_args()
    trees = {"before": Path(args.before).resolve(), "after": HERE.parent}
    with tempfile.TemporaryDirectory(dir=args.workdir) as work:
        for tree in trees.values():
            bench(tree, args.warmup_rows, Path(work), args.pipeline)
        runs: dict[str, list[dict]] = {k: [] for k in trees}
        for i in range(args.pairs):
            for k, tree in trees.items():
                runs[k].append(bench(tree, args.rows, Path(work), args.pipeline))
                print(k, i, [round(c["wall"], 2) for c in runs[k][-1]["commands"]], flush=True)
    head = {
        **table_head(args.rows, 1 << (args.rows - 1).bit_length()),
        "pairs": args.pairs,
        "pipeline": args.pipeline,
        "before_commit": git_commit(trees["before"]),
        "after_commit": git_commit(trees["after"]),
        "load": {
            k: [[round(x, 2) for x in r["load_average"]] for r in rs] for k, rs in runs.items()
        },
    }
    result = {k: summary(rs) for k, rs in runs.items()}
    write_json(args.json, {**head, "runs": runs, **result})
    if args.md:
        atomic_write_text(args.md, markdown(head, result["before"], result["after"]))
    print(markdown(head, result["before"], result["after"]))


if __name__ == "__main__":
    main()
