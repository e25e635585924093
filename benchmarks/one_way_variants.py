"""Where a small table's rare values go in the secure method (issue 59, the 1-way bound):
the corpus's births14 at 3 parties, run in process on the CLI's own config, against
Centralized (the engine) on the shared records, under variants that each remove one
suspected cause. Diagnosis only: no variant is a library setting.

Each seed s reads the harness folder PREFIX<s> (its split, spec and config, made by the
CLI path at seed s) and runs the secure method on the parties' record sets with the
folder's config (seeded: the run's nonce from s), once per variant, and Centralized on the
shared records at seed s. Variants:

- ``base``: the folder's config as the CLI ran it;
- ``equal``: every party keeps only the records all of them hold (equal record sets, so
  the engine's fit, not the union fit);
- ``nostop``: every fit without its target-loss and plateau stops (only its tolerance and
  its iteration cap stop it): is the bias a fit stopped early from the uniform start?
- ``pooled``: the union fit's counts over the records two parties both hold, pooled over
  every cross table by inverse variance, not read off the one of least variance;
- ``coins``: cross noise "coins" (sigma^2 a cross cell, not split's 1.5 sigma^2), which the
  config's "auto" rule does not pick here for its bytes.

It records each column's 1-way TVD against the shared records, the 3-way TVD and, for each
two-valued column, the synthetic table's share of the rarer value minus the true share.

    for s in $(seq 0 19); do
        python -m tests.corpus.harness openintro::births14 --parties 3 --seed $s \\
            --no-central --dir DIR/s$s
    done
    python benchmarks/one_way_variants.py DIR/s --seeds 20 --md OUT.md --json OUT.json
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import harness_tables, load_average, mean_se_text, run_head, write_results  # noqa: E402

import vertimrf.server.secure.union_fit as union_fit  # noqa: E402
import vertimrf.synth.engine.fit as engine_fit  # noqa: E402
import vertimrf.synth.union.model as union_model  # noqa: E402
from vertimrf import PrivMRF, simulate  # noqa: E402
from vertimrf.metrics import column_tvd, tvd  # noqa: E402
from vertimrf.protocol.factory import load_config  # noqa: E402
from vertimrf.protocol.seeds import seeded_nonce  # noqa: E402
from vertimrf.synth.union import NoisyTable  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6
VARIANTS = ("base", "equal", "nostop", "pooled", "coins")


def _pooled_presence(cross, owner, sizes):
    """The ``pooled`` variant's presence tables: for each attribute a of party p and peer
    q, every 2-way cross table of a with an attribute of q summed over q's, pooled by
    inverse variance (a sum over k cells of scale s has variance k s^2)."""
    acc: dict[tuple[int, int], tuple[np.ndarray, float]] = {}
    for t in (t for t in cross if len(t.attrs) == 2):
        for axis, a in enumerate(t.attrs):
            other = t.attrs[1 - axis]
            var = t.sigma**2 * sizes[other]
            num, den = acc.get((a, owner[other]), (0.0, 0.0))
            acc[a, owner[other]] = (num + t.values.sum(axis=1 - axis) / var, den + 1.0 / var)
    out: dict[tuple[int, int], list[NoisyTable]] = {}
    for (a, q), (num, den) in sorted(acc.items()):
        out.setdefault((owner[a], q), []).append(NoisyTable((a,), num / den, math.sqrt(1 / den)))
    return {k: tuple(v) for k, v in out.items()}


@contextmanager
def _patched(variant: str):
    """The library functions the ``variant`` replaces, restored on exit."""
    saved = (union_fit._presence, union_model.mirror_descent, engine_fit.mirror_descent)
    descent = saved[1]

    def unstopped(*args, **kwargs):
        kwargs["target_loss"] = None
        kwargs.pop("plateau", None)
        return descent(*args, **kwargs)

    if variant == "pooled":
        union_fit._presence = _pooled_presence
    if variant == "nostop":
        union_model.mirror_descent = engine_fit.mirror_descent = unstopped
    try:
        yield
    finally:
        union_fit._presence, union_model.mirror_descent, engine_fit.mirror_descent = saved


def _rare_errors(shared, syn, names) -> dict[str, float]:
    """For each two-valued column: the synthetic share of its rarer true value minus the true
    share."""
    out = {}
    for c in names:
        counts = shared[c].value_counts()
        if len(counts) == 2:
            rare = counts.idxmin()
            out[c] = float((syn[c] == rare).mean() - (shared[c] == rare).mean())
    return out


def _measures(shared, syn, spec) -> dict:
    names = list(spec.names)
    return {
        "one": column_tvd(shared, syn, spec),
        "three": tvd(shared, syn, spec, ways=3),
        "rare": _rare_errors(shared, syn, names),
    }


def one_seed(folder: str, seed: int, variants: list[str]) -> dict:
    """Centralized's and each variant's measures at ``seed`` on the harness ``folder``."""
    spec, frames, shared = harness_tables(folder)
    names = list(spec.names)
    seeded = load_config(Path(folder) / "config.json").with_changes(
        run_nonce=seeded_nonce(seed), identities=None
    )
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = PrivMRF(EPSILON, DELTA, seed=seed, progress=False).fit(shared, spec)
        out["central"] = _measures(shared, fit.sample(len(shared), seed=seed), spec)
        for variant in variants:
            config, parts = seeded, frames
            if variant == "equal":
                held = set.intersection(*(set(f["rid"]) for f in frames.values()))
                parts = {k: f[f["rid"].isin(held)].reset_index(drop=True)
                         for k, f in frames.items()}  # fmt: skip
                config = config.with_changes(record_sets="equal")
            if variant == "coins":
                config = config.with_changes(cross_noise="coins")
            with _patched(variant):
                syn, _ = simulate(parts, config=config, seed=seed, id_column="rid")
            out[variant] = _measures(shared, syn[names], spec)
    return out


def markdown(head: dict, rows: list[dict]) -> str:
    """Per variant: the mean 1-way and 3-way TVDs, the columns nearest the bound; then the
    two-valued columns' signed error of the rarer value."""
    runs = rows[0]["runs"]
    names = rows[0]["columns"]
    kinds = ["central", *rows[0]["variants"]]
    central = {c: float(np.mean([r["central"]["one"][c] for r in runs])) for c in names}
    bound = {c: max(2.0 * central[c], 0.02) for c in names}
    lines = [
        f"# A small table's rare values in the secure method: {rows[0]['table']}",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}, load "
        f"{head['load']}. {len(runs)} seeds, each its own split (the harness "
        f"folder of that seed) and the CLI's config; epsilon {EPSILON}, delta {DELTA}. The "
        "1-way bound of a column: max(2 x Centralized's mean, 0.02).",
        "",
        "| run | mean 1-way | 3-way (mean +- se) | nearest the bound (mean / bound) |",
        "|---|---:|---|---|",
    ]
    for kind in kinds:
        one = {c: float(np.mean([r[kind]["one"][c] for r in runs])) for c in names}
        near = sorted(names, key=lambda c: -one[c] / bound[c])[:3]
        lines.append(
            f"| {kind} | {np.mean(list(one.values())):.4f} | "
            f"{mean_se_text([r[kind]['three'] for r in runs])} | "
            + ", ".join(f"`{c}` {one[c]:.4f} / {bound[c]:.4f}" for c in near)
            + " |"
        )
    rare = list(runs[0]["central"]["rare"])
    lines += [
        "",
        "The rarer value's share, synthetic minus true (mean +- se over the seeds; then the "
        "mean absolute error):",
        "",
        "| column | " + " | ".join(kinds) + " |",
        "|---|" + "---|" * len(kinds),
    ]
    for c in rare:
        cells = []
        for kind in kinds:
            errors = [r[kind]["rare"][c] for r in runs]
            cells.append(f"{mean_se_text(errors)}; {np.mean(np.abs(errors)):.4f}")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix", help="the harness folders' prefix: PREFIX0, PREFIX1, ...")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--variants", nargs="+", choices=VARIANTS, default=list(VARIANTS))
    ap.add_argument("--label", default="openintro::births14, 3 parties")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    runs = []
    for seed in range(args.seeds):
        runs.append(one_seed(f"{args.prefix}{seed}", seed, args.variants))
        means = {k: np.mean(list(v["one"].values())) for k, v in runs[-1].items()}
        text = ", ".join(f"{k} {m:.4f}" for k, m in means.items())
        print(f"seed {seed}: mean 1-way {text}", file=sys.stderr, flush=True)
    result = {
        "table": args.label,
        "columns": list(runs[0]["central"]["one"]),  # the spec's names, in order
        "variants": args.variants,
        "runs": runs,
    }
    head = {**run_head(__file__, argv), "load": load_average()}
    write_results(args.json, args.md, head, [result], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
