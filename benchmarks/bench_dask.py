"""Party A on a 2-worker Dask LocalCluster against the streamed single-process run, same
data, same keys, same config: A's time per step and that every message is the same bytes.

The table is ``bench_secure_cli.py``'s (15 columns x 3 parties, ``--rows`` rows). A's table is
a Parquet dataset of 8 files, read by both runs; B and C read their CSV files. The config
has ``--buckets`` PRF buckets. The run's commands go once with every party in its own
process reading its table in batches and aligning it through temporary files (streamed:
``FileTable``, since max_rows is past one part), then again in a copy of the folder made
before the deal, with A's four commands given ``--workers 2`` (a LocalCluster of 2 worker
processes started by each command). The run is unseeded (noise from the keys and secrets, as
in a real run); only the sampling of the synthetic rows is seeded (``--sample-seed 0``).
Every message (deals, blobs of both rounds, releases, request) and the synthetic CSV are
compared byte for byte. Peaks are GNU time's: for the
Dask run, the largest process among A's command and its workers, not their sum.

    python benchmarks/bench_dask.py --rows 10000000 --buckets 16 --json J --md M
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, git_commit, machine, write_json  # noqa: E402
from bench_secure_cli import PARTY_STEPS, make_data, secure_steps, setup, stepper  # noqa: E402

from vertimrf.io import atomic_write_text  # noqa: E402

HERE = Path(__file__).resolve().parent
MESSAGES = ("*.deal", "*.select-deal", "*.features", "*.groups", "*.vmrf", "request.json")
FILES = 8
SAMPLE = ("--sample-seed", "0")  # the synthetic rows' sampling (post-processing) seeded


def parquet_dataset(csv: Path, folder: Path) -> None:
    """``csv`` as a Parquet dataset of :data:`FILES` files, rows in the CSV's order."""
    table = pa_csv.read_csv(csv)
    folder.mkdir()
    step = -(-table.num_rows // FILES)
    for j in range(FILES):
        pq.write_table(table.slice(j * step, step), folder / f"part-{j}.parquet")


def messages(root: Path) -> dict[str, Path]:
    """Every message file of the run, and the synthetic CSV, by path under ``root``."""
    found = {str(p.relative_to(root)): p for g in MESSAGES for p in root.glob(f"*/{g}")}
    return found | {"S/synth.csv": root / "S" / "synth.csv"}


def run(args: argparse.Namespace, root: Path) -> dict:
    root.mkdir()
    start = time.perf_counter()
    make_data(root, args.rows, args.seed)
    parquet_dataset(root / "A" / "A.csv", root / "A" / "A.parquet")
    print(f"data: {args.rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
    log: list[dict] = []
    setup(root, None, args.max_rows, stepper(root, log), ["--buckets", str(args.buckets)])
    dask_root = root.parent / f"{root.name}-dask"
    shutil.copytree(root, dask_root, symlinks=True)
    runs = {}
    for label, folder, extra in (
        ("streamed", root, ["--data", "A/A.parquet"]),
        ("dask", dask_root, ["--data", "A/A.parquet", "--workers", str(args.workers)]),
    ):
        print(f"-- {label}", flush=True)
        steps: list[dict] = []
        load = os.getloadavg()[0]
        secure_steps(folder, stepper(folder, steps), {"A": extra, "S": SAMPLE})
        runs[label] = {
            "load_average": [load, os.getloadavg()[0]],
            "commands": [{k: c[k] for k in ("role", "step", "wall", "max_rss_mb")} for c in steps],
        }
    want, got = messages(root), messages(dask_root)
    compared = {k: filecmp.cmp(p, got[k], shallow=False) for k, p in want.items() if k in got}
    return {
        "rows": args.rows,
        "max_rows": args.max_rows,
        "buckets": args.buckets,
        "workers": args.workers,
        "runs": runs,
        "files_compared": len(compared),
        "missing": sorted(set(want) ^ set(got)),
        "different": sorted(k for k, same in compared.items() if not same),
        "bytes_compared": sum(p.stat().st_size for p in want.values()),
    }


def a_steps(run_: dict) -> dict[str, dict]:
    return {c["step"]: c for c in run_["commands"] if c["role"] == "A" and c["step"] in PARTY_STEPS}


def markdown(head: dict, res: dict) -> str:
    s, d = a_steps(res["runs"]["streamed"]), a_steps(res["runs"]["dask"])
    lines = [
        "# Party A on Dask against the streamed run (`bench_dask.py`)",
        "",
        f"Command: `{head['command']}`. {head['machine']}; commit {head['commit']}. "
        f"{res['rows']:,} rows x 15 columns x 3 parties, max_rows {res['max_rows']:,}, "
        f"{res['buckets']} PRF buckets; A's table a Parquet dataset of {FILES} files; the Dask "
        f"run's A commands each start a LocalCluster of {res['workers']} worker processes.",
        "",
        f"Same bytes: {res['files_compared']} files compared ({res['bytes_compared']:,} bytes: "
        "deals, blobs of both rounds, releases, request, synthetic CSV); different: "
        f"{res['different'] or 'none'}; missing on one side: {res['missing'] or 'none'}.",
        "",
        "| A's step | streamed s | Dask s | ratio | streamed peak MB | Dask peak MB (largest) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for step in PARTY_STEPS:
        a, b = s[step], d[step]
        lines.append(
            f"| {step} | {a['wall']:.1f} | {b['wall']:.1f} | {b['wall'] / a['wall']:.2f} | "
            f"{a['max_rss_mb']:.0f} | {b['max_rss_mb']:.0f} |"
        )
    ta, tb = sum(c["wall"] for c in s.values()), sum(c["wall"] for c in d.values())
    lines.append(f"| total | {ta:.1f} | {tb:.1f} | {tb / ta:.2f} | | |")
    for label in ("streamed", "dask"):
        peaks = {
            n: max(c["max_rss_mb"] for c in res["runs"][label]["commands"] if c["role"] == n
                   and c["step"] in PARTY_STEPS)
            for n in ("A", "B", "C")
        }  # fmt: skip
        lines.append("")
        lines.append(
            f"{label}: party peaks A / B / C {peaks['A']:.0f} / {peaks['B']:.0f} / "
            f"{peaks['C']:.0f} MB; load average before / after "
            f"{res['runs'][label]['load_average'][0]:.2f} / "
            f"{res['runs'][label]['load_average'][1]:.2f}."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--max-rows", type=int, default=None, help="default: the next power of 2")
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument("--workdir", default=None, help="folder for the runs (default: a temp)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--md", default=None)
    args = parser.parse_args()
    args.max_rows = args.max_rows or 1 << (args.rows - 1).bit_length()
    head = {
        "command": command_line("benchmarks/bench_dask.py", sys.argv[1:]),
        "machine": machine(),
        "commit": git_commit(HERE.parent),
    }
    with tempfile.TemporaryDirectory(dir=args.workdir) as base:
        res = run(args, Path(base) / "run")
    write_json(args.json, head | res)
    text = markdown(head, res)
    if args.md:
        atomic_write_text(args.md, text)
    print(text)


if __name__ == "__main__":
    main()
