"""Peak memory of a party's partial-record-set steps from a CSV file, through the commands.

The table of :mod:`bench_secure_cli` (ROWS x 15 columns over 3 parties, 5 columns each),
each party keeping a random 70% of the records (so 70% x 70% of them are shared by a pair),
in its own CSV file and row order. The commands: keys, secret, config (``--record-sets
partial``, max_rows ROWS plus room for the dummies), party commit, server admit, party
tokens, server deal --tokens and party features, each its own process, one after another.
Reported: the wall time and peak RSS (GNU time) of every command; the party's table is read
in batches and sorted and laid out through temporary files (:mod:`vertimrf.party.slot_file`).

    python benchmarks/bench_partial_memory.py --rows 1000000 --md OUT.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_secure_cli import PARTIES, make_data, party_command, relay, setup, stepper  # noqa: E402

from vertimrf.protocol import load_config  # noqa: E402
from vertimrf.protocol.methods import secure_plan  # noqa: E402

HELD = 0.7  # the share of the records each party keeps


def keep_some(root: Path, rows: int, seed: int) -> None:
    """Each party's CSV cut to a random ``HELD`` of the records (its row order kept)."""
    rng = np.random.default_rng(seed + 1)
    for name in PARTIES:
        path = root / name / f"{name}.csv"
        frame = pd.read_csv(path)
        frame[rng.random(rows)[frame["id"].to_numpy()] < HELD].to_csv(path, index=False)


def partial_steps(root: Path, step) -> None:
    """Commit, admit, tokens, deal and features, the files relayed between them."""
    names = list(PARTIES)
    for n in names:
        step(n, "party commit", ["party", "commit", *party_command(n, deal=False),
                                 "--out", f"{n}/{n}.commit"])  # fmt: skip
        relay(root / n / f"{n}.commit", root / "S")
    commits = [f"S/{n}.commit" for n in names]
    step("S", "server admit", ["server", "admit", "--config", "config.json", "--commits",
                               *commits, "--out-dir", "S"])  # fmt: skip
    for n in names:
        relay(root / "S" / f"{n}.admit", root / n)
        step(n, "party tokens", ["party", "tokens", *party_command(n, deal=False), "--admit",
                                 f"{n}/{n}.admit", "--out", f"{n}/{n}.tokens"])  # fmt: skip
        relay(root / n / f"{n}.tokens", root / "S")
    step("S", "server deal", ["server", "deal", "--config", "config.json", "--keys",
                              *[f"S/{n}.pub" for n in names], "--commits", *commits,
                              "--tokens", *[f"S/{n}.tokens" for n in names], "--out-dir", "S",
                              "--state", "S/server.state",
                              "--server-key", "S/server.key"])  # fmt: skip
    for n in names:
        relay(root / "S" / f"{n}.deal", root / n)
        step(n, "party features", ["party", "features", *party_command(n), "--out-dir", n])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument("--workdir", default=None, help="folder for the run (default: a temp)")
    parser.add_argument("--md", default=None, help="append the results as Markdown")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        make_data(root, args.rows, args.seed)
        keep_some(root, args.rows, args.seed)
        log: list[dict] = []
        step = stepper(root, log)
        # room for the dummies: at most 2 offsets per region, 7 regions
        setup(root, None, args.rows + (1 << 16), step, ["--record-sets", "partial"])
        plan = secure_plan(load_config(root / "config.json"))
        partial_steps(root, step)
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
