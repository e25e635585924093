"""Features in two rounds and the 32-bit ring against the one-round code, in the same run.

Runs ``bench_secure_cli.py`` (1,000,000 rows x 15 columns x 3 parties, every command its own
process) from two source trees, alternating: the baseline tree (a checkout of the commit
before the change, e.g. ``git worktree add --detach ../base d48088d``) and this tree. Each
tree runs with its own ``bench_secure_cli.py``, so each runs its own list of steps. Each
repetition draws fresh noise from the cryptographic sampler (the runs are unseeded, as a
real run is); the data is the same (seed 0).

Reported per run: the bytes each party sends (feature blobs of both rounds and its
releases), each party's time over its steps, the server's time, the peak RSS of every
command, and the mean 3-way TVD over all 455 triples of the synthetic table against the
data.

    python benchmarks/bench_two_rounds.py --baseline ../base --reps 3 --json J --md M
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from math import comb
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, table_head, write_json  # noqa: E402

from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.io import atomic_write_text  # noqa: E402
from vertimrf.metrics import tvd  # noqa: E402

HERE = Path(__file__).resolve().parents[1]


def three_way_tvd(root: Path) -> float:
    """Mean TVD over every 3-way marginal: the parties' tables joined on the ID, against
    the server's synthetic CSV."""
    spec = DomainSpec.from_json(root / "spec.json")
    frames = [pd.read_csv(p).set_index("id") for p in sorted(root.glob("[ABC]/[ABC].csv"))]
    real = pd.concat(frames, axis=1).sort_index()
    real = real[list(spec.names)]
    synth = pd.read_csv(root / "S" / "synth.csv")[list(spec.names)]
    return tvd(real, synth, spec, ways=3, n_marginals=comb(len(spec.names), 3), seed=0)


def one(tree: Path, label: str, rep: int, args: argparse.Namespace, work: Path) -> dict:
    """One bench_secure_cli run from ``tree``; its figures and TVD (the folder is deleted)."""
    folder = work / f"{label}-{rep}"
    folder.mkdir()
    out_json = work / f"{label}-{rep}.json"
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str(tree / "benchmarks" / "bench_secure_cli.py"), "--rows",
           str(args.rows), "--max-rows", str(args.max_rows), "--keep", "--workdir",
           str(folder), "--json", str(out_json)]  # fmt: skip
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{label} run {rep} failed:\n{proc.stderr[-3000:]}")
    (root,) = folder.glob("bench_secure_cli.*")
    run = json.loads(out_json.read_text())["runs"][0]
    res = {
        "tree": label,
        "rep": rep,
        "message_bytes": run["message_bytes"],
        "sent": {n: sum(b.values()) for n, b in run["message_bytes"].items()},
        "party_totals": run["party_totals"],
        "server_total": run["server_total"],
        "widths": run["widths"],
        "load_average": run["load_average"],
        "commands": [
            {k: c[k] for k in ("role", "step", "wall", "max_rss_mb")} for c in run["commands"]
        ],
        "tvd3": three_way_tvd(root),
    }
    shutil.rmtree(folder)
    print(json.dumps({k: res[k] for k in ("tree", "rep", "sent", "party_totals", "tvd3")}),
          flush=True)  # fmt: skip
    return res


def _mean_sd(v: list[float]) -> str:
    return f"{np.mean(v):.4f} ± {np.std(v, ddof=1):.4f}" if len(v) > 1 else f"{v[0]:.4f}"


def markdown(head: dict, rows: list[dict]) -> str:
    base = [r for r in rows if r["tree"] == "baseline"]
    new = [r for r in rows if r["tree"] == "current"]
    parties = list(base[0]["sent"])
    lines = [
        "# Two rounds and the smallest ring against the one-round code (`bench_two_rounds.py`)",
        "",
        f"{head['rows']:,} rows x 15 columns x 3 parties (the `bench_secure_cli` table), "
        f"max_rows {head['max_rows']:,}, epsilon 1, delta 1e-6, unseeded runs. Baseline: the "
        f"tree of commit {head['baseline_commit']}; current: {head['current_commit']}. The two "
        f"alternate, {len(base)} repetitions each, every command its own process.",
        "",
        f"Machine: {head['machine']}, {head['memory_gb']:.0f} GB RAM.",
        "",
        "| tree | rep | bytes sent A / B / C | total (B) | party time A / B / C (s) | server (s) "
        "| 3-way TVD | load avg start/end |",
        "|---|---:|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        sent = " / ".join(f"{r['sent'][n]:,}" for n in parties)
        times = " / ".join(f"{r['party_totals'][n]:.1f}" for n in parties)
        load = "/".join(f"{x:.2f}" for x in r["load_average"])
        lines.append(
            f"| {r['tree']} | {r['rep']} | {sent} | {sum(r['sent'].values()):,} | {times} | "
            f"{r['server_total']:.1f} | {r['tvd3']:.4f} | {load} |"
        )
    total_b = np.mean([sum(r["sent"].values()) for r in base])
    total_n = np.mean([sum(r["sent"].values()) for r in new])
    lines += [
        "",
        "| figure | baseline | current | current / baseline |",
        "|---|---:|---:|---:|",
        f"| total bytes sent, mean | {total_b:,.0f} | {total_n:,.0f} | {total_n / total_b:.3f} |",
    ]
    for n in parties:
        tb = np.mean([r["party_totals"][n] for r in base])
        tn = np.mean([r["party_totals"][n] for r in new])
        lines.append(f"| party {n} time, mean (s) | {tb:.1f} | {tn:.1f} | {tn / tb:.2f} |")
        pb = max(c["max_rss_mb"] for r in base for c in r["commands"] if c["role"] == n)
        pn = max(c["max_rss_mb"] for r in new for c in r["commands"] if c["role"] == n)
        lines.append(f"| party {n} peak RSS (MB) | {pb:,.0f} | {pn:,.0f} | {pn / pb:.2f} |")
    sb = np.mean([r["server_total"] for r in base])
    sn = np.mean([r["server_total"] for r in new])
    lines.append(f"| server time, mean (s) | {sb:.1f} | {sn:.1f} | {sn / sb:.2f} |")
    tb_v, tn_v = [r["tvd3"] for r in base], [r["tvd3"] for r in new]
    lines.append(f"| 3-way TVD, mean ± sd | {_mean_sd(tb_v)} | {_mean_sd(tn_v)} | "
                 f"{np.mean(tn_v) / np.mean(tb_v):.3f} |")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="a checkout of the baseline commit")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--max-rows", type=int, default=1 << 20)
    parser.add_argument("--workdir", default=None, help="folder for the runs (default: a temp)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--md", default=None)
    args = parser.parse_args()
    baseline = Path(args.baseline).resolve()
    head = {
        **table_head(args.rows, args.max_rows),
        "baseline_commit": git_commit(baseline),
        "current_commit": git_commit(HERE),
    }
    print(head, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        for rep in range(args.reps):
            for label, tree in (("baseline", baseline), ("current", HERE)):
                rows.append(one(tree, label, rep, args, Path(tmp)))
    write_json(args.json, {**head, "runs": rows})
    if args.md:
        atomic_write_text(args.md, markdown(head, rows))


if __name__ == "__main__":
    main()
