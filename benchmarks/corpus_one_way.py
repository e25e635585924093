"""Each column's 1-way TVD on one corpus table over several seeds, in process: the secure
method with the parties' own record sets (partial, as the corpus runs it), the secure method
with every party holding exactly the shared records (equal sets), and Centralized (the
engine) on the shared records, all at epsilon 1, delta 1e-6, against the shared records.

It separates what partial record sets cost a party's own columns from the noise of one run:
the corpus judges one run per seed, and at a few hundred records one run's 1-way TVD is
mostly its noise. The table's files come from the corpus harness (its ``--dir``, with the
parties' CSVs, ``shared.csv`` and ``spec.json``):

    python -m tests.corpus.harness AER::CPS1985 --parties 2 --dir DIR --no-central
    python benchmarks/corpus_one_way.py DIR --seeds 6 [--json PATH] [--md PATH]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import harness_tables, mean_se, run_head, write_results  # noqa: E402

from vertimrf import PrivMRF, simulate  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.metrics import column_tvd  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
SIDES = ("partial", "equal", "central")


def one_seed(
    frames: dict[str, pd.DataFrame], shared: pd.DataFrame, spec: DomainSpec, seed: int
) -> dict[str, dict[str, float]]:
    """Each column's 1-way TVD of the three synthetic tables of ``seed``."""
    cols = [[c for c in f.columns if c != "rid"] for f in frames.values()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partial, _ = simulate(frames, spec, epsilon=EPSILON, delta=DELTA, seed=seed,
                              id_column="rid")  # fmt: skip
        equal, _ = simulate(shared, spec, parties=cols, epsilon=EPSILON, delta=DELTA, seed=seed)
        model = PrivMRF(EPSILON, DELTA, seed=seed, progress=False).fit(shared, spec)
        central = model.sample(len(partial), seed=seed)
    return {
        side: column_tvd(shared, table[list(spec.names)], spec)
        for side, table in (("partial", partial), ("equal", equal), ("central", central))
    }


def markdown(head: dict, rows: list[dict]) -> str:
    """Per column: each side's mean 1-way TVD with its standard error, and the bound."""
    result = rows[0]
    lines = [
        f"# Each column's 1-way TVD over seeds: {result['table']} (`benchmarks/corpus_one_way.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']}. Machine: {head['machine']}. "
        f"Epsilon {EPSILON}, delta {DELTA}, seeds 0-{result['seeds'] - 1}; against the "
        f"{result['shared']:,} records every party holds. Partial: the secure method on the "
        "parties' own record sets (as the corpus runs it); equal: the secure method with "
        "every party holding exactly the shared records; central: the engine on them. "
        "Bound: max(2 x central's mean, 0.02). Mean +- standard error over the seeds.",
        "",
        "| column | party | partial | equal | central | partial within bound |",
        "|---|---|---:|---:|---:|---|",
    ]
    for col, row in result["columns"].items():
        cells = [f"{row[s][0]:.3f} +- {row[s][1]:.3f}" for s in SIDES]
        ok = row["partial"][0] <= max(2 * row["central"][0], 0.02)
        lines.append(
            f"| {col} | {row['party']} | " + " | ".join(cells) + f" | {ok and 'yes' or 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a corpus harness run's folder (its --dir)")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    spec, frames, shared = harness_tables(folder)
    runs = [one_seed(frames, shared, spec, s) for s in range(args.seeds)]
    owner = {c: name for name, f in frames.items() for c in f.columns if c != "rid"}
    result = {
        "table": folder.name,
        "seeds": args.seeds,
        "shared": len(shared),
        "columns": {
            col: {
                "party": owner.get(col, "?"),
                **{s: mean_se([r[s][col] for r in runs]) for s in SIDES},
            }  # fmt: skip
            for col in spec.names
        },
        "runs": runs,
    }
    write_results(args.json, args.md, run_head(__file__, argv), [result], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
