"""Where a corpus table's Secure / Centralized 3-way TVD gap comes from (issue 59, item 5:
the worst ratio of ``benchmarks/results/corpus_first_pass.md``, ISLR::Default with 2 parties).

For each seed the corpus harness (``tests/corpus/harness.py``, run as a process) takes the
table along the user's CLI path (partial record sets at overlap 0.8) and fits Centralized
PrivMRF on the records every party holds. On those same records this script fits the
variants that split the gap into its steps:

- Centralized engine: ``PrivMRF(selection="engine")``, the select-measure-fit engine that
  method secure runs, with exact counts; and Centralized PrivMRF, ``selection="privmrf"``
  (the paper's selection; fitted here, whatever the harness's Centralized is);
- Secure, equal record sets: ``simulate(method="secure")`` with every party holding exactly
  the shared records (no region counts, no dummies), the config's max_rows.

It reports each variant's mean 3-way TVD against the shared records (as the corpus and
``vertimrf evaluate``), every 2- and 3-way marginal's TVD, and for every pair the TVD
of the real pair from the product of its 1-way marginals (how much dependence there is to
find).

    python benchmarks/corpus_gap.py [--table ISLR::Default] [--parties 2] [--seeds 0 1 2]
        [--json benchmarks/results/corpus_gap.json] [--md benchmarks/results/corpus_gap.md]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head  # noqa: E402

from vertimrf import PrivMRF, simulate  # noqa: E402
from vertimrf.cli.common import read_table  # noqa: E402
from vertimrf.codec import as_table  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.metrics import tvd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
EPSILON, DELTA = 1.0, 1e-6  # the harness's
VARIANTS = ("secure (CLI, partial)", "secure (equal sets)", "central engine", "central PrivMRF")


def harness(table: str, parties: int, seed: int, work: Path) -> dict:
    """One harness run (a process) in ``work``; its outcome."""
    out = work.parent / f"{work.name}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [sys.executable, "-m", "tests.corpus.harness", table, "--parties", str(parties),
         "--seed", str(seed), "--cap", "900", "--dir", str(work), "--json", str(out)],
        cwd=ROOT, env=env, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return json.loads(out.read_text())


def _codes(frame: pd.DataFrame, spec: DomainSpec) -> np.ndarray:
    return as_table(frame[list(spec.names)], spec)[0].codes


def marginal_tvd(real: np.ndarray, synth: np.ndarray, sizes: tuple[int, ...]) -> float:
    """TVD of two code arrays' normalised histograms over ``sizes``."""
    cells = int(np.prod(sizes))
    p = np.bincount(np.ravel_multi_index(real.T, sizes), minlength=cells) / len(real)
    q = np.bincount(np.ravel_multi_index(synth.T, sizes), minlength=cells) / len(synth)
    return 0.5 * float(np.abs(p - q).sum())


def independence_tvd(real: np.ndarray, sizes: tuple[int, int]) -> float:
    """TVD of a pair's joint from the product of its two 1-way marginals."""
    joint = np.bincount(np.ravel_multi_index(real.T, sizes), minlength=sizes[0] * sizes[1])
    joint = joint.reshape(sizes) / len(real)
    return 0.5 * float(np.abs(joint - np.outer(joint.sum(1), joint.sum(0))).sum())


def variants(work: Path, seed: int) -> tuple[DomainSpec, pd.DataFrame, dict[str, pd.DataFrame]]:
    """The spec, the shared records and each variant's synthetic table for one run."""
    spec = DomainSpec.from_json(work / "spec.json")
    real = read_table(str(work / "data" / "shared.csv"))[list(spec.names)]
    config = json.loads((work / "config.json").read_text())
    parties = [p["columns"] for p in config["parties"]]
    secure = read_table(str(work / "synth.csv"))
    equal, _ = simulate(real, spec, parties, EPSILON, DELTA, method="secure", seed=seed,
                        max_rows=config["max_rows"])  # fmt: skip
    central = {
        name: PrivMRF(EPSILON, DELTA, seed=seed, selection=selection, progress=False)
        .fit(real, spec)
        .sample(len(secure), seed=seed)
        for name, selection in ((VARIANTS[2], "engine"), (VARIANTS[3], "privmrf"))
    }  # as the harness's Centralized: the run's seed, as many rows as the secure table
    return spec, real, {VARIANTS[0]: secure, VARIANTS[1]: equal, **central}


