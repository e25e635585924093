"""Missing values on Adult (issue 36): 10% of the cells of three columns blanked, the run's
synthetic table against the real one.

Adult is the bundled ``adult_labeled`` (Adult's 45,222 records with text labels; its spec has
no numeric column, Adult's numbers coming as bins), blanked in workclass, occupation and
native_country, the three columns the census source leaves empty: in each, exactly 10% of the
rows, drawn at random (``--blank-seed``), independently per column. Their spec declares
``"missing": true``. The method is secure with ``from_preset``'s default config (``simulate``'s
default max_rows 65,536), over the paper's two parties (the first 8 columns and the last 7),
at epsilon 1.6 and delta 1e-6, for each seed; the same runs on the table without blanks are the
reference.

Reported per seed and blanked column: the real and the synthetic missing rate, the model's
own probability of the missing value, and a bound for "within noise", three standard
deviations from theory (the synthetic rate minus the real one):

    bound = 3 sigma sqrt(u) / n + p |n_hat - n| / n + 3 sqrt(p (1 - p) / m)

The fit takes every first-release 2-way marginal inside a clique of the model, each with
Gaussian noise of standard deviation sigma per cell (the report's first-release sigma); the
narrowest of those holding the column (its partner has u values) sums to the missing count
with noise sigma sqrt(u), and the least-squares fit is at least as precise (Gauss-Markov;
the run's mirror descent stops near that optimum, so the bound is for the idealised fit).
The second term is the error of the noisy total n_hat (observed), the third the sampling
error of the m synthetic rows drawn from the model (p: the real rate, n: the rows).

Reported per run: the 3-way TVD over the 300 random marginals of ``vertimrf.metrics.tvd``
(seed 0), missing counted as a value (the real and synthetic tables encoded with the same
spec), and the same figure over those of the 300 marginals that hold a blanked column; each
next to the run on the table without blanks (the same marginals). Times are wall seconds of
fit and sample, on the cores named in the results.

    python benchmarks/bench_missing.py --json PATH --md PATH [--seeds 3]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import command_line, git_commit, machine, write_json  # noqa: E402

from vertimrf import fit_vertical, load_dataset  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.io import atomic_write_text  # noqa: E402
from vertimrf.metrics import sample_marginal_subsets, tvd  # noqa: E402

BLANKED = ("workclass", "occupation", "native_country")
EPSILON, DELTA = 1.6, 1e-6
RATE = 0.10
WAYS, MARGINALS = 3, 300


def blanked(df: pd.DataFrame, spec: DomainSpec, seed: int) -> tuple[pd.DataFrame, DomainSpec]:
    """``df`` with RATE of each BLANKED column's cells emptied at random, and its spec with
    those columns declared ``missing``."""
    rng = np.random.default_rng(seed)
    out = df.copy()
    for column in BLANKED:
        rows = rng.choice(len(df), round(RATE * len(df)), replace=False)
        out[column] = out[column].astype(object)
        out.loc[out.index[rows], column] = None
    data = spec.to_dict()
    for column in data["columns"]:
        if column["name"] in BLANKED:
            column["missing"] = True
    return out, DomainSpec.from_dict(data)


def subset_tvds(real: pd.DataFrame, synth: pd.DataFrame, spec: DomainSpec) -> dict:
    """The 3-way TVD over all MARGINALS random subsets and over those holding a blanked
    column (each subset's TVD is tvd's own, over that subset alone)."""
    subsets = sample_marginal_subsets(len(spec), WAYS, MARGINALS, seed=0)
    names = [[spec.names[a] for a in s] for s in subsets]
    holding = [cols for cols in names if set(cols) & set(BLANKED)]
    each = [tvd(real[c], synth[c], spec.subset(c), ways=WAYS) for c in holding]
    return {
        "tvd3": tvd(real, synth, spec, ways=WAYS, n_marginals=MARGINALS, seed=0),
        "tvd3_blanked_marginals": float(np.mean(each)),
        "blanked_marginals": len(holding),
    }


def first_sigma(report: dict) -> float:
    """The first release's noise standard deviation per cell (the report's select sigma)."""
    return max(
        r["params"]["sigma"] for r in report["releases"] if r["description"].startswith("select")
    )


def rate_bound(model, spec: DomainSpec, column: str, p: float, n: int, m: int) -> dict:
    """The three terms of the bound (see the module docstring) and their sum."""
    j = spec.names.index(column)
    partners = {a for c in model.model.cliques if j in c for a in c if a != j}
    u = min(spec.domain.sizes[a] for a in partners)
    terms = {
        "noise": 3 * first_sigma(model.report.to_dict()) * math.sqrt(u) / n,
        "total": p * abs(model.n_hat - n) / n,
        "sampling": 3 * math.sqrt(p * (1 - p) / m),
    }
    return {**terms, "partner_values": u, "bound": sum(terms.values())}


def run(df: pd.DataFrame, spec: DomainSpec, seed: int) -> tuple[object, pd.DataFrame, float]:
    names = list(spec.names)
    start = time.perf_counter()
    model = fit_vertical(df, spec, [names[:8], names[8:]], EPSILON, DELTA, seed=seed)
    synth = model.sample()
    return model, synth, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--blank-seed", type=int, default=36)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    df, spec = load_dataset("adult_labeled")
    holes, holes_spec = blanked(df, spec, args.blank_seed)
    rows = []
    for seed in range(args.seeds):
        for table, what, table_spec in ((df, "plain", spec), (holes, "blanked", holes_spec)):
            model, synth, seconds = run(table, table_spec, seed)
            row = {
                "table": what,
                "seed": seed,
                "seconds": seconds,
                "n_hat": int(model.n_hat),
                **subset_tvds(table, synth, table_spec),
            }
            if what == "blanked":
                row["columns"] = {
                    c: {
                        "real": float(table[c].isna().mean()),
                        "synthetic": float(synth[c].isna().mean()),
                        "model": float(model.marginal([c]).iloc[-1]),
                        **rate_bound(
                            model,
                            table_spec,
                            c,
                            float(table[c].isna().mean()),
                            len(table),
                            len(synth),
                        ),
                    }  # fmt: skip
                    for c in BLANKED
                }
            print({k: v for k, v in row.items() if k != "columns"}, flush=True)
            rows.append(row)
    result = {
        "command": command_line("benchmarks/bench_missing.py", sys.argv[1:]),
        "commit": git_commit(Path(__file__).resolve().parent.parent),
        "machine": machine(),
        "nproc": os.cpu_count(),
        "rows": len(df),
        "epsilon": EPSILON,
        "delta": DELTA,
        "blank_rate": RATE,
        "blanked": list(BLANKED),
        "runs": rows,
    }
    write_json(args.json, result)
    if args.md:
        atomic_write_text(args.md, markdown(result))
    return 0


def setting(result: dict) -> str:
    """The results' first paragraph: the command, the table, the run and the machine."""
    return (
        f"Command: `{result['command']}` (commit {result['commit']}). Adult (bundled "
        f"`adult_labeled`, {result['rows']:,} rows), {result['blank_rate']:.0%} of the cells "
        f"of {', '.join(result['blanked'])} blanked at random, those columns declared "
        f'`"missing": true`; method secure, the default config, two parties (columns 0-7, '
        f"8-14), epsilon {result['epsilon']}, delta {result['delta']:g}. Machine: "
        f"{result['machine']}, shared with other work."
    )


