"""The engine's extra re-measured pairs against the first release's precision (issue 59):
one corpus table, the secure method and Centralized (the engine), each with every extra
(as before ``EnginePlan.extras``), with the count the rule gives, and with none.

Each seed runs the secure method in process on the parties' own record sets and fits
Centralized on the shared records (epsilon 1, delta 1e-6, the seed for both), once per
variant; each variant sets ``FULL_EXTRAS_PRECISION`` (``every``: near 0, so
``refine_fraction * d`` extras; ``rule``: the default; ``none``: infinite). It records
each column's 1-way TVD against the shared records, their mean, the 3-way TVD and the
extras the secure run re-measured.

    python -m tests.corpus.harness openintro::births14 --parties 3 --seed 3 --dir DIR
    python benchmarks/extras_precision.py DIR --seeds 20 --md OUT.md --json OUT.json
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import harness_tables, load_average, mean_se_text, run_head, write_results  # noqa: E402

import vertimrf.server.secure.selection as selection  # noqa: E402
import vertimrf.synth.engine.plan as engine_plan  # noqa: E402
from vertimrf import PrivMRF, simulate  # noqa: E402
from vertimrf.metrics import column_tvd, tvd  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
VARIANTS = {"every": 1e-12, "rule": engine_plan.FULL_EXTRAS_PRECISION, "none": math.inf}


def one_seed(frames: dict, spec, shared, seed: int) -> dict:
    """Each variant's secure and Centralized TVDs at ``seed``, and the secure run's extras."""
    out = {}
    choose = selection.choose
    for name, full in VARIANTS.items():
        counts: list[int] = []

        def counted(first, n_hat, plan, oracle, rng, counts=counts):
            counts.append(plan.extras(n_hat))
            return choose(first, n_hat, plan, oracle, rng)

        engine_plan.FULL_EXTRAS_PRECISION = full
        selection.choose = counted
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                syn, _ = simulate(frames, spec, epsilon=EPSILON, delta=DELTA, seed=seed,
                                  id_column="rid")  # fmt: skip
                syn = syn[list(spec.names)]
                fit = PrivMRF(EPSILON, DELTA, seed=seed, progress=False).fit(shared, spec)
                central = fit.sample(len(syn), seed=seed)
        finally:
            engine_plan.FULL_EXTRAS_PRECISION = VARIANTS["rule"]
            selection.choose = choose
        out[name] = {
            "extras": counts[0],
            "secure": column_tvd(shared, syn, spec),
            "central": column_tvd(shared, central, spec),
            "secure3": tvd(shared, syn, spec, ways=3),
            "central3": tvd(shared, central, spec, ways=3),
        }
    return out


def markdown(head: dict, rows: list[dict]) -> str:
    """The table: per column and variant, the mean 1-way TVD +- its standard error over the
    seeds, secure then Centralized; then the means over columns and the 3-way TVDs."""
    runs = rows[0]["runs"]
    cols = rows[0]["columns"]

    names = list(VARIANTS)
    lines = [
        f"# Extra re-measured pairs against precision: {rows[0]['table']}",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}, {head['cores']} "
        f"cores, load {head['load']}. {len(runs)} seeds (the roles' and Centralized's), "
        f"epsilon {EPSILON}, delta {DELTA}; {rows[0]['shared']} shared records.",
        "",
        "Variants: `every` (refine_fraction * d extras, as before the rule), `rule` (the "
        "count `EnginePlan.extras` gives: in proportion to the first release's precision "
        "below FULL_EXTRAS_PRECISION), `none`. Each cell: mean 1-way TVD +- standard error "
        "over the seeds; the secure method, then Centralized (the engine, under the same "
        "variant). The 1-way bound is max(2 x Centralized's, 0.02).",
        "",
        "| column | " + " | ".join(f"secure {n} | central {n}" for n in names) + " |",
        "|---|" + "---:|" * (2 * len(names)),
    ]
    measures = [(c, lambda r, who, c=c: r[who][c]) for c in cols] + [
        ("**mean 1-way**", lambda r, who: sum(r[who].values()) / len(cols)),
        ("**3-way**", lambda r, who: r[who + "3"]),
    ]
    for label, value in measures:
        vals = [
            mean_se_text([value(r[n], who) for r in runs])
            for n in names
            for who in ("secure", "central")
        ]
        lines.append(f"| {label} | " + " | ".join(vals) + " |")
    extras = {n: sorted({r[n]["extras"] for r in runs}) for n in names}
    lines += ["", "Extras the secure runs re-measured: " + "; ".join(
        f"{n} {', '.join(map(str, v))}" for n, v in extras.items()) + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a corpus harness run's folder (its --dir)")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--label", default=None, help="the table's name in the output")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    spec, frames, shared = harness_tables(args.dir)
    runs = []
    for seed in range(args.seeds):
        runs.append(one_seed(frames, spec, shared, seed))
        print(f"seed {seed}: " + ", ".join(
            f"{n} {sum(v['secure'].values()) / len(v['secure']):.4f}" for n, v in runs[-1].items()
        ), flush=True)  # fmt: skip
    result = {
        "table": args.label or Path(args.dir).name,
        "shared": len(shared),
        "columns": list(spec.names),
        "runs": runs,
    }
    head = {**run_head(__file__, argv), "load": load_average()}
    write_results(args.json, args.md, head, [result], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
