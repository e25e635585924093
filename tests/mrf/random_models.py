"""Random MRF models for exactness tests: random graphs over 1-3 components, their specs,
models with random potentials, and the brute-force joint to compare with."""

import itertools

import numpy as np

from tests.naive import brute_force_log_joint
from vertimrf.domain import Domain
from vertimrf.mrf import MarkovRandomField

MAX_JOINT = 100_000  # the most cells of a random model's joint table


def random_graph(rng: np.random.Generator, d: int) -> list[tuple[int, ...]]:
    """Edges over 1-3 disconnected components: random trees (chordal) plus chords/cycles."""
    perm = rng.permutation(d)
    n_comp = int(rng.integers(1, min(3, d) + 1))
    cuts = np.sort(rng.choice(np.arange(1, d), size=n_comp - 1, replace=False))
    edges = []
    for comp in np.split(perm, cuts):
        comp = [int(a) for a in comp]
        for i in range(1, len(comp)):
            edges.append((comp[int(rng.integers(0, i))], comp[i]))
        if len(comp) >= 4 and rng.random() < 0.6:
            edges.append((comp[0], comp[-1]))
            edges.append((comp[len(comp) // 2], comp[-1]))
        for a, b in itertools.combinations(comp, 2):
            if rng.random() < 0.15:
                edges.append((a, b))
    return edges


def random_spec(seed: int) -> tuple[Domain, list[tuple[int, ...]], np.random.Generator]:
    """Random domain (3-10 attributes of size 2-9, joint <= MAX_JOINT) and graph edges."""
    rng = np.random.default_rng(seed)
    d = int(rng.integers(3, 11))
    while True:
        sizes = rng.integers(2, 10, size=d)
        if np.prod(sizes) <= MAX_JOINT:
            break
    domain = Domain.from_sizes([int(s) for s in sizes])
    return domain, random_graph(rng, d), rng


def random_model(seed: int, scale: float = 30.0, neg_inf: float = 0.0) -> MarkovRandomField:
    """Random MRF of random_spec(seed) with potentials U(-scale, scale) (some -inf if asked)."""
    domain, edges, rng = random_spec(seed)
    model = MarkovRandomField(
        domain, edges, heuristic=["min_fill", "min_weight", "static_min_degree"][seed % 3]
    )
    theta = rng.uniform(-scale, scale, model.layout.total_cells)
    if neg_inf:
        theta[rng.random(theta.size) < neg_inf] = -np.inf
    model.potentials = theta
    return model


def joint_of(model: MarkovRandomField) -> np.ndarray:
    return brute_force_log_joint(
        model.domain, model.cliques, [model.potentials.table(c) for c in model.cliques]
    )


def assert_log_close(got: np.ndarray, want: np.ndarray, tol: float = 1e-9) -> None:
    """|log p - log q| <= tol, i.e. relative error <= ~tol on the probabilities; -inf equal."""
    assert got.shape == want.shape
    assert np.array_equal(np.isneginf(got), np.isneginf(want))
    fin = np.isfinite(want)
    assert np.all(np.abs(got[fin] - want[fin]) <= tol)