def markdown(result: dict) -> str:
    runs = result["runs"]
    lines = [
        "# Missing values on Adult (`bench_missing.py`)\n",
        setting(result) + "\n",
        "## Missing rate per blanked column",
        "",
        "| seed | column | real | synthetic | model | synthetic - real | bound (3 sd) | within |",
        "|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in (r for r in runs if r["table"] == "blanked"):
        for c, v in r["columns"].items():
            diff = v["synthetic"] - v["real"]
            lines.append(
                f"| {r['seed']} | {c} | {v['real']:.4f} | {v['synthetic']:.4f} | "
                f"{v['model']:.4f} | {diff:+.4f} | {v['bound']:.4f} | "
                f"{'yes' if abs(diff) <= v['bound'] else 'NO'} |"
            )
    lines += [
        "",
        "## 3-way TVD, missing counted as a value",
        "",
        "| seed | table | 3-way TVD (300 marginals) | over the marginals holding a blanked "
        f"column | n_hat | fit + sample (s, {result['nproc']} cores) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    for r in runs:
        lines.append(
            f"| {r['seed']} | {r['table']} | {r['tvd3']:.4f} | {r['tvd3_blanked_marginals']:.4f}"
            f" ({r['blanked_marginals']}) | {r['n_hat']} | {r['seconds']:.1f} |"
        )
    for what in ("plain", "blanked"):
        mine = [r for r in runs if r["table"] == what]
        lines.append(
            f"| mean | {what} | {np.mean([r['tvd3'] for r in mine]):.4f} | "
            f"{np.mean([r['tvd3_blanked_marginals'] for r in mine]):.4f} | | "
            f"{np.mean([r['seconds'] for r in mine]):.1f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
