"""Rows against time, bytes and memory: ``bench_secure_cli.py`` (1M, 3M and 10M rows x 15
columns x 3 parties, every command its own process, peaks by GNU time) run once per size on
this tree, one after another, then a projection to 100M rows.

The projection: each party's time and the bytes it sends are linear in max_rows
(least-squares fits through the measured sizes, y = a + b max_rows). Its peak memory is not:
a party aligns its table from its file about 2^20 records at a time and streams its blobs in
row blocks, so the plan's memory model (``vertimrf config``'s estimate,
`vertimrf.protocol.plan`) is flat past max_rows 2^20; the projected peak is the largest
size's measured peak plus the model's change from that size to 100M rows. The model is
shown next to the measurements at each size.

    python benchmarks/bench_scaling.py --rows 1000000,3000000,10000000 --json J --md M
    python benchmarks/bench_scaling.py --render J --md M   # the tables again, from a JSON
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, machine, write_json  # noqa: E402
from bench_secure_cli import PARTIES, PARTY_STEPS, SIZES  # noqa: E402

from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.io import atomic_write_text  # noqa: E402
from vertimrf.protocol import (
    from_preset,
)
from vertimrf.protocol.plan import run_plan

HERE = Path(__file__).resolve().parent
PROJECT = 100_000_000


def padded(rows: int) -> int:
    return 1 << (rows - 1).bit_length()


def modelled(max_rows: int) -> dict[str, float]:
    """The plan's peak memory (bytes) of each role at ``max_rows``."""
    spec = DomainSpec.from_dict({f"c{j}": s for j, s in enumerate(SIZES)})
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=spec, max_rows=max_rows, max_memory_gb=1e4,
        parties=[(n, [f"c{j}" for j in c]) for n, c in PARTIES.items()],
    )  # fmt: skip
    plan = run_plan(cfg)
    return {r.role: r.peak for r in plan.roles} | {"ring_bits": plan.ring_bits}


def one(rows: int, work: Path) -> dict:
    out = work / f"{rows}.json"
    cmd = [sys.executable, str(HERE / "bench_secure_cli.py"), "--rows", str(rows),
           "--max-rows", str(padded(rows)), "--workdir", str(work), "--json", str(out)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{rows} rows failed:\n{proc.stderr[-3000:]}")
    run = json.loads(out.read_text())["runs"][0]
    peaks = {
        n: max(c["max_rss_mb"] for c in run["commands"] if c["role"] == n
               and c["step"] in PARTY_STEPS)
        for n in PARTIES
    }  # fmt: skip
    server = max(c["max_rss_mb"] for c in run["commands"] if c["role"] == "S")
    res = {
        "rows": rows,
        "max_rows": padded(rows),
        "party_seconds": run["party_totals"],
        "server_seconds": run["server_total"],
        "sent": {n: sum(b.values()) for n, b in run["message_bytes"].items()},
        "party_peak_mb": peaks,
        "server_peak_mb": server,
        "model": modelled(padded(rows)),
        "load_average": run["load_average"],
        "commands": [
            {k: c[k] for k in ("role", "step", "wall", "max_rss_mb")} for c in run["commands"]
        ],
    }
    print(json.dumps({k: res[k] for k in ("rows", "party_seconds", "sent", "party_peak_mb",
                                          "server_peak_mb")}), flush=True)  # fmt: skip
    return res


def projection(runs: list[dict]) -> dict:
    """Linear fits in max_rows through the measured runs, evaluated at 100M rows."""
    x = np.array([r["max_rows"] for r in runs], float)
    target = padded(PROJECT)
    out: dict = {"rows": PROJECT, "max_rows": target, "model": modelled(target)}
    for key in ("party_seconds", "sent"):
        out[key] = {}
        for n in PARTIES:
            y = np.array([r[key][n] for r in runs], float)
            b, a = np.polyfit(x, y, 1) if len(runs) > 1 else (y[0] / x[0], 0.0)
            out[key][n] = a + b * target
    last = max(runs, key=lambda r: r["max_rows"])
    out["party_peak_mb"] = {
        n: last["party_peak_mb"][n] + (out["model"][n] - last["model"][n]) / (1 << 20)
        for n in PARTIES
    }
    return out


def markdown(head: dict, runs: list[dict], proj: dict) -> str:
    mb = 1 << 20
    lines = [
        "# Scaling of method secure with rows (`bench_scaling.py`)",
        "",
        f"{head['machine']}. Each size is one `bench_secure_cli.py` run on this tree "
        f"(commit {head['commit']}): 15 columns x 3 parties, epsilon 1, delta 1e-6, max_rows "
        "the next power of two, every command its own process, peaks by GNU time.",
        "",
        "| rows | max_rows | ring | party time A / B / C (s) | party s per 1M rows | bytes "
        "sent A / B / C | bytes per row (all) | party peak A / B / C (MB) | model (MB) | "
        "server s | server peak (MB) |",
        "|---:|---:|---:|---|---:|---|---:|---|---|---:|---:|",
    ]
    for r in runs + [dict(proj, projected=True)]:
        t = r["party_seconds"]
        sent = r["sent"]
        model = " / ".join(f"{r['model'][n] / mb:,.0f}" for n in PARTIES)
        peaks = " / ".join(f"{r['party_peak_mb'][n]:,.0f}" for n in PARTIES)
        label = f"{r['rows']:,}" + (" (projected)" if r.get("projected") else "")
        lines.append(
            f"| {label} | {r['max_rows']:,} | {r['model']['ring_bits']} | "
            + " / ".join(f"{t[n]:.1f}" for n in PARTIES)
            + f" | {max(t.values()) / r['rows'] * 1e6:.1f} | "
            + " / ".join(f"{sent[n] / 1e6:,.0f} MB" for n in PARTIES)
            + f" | {sum(sent.values()) / r['rows']:.0f} | {peaks} | {model} | "
            + (f"{r['server_seconds']:.1f} | {r['server_peak_mb']:,.0f} |"
               if "server_seconds" in r else f"- | {r['model']['server'] / mb:,.0f} (model) |")
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="1000000,3000000,10000000")
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--md", default=None)
    parser.add_argument(
        "--keep", default=None, help="a results JSON whose runs of other sizes to keep"
    )
    parser.add_argument("--render", default=None, help="a results JSON to tabulate again")
    args = parser.parse_args()
    if args.render:
        done = json.loads(Path(args.render).read_text())
        head = {"machine": done["machine"], "commit": done["commit"]}
        atomic_write_text(args.md, markdown(head, done["runs"], projection(done["runs"])))
        return
    head = {"machine": machine(), "commit": git_commit(HERE)}
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        runs = [one(int(n), Path(tmp)) for n in args.rows.split(",")]
    if args.keep:
        done = {r["rows"] for r in runs}
        kept = json.loads(Path(args.keep).read_text())["runs"]
        runs = sorted(runs + [r for r in kept if r["rows"] not in done], key=lambda r: r["rows"])
    proj = projection(runs)
    write_json(args.json, {**head, "runs": runs, "projection": proj})
    if args.md:
        atomic_write_text(args.md, markdown(head, runs, proj))


if __name__ == "__main__":
    main()
