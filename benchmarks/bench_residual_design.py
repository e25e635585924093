"""Does releasing a cross-party pair's interaction alone lift the three-viewer floor? A check
of the measurement design on a small model, not of the engine.

Method secure publishes a cross-party marginal at 1.5 sigma^2 a cell (three noise components,
each known to one viewer; ``docs/accounting.md``). On a 2 x 2 table the only part of a cross
pair that its two parties cannot release alone is its interaction t = c00 - c01 - c10 + c11
(sensitivity 1 under adding or removing a record, as the table's): the row and column sums are
each party's own 1-way marginals, which its own pairs already carry. Released alone at 1.5
sigma^2, t has less variance than the 4 sigma^2 it has in a table released at sigma^2.

On an r x c table the interaction is (R_r kron R_c) c, R_k = k I - J (integer, rank
(r-1)(c-1), sensitivity sqrt(r (r-1) c (c-1))); released at the table's rho it has, per
coordinate of the interaction, (1 - 1/r)(1 - 1/c) of the table's variance.

The model: six attributes of a table, split 3 & 3 (NLTCS: its first six, binary; Adult: its
six smallest, 2, 2, 5 and 6, 7, 7 values), so 6 own pairs and 9 cross pairs. Every pair is
released once, at one zCDP rho (from epsilon at delta 1e-6; sigma^2 = 15 / (2 rho), each
release of a table's sensitivity 1), with Gaussian noise; the pairwise log-linear model (an MRF
over the pairs) is fitted to all releases by weighted least squares (L-BFGS); the error is the
mean TVD of the 20 exact 3-way marginals of the fitted model against the table's (no
sampling). The designs:

* ``tables``: every pair as its table at sigma^2 (the engine's first release, local oracle);
* ``tables, cross at 1.5``: the cross tables at 1.5 sigma^2 (method secure today);
* ``interactions``: the cross pairs release only their interaction, at the table's rho (the
  local oracle);
* ``interactions, cross at 1.5``: the same at 1.5 times the variance (the secure product under
  the same per-viewer guarantee);
* ``interactions + 1-ways`` (and ``, cross at 1.5``): as ``interactions``, and each
  attribute's 1-way marginal released too (by its party alone: no floor), each release at
  one rho of 21.

Each design draws its noise from one generator seeded 0 over all seeds. ``--jobs 2`` runs two
tasks (table, epsilon, design) at a time.

    python benchmarks/bench_residual_design.py --datasets nltcs --seeds 50 --jobs 2 \
        --json benchmarks/results/residual_design.json --md benchmarks/results/residual_design.md
    python benchmarks/bench_residual_design.py --datasets adult --seeds 20 --jobs 2 \
        --json benchmarks/results/residual_design_adult.json \
        --md benchmarks/results/residual_design_adult.md
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import mean_se, run_head, write_results  # noqa: E402

DELTA = 1e-6
EPSILONS = (0.05, 0.1, 0.2, 0.4)
# Each table's attributes (by index), party 0's first: NLTCS's first six (binary); Adult's
# six smallest (2, 2, 5 and 6, 7, 7 values).
TABLES = {"nltcs": ((0, 1, 2), (3, 4, 5)), "adult": ((9, 14, 8), (7, 1, 5))}
DESIGNS = {  # name: (cross pairs as their interaction only, cross variance / sigma^2, 1-ways)
    "tables": (False, 1.0, False),
    "tables, cross at 1.5": (False, 1.5, False),
    "interactions": (True, 1.0, False),
    "interactions, cross at 1.5": (True, 1.5, False),
    "interactions + 1-ways": (True, 1.0, True),
    "interactions + 1-ways, cross at 1.5": (True, 1.5, True),
}
# The last column's ratios: each local oracle's design to its secure twin.
SECURE_OF = {d: f"{d}, cross at 1.5" for d in DESIGNS if f"{d}, cross at 1.5" in DESIGNS}


def centering(k: int) -> np.ndarray:
    """k I - J: an integer matrix whose rows span the contrasts of k values."""
    return k * np.eye(k) - np.ones((k, k))


class Toy:
    """A table's joint over a few attributes, its pairs and the fit."""

    def __init__(self, dataset: str) -> None:
        from vertimrf.codec import as_table
        from vertimrf.datasets import load_dataset

        df, spec = load_dataset(dataset)
        table, codec = as_table(df, spec)
        own, other = TABLES[dataset]
        attrs = own + other
        self.split = len(own)
        self.sizes = tuple(codec.domain.shape(list(attrs)))
        codes = table.codes[:, list(attrs)]
        self.n = codes.shape[0]
        cells = int(np.prod(self.sizes))
        flat = np.ravel_multi_index(tuple(codes.T), self.sizes)
        self.truth = np.bincount(flat, minlength=cells) / self.n
        grid = np.indices(self.sizes).reshape(len(attrs), -1)
        self.pairs = list(itertools.combinations(range(len(attrs)), 2))
        self.singles = [(a,) for a in range(len(attrs))]
        self.index = {q: self._index(grid, q) for q in self.pairs + self.singles}
        self.cells = {q: math.prod(self.sizes[a] for a in q) for q in self.index}
        triples = itertools.combinations(range(len(attrs)), 3)
        self.triples = [self._index(grid, t) for t in triples]

    def _index(self, grid: np.ndarray, q: tuple[int, ...]) -> np.ndarray:
        """For each cell of the joint, its cell in the marginal over ``q``."""
        return np.ravel_multi_index(tuple(grid[list(q)]), tuple(self.sizes[a] for a in q))

    def marginal(self, p: np.ndarray, q: tuple[int, ...]) -> np.ndarray:
        return np.bincount(self.index[q], p, minlength=self.cells[q])

    def release(self, design: str, epsilon: float, rng: np.random.Generator) -> list[tuple]:
        """Every pair's noisy release: (pair, query over its table, values, variance). A
        table has sensitivity 1; an interaction (R_r kron R_c, R_k = k I - J) has
        sqrt(r (r-1) c (c-1)), so its variance is that squared times the table's."""
        from vertimrf.privacy.zcdp import epsilon_to_rho

        only_t, factor, ones = DESIGNS[design]
        released = (self.singles if ones else []) + self.pairs  # 1-ways: by their party alone
        sigma2 = len(released) / (2.0 * epsilon_to_rho(epsilon, DELTA))
        out = []
        for q in released:
            cross = len({a < self.split for a in q}) > 1
            query, variance = np.eye(self.cells[q]), sigma2 * (factor if cross else 1.0)
            if cross and only_t:
                r, c = (self.sizes[a] for a in q)
                query = np.kron(centering(r), centering(c))
                variance *= r * (r - 1) * c * (c - 1)
            exact = query @ self.marginal(self.truth, q) * self.n
            out.append((q, query, exact + rng.normal(0.0, math.sqrt(variance), exact.size),
                        variance))  # fmt: skip
        return out

    def fit(self, releases: list[tuple]) -> np.ndarray:
        """The pairwise log-linear model's joint that fits ``releases`` by weighted least
        squares."""
        from scipy.optimize import minimize

        sizes = [self.cells[q] for q in self.pairs]
        offsets = np.concatenate([[0], np.cumsum(sizes)])

        def joint(theta: np.ndarray) -> np.ndarray:
            starts = zip(offsets[:-1], self.pairs, strict=True)
            logp = sum(theta[o + self.index[q]] for o, q in starts)
            return np.exp(logp - np.logaddexp.reduce(logp))

        def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
            p = joint(theta)
            total, g = 0.0, np.zeros_like(p)
            for q, query, y, variance in releases:
                r = query @ self.marginal(self.n * p, q) - y
                total += float(r @ r) / variance
                g += (self.n * 2.0 / variance * (query.T @ r))[self.index[q]]
            h = p * (g - p @ g)
            grad = np.concatenate([np.bincount(self.index[q], h, minlength=s)
                                   for q, s in zip(self.pairs, sizes, strict=True)])  # fmt: skip
            return total, grad

        options = {"maxiter": 5000, "gtol": 1e-12, "ftol": 1e-15}
        return joint(minimize(loss, np.zeros(offsets[-1]), jac=True, method="L-BFGS-B",
                              options=options).x)  # fmt: skip

    def error(self, p: np.ndarray) -> float:
        """Mean TVD of the 3-way marginals of ``p`` against the table's."""
        diff = p - self.truth
        return float(np.mean([0.5 * np.abs(np.bincount(i, diff)).sum() for i in self.triples]))