def measure(work: Path, seed: int) -> dict:
    """Every variant's mean 3-way TVD and each 2- and 3-way marginal's TVD."""
    spec, real, synth = variants(work, seed)
    r = _codes(real, spec)
    names, sizes = spec.names, spec.domain.sizes

    def sizes_of(m: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sizes[i] for i in m)

    ways = min(3, len(names))
    row: dict = {"seed": seed, "shared": len(real), "tvd3": {}, "marginals": {}}
    for name, frame in synth.items():
        row["tvd3"][name] = tvd(real, frame, spec, ways=ways)
        s = _codes(frame, spec)
        subsets = [m for k in (2, 3) for m in itertools.combinations(range(len(names)), k)]
        row["marginals"][name] = {
            "+".join(names[i] for i in m): marginal_tvd(r[:, m], s[:, m], sizes_of(m))
            for m in subsets
        }
    row["independence"] = {
        f"{names[a]}+{names[b]}": independence_tvd(r[:, (a, b)], (sizes[a], sizes[b]))
        for a, b in itertools.combinations(range(len(names)), 2)
    }
    return row


def markdown(head: dict, rows: list[dict]) -> str:
    """The per-seed table, the means and the marginals that carry the gap."""
    lines = [
        f"# Secure / Centralized 3-way TVD gap on {head['table']}, {head['parties']} parties "
        "(`benchmarks/corpus_gap.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']} (working tree). Machine: "
        f"{head['machine']} (load average at the end {head['load']}). Epsilon 1, delta 1e-6; "
        "TVDs against the records every party holds (`shared.csv`), the mean over every "
        "3-way marginal as `vertimrf evaluate` and the corpus compute it.",
        "",
        "| seed | " + " | ".join(VARIANTS) + " | CLI / PrivMRF | CLI / engine |",
        "|---:|" + "---:|" * (len(VARIANTS) + 2),
    ]
    for row in rows:
        t = row["tvd3"]
        lines.append(
            f"| {row['seed']} | " + " | ".join(f"{t[v]:.4f}" for v in VARIANTS)
            + f" | {t[VARIANTS[0]] / t[VARIANTS[3]]:.2f} | {t[VARIANTS[0]] / t[VARIANTS[2]]:.2f} |"
        )  # fmt: skip
    means = {v: statistics.fmean(r["tvd3"][v] for r in rows) for v in VARIANTS}
    lines.append(
        "| mean | " + " | ".join(f"{means[v]:.4f}" for v in VARIANTS)
        + f" | {means[VARIANTS[0]] / means[VARIANTS[3]]:.2f} | "
        f"{means[VARIANTS[0]] / means[VARIANTS[2]]:.2f} |"
    )  # fmt: skip
    keys = list(rows[0]["marginals"][VARIANTS[0]])
    lines += [
        "",
        "Each marginal's TVD, mean over the seeds (independence: the real pair's TVD from the "
        "product of its 1-way marginals):",
        "",
        "| marginal | " + " | ".join(VARIANTS) + " | independence |",
        "|---|" + "---:|" * (len(VARIANTS) + 1),
    ]
    for key in keys:
        vals = [statistics.fmean(r["marginals"][v][key] for r in rows) for v in VARIANTS]
        ind = [r["independence"].get(key) for r in rows]
        lines.append(
            f"| {key} | " + " | ".join(f"{x:.3f}" for x in vals)
            + (f" | {statistics.fmean(ind):.3f} |" if ind[0] is not None else " | |")
        )  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", default="ISLR::Default")
    ap.add_argument("--parties", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--dir", default=None, help="keep the runs here (default: a temporary one)")
    ap.add_argument("--json", default=str(RESULTS / "corpus_gap.json"))
    ap.add_argument("--md", default=str(RESULTS / "corpus_gap.md"))
    args = ap.parse_args(argv)
    base = Path(args.dir or tempfile.mkdtemp(prefix="corpus-gap-"))
    rows = []
    for seed in args.seeds:
        work = base / f"seed-{seed}"
        if not (work / "synth.csv").exists():
            outcome = harness(args.table, args.parties, seed, work)
            if outcome["status"] != "finished":
                raise SystemExit(f"seed {seed}: {outcome['status']} {outcome['message']}")
        rows.append(measure(work, seed))
        print(f"seed {seed}: " + ", ".join(f"{k} {v:.4f}" for k, v in rows[-1]["tvd3"].items()))
    head = {**run_head(__file__, argv), "table": args.table, "parties": args.parties,
            "load": load_average()}  # fmt: skip
    Path(args.json).write_text(json.dumps({**head, "rows": rows}, indent=1) + "\n")
    Path(args.md).write_text(markdown(head, rows))
    print(Path(args.md).read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
