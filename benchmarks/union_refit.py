"""The union fit (partial record sets) refitted on one run's releases, as they are and with
noise-dominated tables left out, on one corpus table over several seeds (issue 59).

Each seed runs the secure method in process on the parties' own record sets (epsilon 1,
delta 1e-6) and keeps what the server's union fit was given; every variant then refits
those same releases (post-processing: no new noise). For each variant, each column's 1-way
TVD of the model's intersection against the shared records, the mean 2-way TVD over every
pair, and, for each two-valued column, the signed error of its rarer value's share (model
minus truth): a fit whose cells cannot go below 0 moves positive noise in the empty or
thin cells of wide tables onto the rare values.

Variants: ``base`` (as the server fits), ``dropK`` (every own or cross table of two or more
attributes whose mean count per cell is below K times its noise scale left out, an own
table's 1-way sums kept), ``dropxK`` (the same for cross tables only, nothing kept),
``dropsK`` and ``dropxsK`` (as ``dropK`` and ``dropxK``, a cross table's sums onto each
party's part kept as that pair's tables over the records both hold), ``dropfK`` (as
``dropK``, only tables at the largest noise scale of their kind, own or cross: the first
release's, where it is noisier than the re-measurement).

    python -m tests.corpus.harness openintro::births14 --parties 3 --seed 3 --dir DIR
    python benchmarks/union_refit.py DIR --seeds 8 --variants base drop1 dropx1 --md OUT
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import harness_tables, mean_se, run_head, write_results  # noqa: E402

import vertimrf.synth.union.model as union_model  # noqa: E402
from vertimrf import simulate  # noqa: E402
from vertimrf.codec import as_table  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.synth.union import NoisyTable, PartialReleases  # noqa: E402

EPSILON, DELTA = 1.0, 1e-6


def capture(frames: dict, spec: DomainSpec, seed: int) -> tuple[PartialReleases, dict]:
    """The releases and options the server's union fit is given in a run at ``seed`` on the
    parties' tables ``frames``."""
    seen: list[tuple[PartialReleases, dict]] = []
    fit = union_model.fit_union

    def keep(releases: PartialReleases, **options: object) -> union_model.UnionModel:
        seen.append((releases, options))
        return fit(releases, **options)

    patched = [m for m in list(sys.modules.values()) if getattr(m, "fit_union", None) is fit]
    for module in patched:
        module.fit_union = keep  # type: ignore[attr-defined]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            simulate(frames, spec, epsilon=EPSILON, delta=DELTA, seed=seed, id_column="rid")
    finally:
        for module in patched:
            module.fit_union = fit  # type: ignore[attr-defined]
    return seen[-1]


def _thin(table: NoisyTable, k: float) -> bool:
    """A table of two or more attributes whose mean count per cell is below k sigma."""
    total = max(float(table.values.sum()), 1.0)
    return table.values.ndim >= 2 and total / table.values.size < k * table.sigma


def _sum_onto(table: NoisyTable, keep: list[int]) -> NoisyTable:
    """``table`` summed onto its axes ``keep``, each cell's noise sigma sqrt(cells summed)."""
    rest = tuple(i for i in range(table.values.ndim) if i not in keep)
    cells = math.prod(table.values.shape[i] for i in rest)
    attrs = tuple(table.attrs[i] for i in keep)
    return NoisyTable(attrs, table.values.sum(axis=rest), table.sigma * math.sqrt(cells))


def _sums(table: NoisyTable) -> list[NoisyTable]:
    """A table's 1-way sums."""
    return [_sum_onto(table, [axis]) for axis in range(table.values.ndim)]


def _shared_sums(releases: PartialReleases, table: NoisyTable) -> dict:
    """A cross table's sums onto each party's part: by (party, peer), a table of the party's
    attributes over the records both hold."""
    owner = releases.owner
    p = owner[table.attrs[0]]
    q = next(owner[a] for a in table.attrs if owner[a] != p)
    return {
        (me, peer): _sum_onto(table, [i for i, a in enumerate(table.attrs) if owner[a] == me])
        for me, peer in ((p, q), (q, p))
    }


def variant(releases: PartialReleases, name: str) -> PartialReleases:
    """``releases`` as the variant ``name`` (module doc) fits them."""
    if name == "base":
        return releases
    kind = name.rstrip("0123456789.")
    if kind not in ("drop", "dropx", "drops", "dropxs", "dropf"):
        raise SystemExit(
            f"unknown variant {name!r}: base, dropK, dropxK, dropsK, dropxsK or dropfK."
        )
    k = float(name[len(kind) :])
    top = {
        id(t): max(u.sigma for u in group)
        for group in (releases.own, releases.cross)
        for t in group
    }

    def out(t: NoisyTable) -> bool:
        return _thin(t, k) and (kind != "dropf" or t.sigma >= top[id(t)])

    own = list(releases.own)
    if "x" not in kind:
        own = [t for t in own if not out(t)]
        own += [s for t in releases.own if out(t) for s in _sums(t)]
    presence = {pq: list(ts) for pq, ts in releases.presence.items()}
    if kind in ("drops", "dropxs"):
        for t in releases.cross:
            if out(t):
                for pq, table in _shared_sums(releases, t).items():
                    presence.setdefault(pq, []).append(table)
    return dataclasses.replace(
        releases,
        own=tuple(own),
        cross=tuple(t for t in releases.cross if not out(t)),
        presence={pq: tuple(ts) for pq, ts in presence.items()},
    )