def markdown(head: dict, rows: list[dict]) -> str:
    out = [
        "# Cross pairs released as their interaction alone: the three-viewer floor on a toy",
        "",
        f"`{head['command']}`; commit {head['commit']}; {head['machine']}; six attributes of "
        "each table split 3 & 3 (NLTCS: its first six, binary; Adult: its six smallest, 2, 2, "
        "5 and 6, 7, 7 values), every pair (and with 1-ways, every attribute) released once "
        f"at one rho each, the pairwise model fitted, delta {DELTA}, seeds {head['seeds']}; "
        "mean 3-way TVD of the fitted model +- standard error; x tables: over the tables "
        "design's; secure / local: a design at 1.5 sigma^2 on its cross pairs over the same "
        "design at sigma^2.",
        "",
        "| table | epsilon | design | 3-way TVD | x tables | secure / local |",
        "|---|---|---|---|---|---|",
    ]
    for dataset, epsilon in sorted({(r["dataset"], r["epsilon"]) for r in rows}):
        at = {r["design"]: r for r in rows if (r["dataset"], r["epsilon"]) == (dataset, epsilon)}
        base = at["tables"]["mean"] if "tables" in at else math.nan
        for design in (d for d in DESIGNS if d in at):
            mean, se = at[design]["mean"], at[design]["se"]
            secure = SECURE_OF.get(design)
            ratio = f"{at[secure]['mean'] / mean:.3f}" if secure in at else ""
            out.append(
                f"| {dataset} | {epsilon:g} | {design} | {mean:.5f} +- {se:.5f} | "
                f"{mean / base:.3f} | {ratio} |"
            )
    return "\n".join(out) + "\n"


