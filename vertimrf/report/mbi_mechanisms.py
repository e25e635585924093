"""MST and AIM (McKenna et al. 2021, 2022) on an integer-coded table, written on mbi >= 2's
estimation API (``pip install "vertimrf[baselines]"``).

mbi 2 ships the estimator (Private-PGM), not the mechanisms, so they are written here from
their papers, under zCDP with rho from (epsilon, delta) and add/remove neighbours (the
sensitivity of a marginal is 1):

- MST: a third of rho measures every 1-way marginal, a third selects a spanning tree of pairs
  (d - 1 exponential mechanisms over the pairs that join two components, scored by the L1
  distance between the true 2-way marginal and the product of the noisy 1-ways), a third
  measures the tree's 2-way marginals; Private-PGM estimates the model and samples it. Unlike
  the reference code, it does not merge rare values of a column first.
- AIM: a tenth of rho measures every 1-way marginal; then up to T = 2d rounds (the paper's
  default is 16d; fewer, so that a run fits the report's cap). Each round spends 1/T of the
  rest, 9/10 on a Gaussian measurement and 1/10 on an exponential mechanism that picks it
  from the workload (every 2-way marginal whose model stays within the size cap), scored by
  L1 error minus the noise its measurement would add, weighted by workload overlap. When a
  measurement changes the model's marginal by less than its noise, the noise scale halves
  and the selection's epsilon doubles; the last round spends what remains.

Noise and selection draw from ``numpy.random.Generator(seed)``: seeded, for the report, not
for release. Run :func:`synthesize` in a child process (:mod:`vertimrf.report.baselines`)
that is killed at a time cap.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vertimrf.privacy.zcdp import epsilon_to_rho

MECHANISMS = ("mst", "aim")
ESTIMATION_ITERS = 1000  # Private-PGM's iterations for a model that is sampled
ROUND_ITERS = 100  # AIM's re-estimate between rounds, warm-started from the last model
AIM_MAX_CELLS = 80_000  # AIM's cap on the model size (cells over all measured cliques)


def marginal(codes: np.ndarray, sizes: list[int], clique: tuple[int, ...]) -> np.ndarray:
    """The counts of ``clique``'s cells, flattened in C order."""
    shape = tuple(sizes[j] for j in clique)
    flat = np.ravel_multi_index(tuple(codes[:, j] for j in clique), shape)
    return np.bincount(flat, minlength=math.prod(shape)).astype(float)


def _name(j: int) -> str:
    """Column j's name for mbi: zero-padded, so that names sort in column order."""
    return f"c{j:04d}"


def exponential(rng: np.random.Generator, scores: np.ndarray, epsilon: float) -> int:
    """The exponential mechanism (sensitivity 1) by the Gumbel-max trick."""
    return int(np.argmax(epsilon / 2 * scores + rng.gumbel(size=scores.size)))


def synthesize(
    method: str, codes: np.ndarray, sizes: list[int], epsilon: float, delta: float, seed: int
) -> np.ndarray:
    """``method`` ("mst" or "aim") on ``codes``; a synthetic table of as many rows."""
    import jax

    jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(seed)
    rho = epsilon_to_rho(epsilon, delta)
    measure = _Measurer(codes, sizes, rng)
    if method == "mst":
        model = _mst(measure, rho)
    elif method == "aim":
        model = _aim(measure, rho)
    else:
        raise ValueError(f"unknown mechanism {method!r}; expected one of {MECHANISMS}")
    data = model.synthetic_data(rows=len(codes)).to_dict()
    return np.stack([np.asarray(data[_name(j)], dtype=np.int64) for j in range(len(sizes))], 1)


class _Measurer:
    """Gaussian measurements of marginals and Private-PGM's estimate from them."""

    def __init__(self, codes: np.ndarray, sizes: list[int], rng: np.random.Generator) -> None:
        from mbi import Domain

        self.codes, self.sizes, self.rng = codes, sizes, rng
        self.domain = Domain([_name(j) for j in range(len(sizes))], sizes)
        self.measurements: list[Any] = []

    def __call__(self, clique: tuple[int, ...], sigma: float) -> np.ndarray:
        from mbi import LinearMeasurement

        noisy = marginal(self.codes, self.sizes, clique)
        noisy += self.rng.normal(0.0, sigma, noisy.shape)
        names = tuple(_name(j) for j in clique)
        self.measurements.append(LinearMeasurement(noisy, names, stddev=sigma))
        return noisy

    def estimate(self, warm: Any = None, iters: int = ESTIMATION_ITERS) -> Any:
        """Private-PGM's model (an mbi ``Model``) of every measurement so far."""
        from mbi import estimation

        return estimation.MirrorDescent().estimate(
            self.domain, self.measurements, iters=iters, warm_start=warm
        )


