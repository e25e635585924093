"""The cost of partial record sets (issue 36): each party's time over its step commands and
the bytes it sends, against today's equal-set run, in the same run on the same machine.

``bench_secure_cli.py``'s table (1,000,000 rows x 15 columns over 3 parties, every command
its own process, max_rows 2^20) run twice, alternating, ``--pairs`` times:

* **equal**: every party holds every record (``--record-sets equal``, today's run);
* **partial**: the same table split with ``vertimrf split``'s rule at ``--overlap`` 0.7
  (:func:`~vertimrf.datasets.overlap.split_records`): 70% of each party's records are held
  by every party and the rest by that party alone, so every pair of parties shares 70% of
  each one's records and the union is the whole table (``--record-sets partial``: the
  commands add ``server admit`` and ``party tokens``).

Both runs have the same public max_rows, so the same round-1 layout. Reported: each party's
median total over its step commands and the median bytes it sends (commitment, tokens,
feature blobs of both rounds, both releases), and the ratios partial / equal (targets: time
at most 1.3, bytes at most 1.1).

    python benchmarks/bench_partial_cost.py --pairs 3 --json J --md M
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, table_head, write_json  # noqa: E402
from bench_secure_cli import PARTIES  # noqa: E402

from vertimrf.io import atomic_write_text  # noqa: E402

HERE = Path(__file__).resolve().parent
VARIANTS = {"equal": ("equal", 1.0), "partial": ("partial", 0.7)}
TIME_TARGET, BYTES_TARGET = 1.3, 1.1
KINDS = ("commit", "tokens", "blobs", "select", "group_blobs", "measure")


def bench(variant: str, rows: int, max_rows: int, work: Path) -> dict:
    """One bench_secure_cli run of ``variant``: each party's total time and bytes sent."""
    sets, overlap = VARIANTS[variant]
    out = Path(tempfile.mkstemp(suffix=".json", dir=work)[1])
    cmd = [sys.executable, str(HERE / "bench_secure_cli.py"), "--rows", str(rows),
           "--max-rows", str(max_rows), "--workdir", str(work), "--json", str(out),
           "--record-sets", sets, "--overlap", str(overlap)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{variant}: {rows} rows failed:\n{proc.stderr[-3000:]}")
    run = json.loads(out.read_text())["runs"][0]
    out.unlink()
    return {
        "load_average": run["load_average"],
        "party_totals": run["party_totals"],
        "bytes": {n: sum(b.values()) for n, b in run["message_bytes"].items()},
        "message_bytes": run["message_bytes"],
        "steps": {
            f"{c['role']} {c['step']}": c["wall"] for c in run["commands"] if c["role"] in PARTIES
        },
    }


def medians(runs: list[dict], field: str) -> dict[str, float]:
    """The median of ``field`` (per party) over ``runs``."""
    return {n: statistics.median(r[field][n] for r in runs) for n in PARTIES}


def kinds(runs: list[dict]) -> dict[str, float]:
    """The median over ``runs`` of the bytes of each kind, summed over the parties."""
    return {
        k: statistics.median(sum(b[k] for b in r["message_bytes"].values()) for r in runs)
        for k in KINDS
    }


def markdown(head: dict, res: dict) -> str:
    """The results as Markdown."""
    eq, pa = res["equal"], res["partial"]
    lines = [
        "# Partial record sets: party time and bytes against equal sets (`bench_partial_cost.py`)",
        "",
        f"{head['rows']:,} rows x 15 columns over 3 parties, max_rows {head['max_rows']:,}, "
        "epsilon 1, delta 1e-6, unseeded; every command its own process, one after another. "
        "equal: every party holds every record. partial: `--overlap 0.7` (each party holds "
        "70% shared + 30% its own, 625,000 records; every pair shares 70%), "
        f"`--record-sets partial`. {res['pairs']} alternating pairs; medians.",
        "",
        f"Machine: {head['machine']}, `nproc` = {head['nproc']}; 1-minute load averages "
        f"{res['loads']} (other work shared the cores where above 1). Code: {res['commit']}.",
        "",
        "| party | time equal (s) | time partial (s) | ratio (target <= 1.3) | bytes equal | "
        "bytes partial | ratio (target <= 1.1) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for n in PARTIES:
        t, b = res["time_ratio"][n], res["bytes_ratio"][n]
        lines.append(
            f"| {n} | {eq['time'][n]:.1f} | {pa['time'][n]:.1f} | {t:.2f} | "
            f"{eq['bytes'][n]:,.0f} | {pa['bytes'][n]:,.0f} | {b:.3f} |"
        )
    lines += [
        "",
        "Bytes sent by kind (median over the runs, all parties): the commitment, the tokens "
        "and the round-1 feature blobs and first release are fixed by the config; the round-2 "
        "group blobs and the re-measurement follow the server's selection, a DP output that "
        "differs from run to run.",
        "",
        "| kind | equal | partial | ratio |",
        "|---|---:|---:|---:|",
    ]
    for kind in KINDS:
        a, b = eq["kinds"][kind], pa["kinds"][kind]
        lines.append(f"| {kind} | {a:,.0f} | {b:,.0f} | {'' if not a else f'{b / a:.3f}'} |")
    lines += ["", "Per step (median wall, s):", "", "| step | equal | partial |", "|---|---:|---:|"]
    for step in sorted(set(eq["steps"]) | set(pa["steps"])):
        a, b = eq["steps"].get(step), pa["steps"].get(step)
        lines.append(f"| {step} | {'' if a is None else f'{a:.2f}'} | "
                     f"{'' if b is None else f'{b:.2f}'} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--max-rows", type=int, default=1 << 20)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--md", default=None)
    parser.add_argument("--render", default=None, help="only write --md from this JSON")
    args = parser.parse_args()
    if args.render:
        done = json.loads(Path(args.render).read_text())
        for v in VARIANTS:
            done[v]["kinds"] = kinds(done[v]["runs"])
        atomic_write_text(args.md, markdown(done, done))
        return
    head = table_head(args.rows, args.max_rows)
    work = Path(tempfile.mkdtemp(prefix="bench_partial_cost.", dir=args.workdir))
    # warm-up: Numba's cache (max_rows with room for 2,000 records and every region's dummies)
    bench("equal", 2000, 8192, work)
    bench("partial", 2000, 8192, work)
    runs: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    loads = []
    for i in range(args.pairs):
        for v in VARIANTS if i % 2 == 0 else reversed(VARIANTS):
            runs[v].append(bench(v, args.rows, args.max_rows, work))
            loads.append(round(runs[v][-1]["load_average"][0], 2))
            print(v, runs[v][-1]["party_totals"], runs[v][-1]["bytes"], flush=True)
    out = {v: {"time": medians(r, "party_totals"), "bytes": medians(r, "bytes"),
               "kinds": kinds(r),
               "steps": {s: statistics.median(x["steps"][s] for x in r) for s in r[0]["steps"]},
               "runs": r}
           for v, r in runs.items()}  # fmt: skip
    res = {
        **out,
        "pairs": args.pairs,
        "loads": loads,
        "commit": git_commit(HERE.parent),
        "time_ratio": {n: out["partial"]["time"][n] / out["equal"]["time"][n] for n in PARTIES},
        "bytes_ratio": {n: out["partial"]["bytes"][n] / out["equal"]["bytes"][n] for n in PARTIES},
    }
    print(res["time_ratio"], res["bytes_ratio"])
    write_json(args.json, {**head, **res})
    if args.md:
        atomic_write_text(args.md, markdown(head, res))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