@functools.cache
def toy_of(dataset: str) -> Toy:
    """The table's toy, built once per process."""
    return Toy(dataset)


def measure(task: tuple[str, float, str, int]) -> dict:
    """One table, epsilon and design over ``seeds`` seeds (one generator, seeded 0)."""
    dataset, epsilon, design, seeds = task
    toy, rng = toy_of(dataset), np.random.default_rng(0)
    errors = [toy.error(toy.fit(toy.release(design, epsilon, rng))) for _ in range(seeds)]
    mean, se = mean_se(errors)
    print(f"{dataset} {epsilon:g} {design}: {mean:.5f} +- {se:.5f}", file=sys.stderr, flush=True)
    return {"dataset": dataset, "epsilon": epsilon, "design": design, "mean": mean, "se": se,
            "errors": errors}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--designs", nargs="+", default=list(DESIGNS), choices=DESIGNS)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=1, help="processes (one task each)")
    parser.add_argument("--json")
    parser.add_argument("--md")
    args = parser.parse_args(argv)
    grid = itertools.product(args.datasets, args.epsilons, args.designs)
    tasks = [(d, e, g, args.seeds) for d, e, g in grid]
    if args.jobs > 1:
        from multiprocessing import Pool

        with Pool(args.jobs) as pool:
            rows = pool.map(measure, tasks, chunksize=1)
    else:
        rows = [measure(t) for t in tasks]
    head = {**run_head(__file__, argv), "seeds": f"0..{args.seeds - 1} (one generator)"}
    write_results(args.json, args.md, head, rows, markdown)


if __name__ == "__main__":
    main()