def model_marginals(
    model: Any, cliques: Sequence[tuple[int, ...]]
) -> dict[tuple[int, ...], np.ndarray]:
    """The marginals of an mbi model on ``cliques`` (flattened counts), by contracting its
    potentials in numpy (opt_einsum), which unlike mbi's ``project`` compiles nothing."""
    import opt_einsum

    operands: list = []
    for clique in model.potentials.cliques:
        values = np.asarray(model.potentials[clique].values, dtype=float)
        operands += [np.exp(values - values.max()), [int(a[1:]) for a in clique]]
    out = {}
    for clique in cliques:
        counts = opt_einsum.contract(*operands, list(clique)).ravel()
        out[clique] = counts / counts.sum() * float(model.total)
    return out


def _mst(measure: _Measurer, rho: float) -> Any:
    d = len(measure.sizes)
    sigma1 = math.sqrt(3 * d / (2 * rho))
    ones = [np.clip(measure((j,), sigma1), 0, None) for j in range(d)]
    probs = [o / o.sum() if o.sum() > 0 else np.full(o.size, 1 / o.size) for o in ones]
    n = len(measure.codes)
    pairs = list(itertools.combinations(range(d), 2))
    error = {
        (i, j): np.abs(
            marginal(measure.codes, measure.sizes, (i, j))
            - n * np.outer(probs[i], probs[j]).ravel()
        ).sum()
        for i, j in pairs
    }
    eps_round = math.sqrt(8 * rho / 3 / max(d - 1, 1))
    component = list(range(d))
    tree = []
    for _ in range(d - 1):
        options = [p for p in pairs if component[p[0]] != component[p[1]]]
        i, j = options[exponential(measure.rng, np.array([error[p] for p in options]), eps_round)]
        tree.append((i, j))
        old, new = component[j], component[i]
        component = [new if c == old else c for c in component]
    sigma2 = math.sqrt(3 * max(d - 1, 1) / (2 * rho))
    for clique in tree:
        measure(clique, sigma2)
    return measure.estimate()


def _aim(measure: _Measurer, rho: float, rounds_factor: int = 2) -> Any:
    d, sizes = len(measure.sizes), measure.sizes
    workload = list(itertools.combinations(range(d), 2))
    rounds = rounds_factor * d
    rho_used = 0.1 * rho
    sigma = math.sqrt(d / (2 * rho_used))
    for j in range(d):
        measure((j,), sigma)
    model = measure.estimate()
    sigma = math.sqrt(rounds / (2 * 0.9 * rho))
    epsilon = math.sqrt(8 * 0.1 * 0.9 * rho / rounds)
    weights = {c: sum(len(set(c) & set(w)) for w in workload) for c in workload}
    measured: list[tuple[int, ...]] = []
    while rho_used < rho:
        left = rho - rho_used
        if left < 2 * (1 / (2 * sigma**2) + epsilon**2 / 8):
            sigma = math.sqrt(1 / (2 * 0.9 * left))
            epsilon = math.sqrt(8 * 0.1 * left)
        rho_used += 1 / (2 * sigma**2) + epsilon**2 / 8
        cells = sum(math.prod(sizes[j] for j in c) for c in measured)
        options = [c for c in workload if cells + math.prod(sizes[j] for j in c) <= AIM_MAX_CELLS]
        if not options:
            break
        estimates = model_marginals(model, options)
        scores = []
        for c in options:
            true = marginal(measure.codes, sizes, c)
            estimate = estimates[c]
            bias = math.sqrt(2 / math.pi) * sigma * true.size
            scores.append(weights[c] * (np.abs(true - estimate).sum() - bias))
        sensitivity = max(weights[c] for c in options)
        clique = options[exponential(measure.rng, np.array(scores) / sensitivity, epsilon)]
        before = estimates[clique]
        measure(clique, sigma)
        measured.append(clique)
        model = measure.estimate(warm=model, iters=ROUND_ITERS)
        after = model_marginals(model, [clique])[clique]
        if np.abs(after - before).sum() <= math.sqrt(2 / math.pi) * sigma * after.size:
            sigma /= 2
            epsilon *= 2
    return measure.estimate(warm=model)


def main(argv: list[str]) -> None:
    """``python -m vertimrf.report.mbi_mechanisms DIR METHOD EPSILON DELTA SEED``: read
    ``DIR/codes.npy`` and ``DIR/sizes.npy``, write ``DIR/synth.npy``."""
    folder, method, epsilon, delta, seed = argv
    codes = np.load(f"{folder}/codes.npy", allow_pickle=False)
    sizes = [int(s) for s in np.load(f"{folder}/sizes.npy", allow_pickle=False)]
    synth = synthesize(method, codes, sizes, float(epsilon), float(delta), int(seed))
    np.save(f"{folder}/synth.npy", synth, allow_pickle=False)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
