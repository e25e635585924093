"""Peak memory of a party's partial-record-set steps from a CSV file, through the commands.

The table of :mod:`bench_secure_cli` (ROWS x 15 columns over 3 parties, 5 columns each) split
with ``vertimrf split``'s rule at ``--overlap`` (default 0.7: 70% of each party's records held
by every party, the rest by it alone), each party's records in its own CSV file and row order.
The commands of :func:`bench_secure_cli.deal_steps` after its setup (keys, secret, config with
``--record-sets partial`` and max_rows ROWS plus room for the dummies): party commit, server
admit, party tokens, server deal and party features, each its own process, one after
another. Reported: the wall time and peak RSS (GNU time) of each; the party reads its table
in batches and sorts and lays out its records through temporary files
(:mod:`vertimrf.party.records.slot_file`), reading its slot map by blocks; the server merges the
token lists by blocks, read in place, and writes each slot map as it is made
(:mod:`vertimrf.server.slots`).

    python benchmarks/bench_partial_memory.py --rows 1000000 --md OUT.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_secure_cli import PARTIES, deal_steps, make_data, setup, stepper  # noqa: E402

from vertimrf.protocol import load_config  # noqa: E402
from vertimrf.protocol.methods import secure_plan  # noqa: E402

DUMMY_ROOM = 1 << 16  # rows of max_rows past the records, for the dummies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--overlap", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument("--workdir", default=None, help="folder for the run (default: a temp)")
    parser.add_argument("--md", default=None, help="append the results as Markdown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        make_data(root, args.rows, args.seed, args.overlap)
        log: list[dict] = []
        step = stepper(root, log)
        setup(root, None, args.rows + DUMMY_ROOM, step, ["--record-sets", "partial"])
        plan = secure_plan(load_config(root / "config.json"))
        deal_steps(root, step)
        held = {n: len(pd.read_csv(root / n / f"{n}.csv", usecols=["id"])) for n in PARTIES}
    lines = [
        f"\n## {args.rows:,} rows (max_rows {plan.max_rows:,}; records held: "
        + ", ".join(f"{n} {k:,}" for n, k in held.items())
        + ")\n",
        "| role | command | wall (s) | peak RSS (MB) |",
        "|---|---|---:|---:|",
    ]
    lines += [
        f"| {r['role']} | {r['step']} | {r['wall']:.1f} | {r['max_rss_mb']:.0f} |"
        for r in log
        if r["step"].startswith(("party", "server"))
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md:
        with open(args.md, "a", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