def measure(model: union_model.UnionModel, codes: np.ndarray, sizes: list[int]) -> dict:
    """The intersection model's 1-way TVD per column, mean 2-way TVD, and each two-valued
    column's signed error of its rarer value's share, against ``codes`` (shared records);
    ``sizes``: each column's values in the spec (the model has "absent" besides)."""
    mrf = model.population_model("intersection")
    d = codes.shape[1]
    truth = [np.bincount(codes[:, j], minlength=mrf.domain.sizes[j]) / len(codes) for j in range(d)]
    one, rare = [], {}
    for j in range(d):
        p = mrf.marginal([j]).ravel()
        p = p / p.sum()
        one.append(0.5 * float(np.abs(p - truth[j][: p.size]).sum()))
        if sizes[j] == 2:
            r = int(np.argmin(truth[j][:2]))
            rare[str(j)] = float(p[r] - truth[j][r])
    two = []
    for a, b in itertools.combinations(range(d), 2):
        p = mrf.marginal([a, b])
        t = np.zeros(p.shape)
        np.add.at(t, (codes[:, a], codes[:, b]), 1.0)
        two.append(0.5 * float(np.abs(p / p.sum() - t / len(codes)).sum()))
    return {"one": one, "two": float(np.mean(two)), "rare": rare}


def markdown(head: dict, rows: list[dict]) -> str:
    """Per column and variant: mean 1-way TVD; then the means and the rare values' errors."""
    res = rows[0]
    names, variants = res["columns"], res["variants"]
    runs = res["runs"]
    lines = [
        f"# The union fit refitted without noise-dominated tables: {res['table']} "
        "(`benchmarks/union_refit.py`)",
        "",
        f"Command: `{head['command']}`. Commit {head['commit']}. Machine: {head['machine']}. "
        f"Epsilon {EPSILON}, delta {DELTA}, seeds 0-{res['seeds'] - 1}, against the "
        f"{res['shared']:,} shared records; every variant refits the same releases. Mean "
        "over the seeds (+- standard error where shown).",
        "",
        "| column | " + " | ".join(variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]
    for j, col in enumerate(names):
        cells = [f"{np.mean([r[v]['one'][j] for r in runs]):.4f}" for v in variants]
        lines.append(f"| {col} | " + " | ".join(cells) + " |")
    for label, get in (
        ("mean 1-way", lambda r, v: float(np.mean(r[v]["one"]))),
        ("mean 2-way", lambda r, v: r[v]["two"]),
    ):
        cells = [f"**{np.mean([get(r, v) for r in runs]):.4f}**" for v in variants]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Two-valued columns: the model's share of the rarer value minus the truth's "
        "(positive: the rare value inflated), mean +- se over the seeds, and how many seeds "
        "were positive.",
        "",
        "| column | " + " | ".join(variants) + " |",
        "|---|" + "---|" * len(variants),
    ]
    for key in runs[0][variants[0]]["rare"]:
        j, cells = int(key), []
        for v in variants:
            errs = [r[v]["rare"][key] for r in runs]
            m, se = mean_se(errs)
            cells.append(f"{m:+.4f} +- {se:.4f} ({sum(e > 0 for e in errs)}/{len(errs)})")
        lines.append(f"| {names[j]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="a corpus harness run's folder (its --dir)")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--variants", nargs="+", default=["base", "drop1", "dropx1"])
    ap.add_argument("--label", default=None, help="the table's name in the output")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    folder = Path(args.dir)
    spec, frames, shared = harness_tables(folder)
    codes = as_table(shared, spec)[0].codes
    sizes = [spec[c].size for c in spec.names]
    runs = []
    for seed in range(args.seeds):
        releases, options = capture(frames, spec, seed)
        row = {}
        for name in args.variants:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = union_model.fit_union(variant(releases, name), **options)
            row[name] = measure(model, codes, sizes)
        runs.append(row)
        print(f"seed {seed}: " + ", ".join(f"{v} {row[v]['two']:.4f}" for v in row), flush=True)
    result = {
        "table": args.label or folder.name,
        "seeds": args.seeds,
        "shared": len(shared),
        "columns": list(spec.names),
        "variants": args.variants,
        "runs": runs,
    }
    write_results(args.json, args.md, run_head(__file__, argv), [result], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
