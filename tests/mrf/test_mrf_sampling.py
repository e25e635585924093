"""Forward sampling: kernels against references, clique marginals, cross-clique structure."""

import numpy as np
import pytest

from tests.naive import assign_values_ref, group_rows_ref, round_groups_ref
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.kernels import sample as ks
from vertimrf.mrf import MarkovRandomField
from vertimrf.mrf.cliques import ProjectionMap

N = 200_000


@pytest.fixture(scope="module")
def model() -> MarkovRandomField:
    """Three cliques in a chain plus a disconnected pair; small domains so TVD noise is small."""
    domain = Domain.from_sizes([3, 4, 3, 3, 2, 3, 2, 5])
    m = MarkovRandomField(domain, [(0, 1, 2), (2, 3), (3, 4, 5), (6, 7)], total=1.0)
    m.potentials = np.random.default_rng(11).normal(size=m.layout.total_cells) * 1.5
    return m


@pytest.fixture(scope="module")
def rows(model: MarkovRandomField) -> np.ndarray:
    return model.sample(N, np.random.default_rng(2024))


def empirical(rows: np.ndarray, attrs, domain: Domain) -> np.ndarray:
    idx = np.ravel_multi_index(rows[:, list(attrs)].T, domain.shape(attrs))
    return np.bincount(idx, minlength=domain.size(attrs)) / rows.shape[0]


@pytest.mark.parametrize("shape", [(1, 5), (7, 1), (4, 6), (300, 40), (5000, 3)])
def test_round_groups_matches_reference_and_keeps_group_sizes(shape) -> None:
    ns, nr = shape
    rng = np.random.default_rng(ns * 31 + nr)
    domain = Domain.from_sizes([ns, nr])
    pm = ProjectionMap.build((0, 1), (0,), domain)
    p = rng.gamma(0.5, size=ns * nr)
    p[rng.random(p.size) < 0.2] = 0.0
    if ns > 2:
        p[pm.base[1] + pm.rest] = 0.0  # one all-zero group: split uniformly
    sizes = rng.integers(0, 50, size=ns).astype(np.int64)
    u = rng.random(ns)
    counts = np.zeros(p.size, dtype=np.int64)
    ks.round_groups(p, pm.base, pm.rest, sizes, u, counts)
    assert np.array_equal(counts, round_groups_ref(p, pm.base, pm.rest, sizes, u))
    grid = counts.reshape(ns, nr)
    assert np.array_equal(grid.sum(axis=1), sizes)
    w = p.reshape(ns, nr)
    tot = w.sum(axis=1, keepdims=True)
    expect = np.where(tot > 0, sizes[:, None] * w / np.where(tot > 0, tot, 1), sizes[:, None] / nr)
    assert np.all(np.abs(grid - expect) < 1.0 + 1e-9)  # floor or ceil of the expected count
    assert np.all(grid[(w == 0) & (tot > 0)] == 0)  # zero-probability cells get no rows


def test_systematic_rounding_is_unbiased() -> None:
    """Averaged over offsets u, each cell's count is its expected count k * p."""
    domain = Domain.from_sizes([1, 6])
    pm = ProjectionMap.build((0, 1), (0,), domain)
    p = np.array([0.05, 0.3, 0.15, 0.2, 0.1, 0.2])
    total = np.zeros(6)
    grid = (np.arange(1000) + 0.5) / 1000  # a fine grid of offsets u in [0, 1)
    for u in grid:
        counts = np.zeros(6, dtype=np.int64)
        ks.round_groups(p, pm.base, pm.rest, np.array([7]), np.array([u]), counts)
        total += counts
    np.testing.assert_allclose(total / grid.size, 7 * p, atol=2e-3)


@pytest.mark.parametrize("n,groups", [(10, 3), (1000, 1), (70_000, 37)])
def test_group_rows_and_assign_values_match_reference(n: int, groups: int) -> None:
    rng = np.random.default_rng(n)
    code = rng.integers(0, groups, size=n).astype(np.int64)
    perm = rng.permutation(n).astype(np.int64)
    order, starts = ks.group_rows(code, perm, groups)
    ref_order, ref_starts = group_rows_ref(code, perm, groups)
    assert np.array_equal(order, ref_order) and np.array_equal(starts, ref_starts)
    nr = 6
    domain = Domain.from_sizes([groups, 2, 3])
    pm = ProjectionMap.build((0, 1, 2), (0,), domain)
    counts = np.zeros(groups * nr, dtype=np.int64)
    sizes = np.diff(starts)
    ks.round_groups(rng.random(groups * nr), pm.base, pm.rest, sizes, rng.random(groups), counts)
    rest_codes = np.indices((2, 3)).reshape(2, -1).T.copy()
    cols = np.array([2, 0], dtype=np.int64)
    out = np.full((n, 3), -1, dtype=np.int64)
    ks.assign_values(order, starts, counts, pm.base, pm.rest, rest_codes, cols, out)
    want = np.full((n, 3), -1, dtype=np.int64)
    assign_values_ref(order, starts, counts, pm.base, pm.rest, rest_codes, cols, want)
    assert np.array_equal(out, want) and np.all(out[:, [0, 2]] >= 0)


def test_clique_marginals_within_four_binomial_standard_errors(model, rows) -> None:
    """|p_hat - p| <= 4 sqrt(p (1 - p) / N) for every cell of every clique marginal.

    Multinomial sampling would meet this bound for each cell with probability 1 - 6e-5 (normal
    tail at 4 sigma); the rounded sampler has a smaller variance than that, and the seed is
    fixed, so the test is deterministic.
    """
    assert rows.shape == (N, len(model.domain)) and rows.dtype == np.int64
    assert np.all(rows >= 0) and np.all(rows < np.array(model.domain.sizes))
    for c in model.cliques:
        p = model.clique_marginal(c).ravel()
        se = np.sqrt(p * (1 - p) / N)
        assert np.all(np.abs(empirical(rows, c, model.domain) - p) <= 4 * se + 1e-12)


def test_three_way_marginal_across_cliques(model, rows) -> None:
    """Marginals spanning cliques are right only if each clique is drawn given its separator.

    (0, 2, 3) spans (0,1,2) and (2,3); (1, 3, 5) spans three cliques; (0, 6, 7) spans two
    components, which must come out independent.

    With 36 cells and N = 200k the expected TVD of multinomial sampling is about
    0.5 * sqrt(2/pi) * sum_i sqrt(p_i / N) <= 0.4 * 6 / 447 = 0.0054, under the 0.01 bound.
    """
    for attrs in ([0, 2, 3], [1, 3, 5], [0, 6, 7]):
        p = model.marginal(attrs).ravel()
        assert 0.5 * np.abs(empirical(rows, attrs, model.domain) - p).sum() <= 0.01


def test_sampling_is_deterministic_per_seed_and_respects_zeros() -> None:
    domain = Domain.from_sizes([3, 3, 2])
    m = MarkovRandomField(domain, [(0, 1), (1, 2)])
    m.potentials[(0, 1)] = np.where(np.eye(3) > 0, 0.0, -np.inf)  # only the diagonal is possible
    a = m.sample(5000, np.random.default_rng(5))
    b = m.sample(5000, np.random.default_rng(5))
    assert np.array_equal(a, b)
    assert np.all(a[:, 0] == a[:, 1])
    assert m.sample(0, np.random.default_rng(0)).shape == (0, 3)
    with pytest.raises(ConfigError, match="Generator"):
        m.sample(10, 42)
    with pytest.raises(ConfigError, match="negative"):
        m.sample(-1, np.random.default_rng(0))
