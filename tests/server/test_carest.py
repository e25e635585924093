"""CarEst: the kernel against a numpy reference, the complement trick, the estimator constant
and end-to-end estimates on simulated sketches."""

import itertools
import math

import numpy as np
import pytest

from tests.naive import estimate_cardinality
from vertimrf.domain import Domain
from vertimrf.errors import MessageError
from vertimrf.kernels.carest import union_exceed_counts, union_table_sums
from vertimrf.party.phantoms import privatize, sample_max_geometric
from vertimrf.privacy.fm import FMNoise, fm_noise
from vertimrf.protocol.sketchset import SketchSet
from vertimrf.server.carest import (
    CarEst,
    containment_probability,
    harmonic_constant,
)
from vertimrf.server.merge import MergedSketches, complement_sketches


def _reference_union(comp_t, rows, sizes):
    """Union sketch (cells x t) of every cell, by brute force over the cells."""
    out = []
    for cell in itertools.product(*[range(s) for s in sizes]):
        out.append(np.max(np.stack([comp_t[r + v] for r, v in zip(rows, cell, strict=True)]), 0))
    return np.array(out)


@pytest.mark.parametrize(
    ("t", "sizes"), [(7, [3]), (50, [2, 5]), (33, [4, 1, 3]), (16, [2, 3, 2, 4])]
)
def test_union_kernel_matches_reference(t, sizes):
    rng = np.random.default_rng(len(sizes) * 100 + t)
    total = sum(sizes) + 5
    comp_t = rng.integers(0, 40, (total, t)).astype(np.uint8)
    rows = np.cumsum([2] + sizes[:-1]).astype(np.int64)
    table = rng.random(256)
    full = rng.integers(0, 45, t).astype(np.uint8)
    ref = _reference_union(comp_t, rows, sizes)
    sz = np.array(sizes, dtype=np.int64)
    np.testing.assert_allclose(
        union_table_sums(comp_t, rows, sz, table), table[ref].sum(axis=1), rtol=1e-12
    )
    np.testing.assert_array_equal(
        union_exceed_counts(comp_t, rows, sz, full), (full[None, :] > ref).sum(axis=1)
    )


@pytest.mark.parametrize("sizes", [[1], [2], [5, 3, 1], [7, 2]])
def test_complements_match_brute_force(sizes):
    rng = np.random.default_rng(sum(sizes))
    dom = Domain.from_sizes(sizes)
    vals = rng.integers(0, 4, (300, sum(sizes))).astype(np.uint8)  # many ties on purpose
    comp = complement_sketches(vals, dom)
    for off, u in zip(dom.offsets, sizes, strict=True):
        for v in range(u):
            others = [off + w for w in range(u) if w != v]
            expect = vals[:, others].max(axis=1) if others else np.zeros(300, np.uint8)
            np.testing.assert_array_equal(comp[:, off + v], expect)


def test_constant_reduces_to_hyperloglog_for_gamma_one():
    for t in (16, 128, 2000, 16000):
        assert harmonic_constant(1.0, t) == pytest.approx(0.7213 / (1 + 1.079 / t), rel=1e-4)
    assert harmonic_constant(1.0, 10**9) == pytest.approx(1 / (2 * math.log(2)), rel=1e-8)


@pytest.mark.parametrize("gamma", [1.0, 0.5, 0.25])
def test_harmonic_estimator_is_unbiased_on_exact_sketch_distribution(gamma):
    """The max of N geometrics is drawn exactly by inverse CDF; averaging 400 estimates at
    t = 64 has a standard error of about 1.04/sqrt(64*400) = 0.0065 relative, so a 3% bound is
    more than 4 standard errors."""
    rng = np.random.default_rng(5)
    for n in (1000, 54321, 10**6):
        ests = [
            estimate_cardinality(sample_max_geometric(n, gamma, 64, rng), gamma) for _ in range(400)
        ]
        assert np.mean(ests) == pytest.approx(n, rel=0.03)


def _simulated_sketches(codes, dom, t, noise, rng):
    """Reference LocEnc without hashing: each record gets one Geometric value per repetition
    (shared by all its attributes), and each value's sketch is the max over its records."""
    p = noise.gamma / (1 + noise.gamma)
    g = rng.geometric(p, size=(t, codes.shape[0])).astype(np.uint8)
    vals = np.zeros((t, sum(dom.sizes)), dtype=np.uint8)
    for j, off in enumerate(dom.offsets):
        for v in range(dom.sizes[j]):
            rows = codes[:, j] == v
            if rows.any():
                vals[:, off + v] = g[:, rows].max(axis=1)
    return vals


def _split_sketches(codes, dom, t, noise, rng, split):
    vals = _simulated_sketches(codes, dom, t, noise, rng)
    if noise.k_p:
        vals = privatize(vals, noise, rng)
    out = []
    for cols in split:
        sub = dom.project(cols)
        idx = np.concatenate(
            [np.arange(dom.offsets[c], dom.offsets[c] + dom.sizes[c]) for c in cols]
        )
        out.append(SketchSet(vals[:, idx], sub, noise, "fp"))
    return out


def _truth(codes, dom, attrs):
    h = np.zeros(dom.shape(attrs))
    np.add.at(h, tuple(codes[:, a] for a in attrs), 1)
    return h


def _containment_sd(size, total, t, noise, extra):
    """Delta-method sd of the containment estimate: sd(p_hat) / g'(a) at a = size + extra."""
    a = size + extra
    p = containment_probability(np.array([a]), total, noise.gamma, noise.alpha_min)[0]
    h = max(1.0, 1e-4 * total)
    grid = np.array([max(a - h, 0.0), min(a + h, total)])
    g = containment_probability(grid, total, noise.gamma, noise.alpha_min)
    slope = (g[1] - g[0]) / (grid[1] - grid[0])
    return math.sqrt(max(p * (1 - p), 1 / t) / t) / slope


@pytest.mark.slow
@pytest.mark.parametrize("method", ["containment", "harmonic"])
@pytest.mark.parametrize("dp", [False, True])
def test_carest_estimates_cross_party_marginals(method, dp):
    """Simulated sketches, t = 4000: every cell within 5 standard deviations of the truth.
    Harmonic: the union estimate's relative sd is 1.04/sqrt(t), and phantoms add k_p per
    value sketch in the union. Containment: the delta-method sd of the inverted binomial
    frequency (see _containment_sd)."""
    rng = np.random.default_rng(2)
    n, t = 20000, 4000
    dom = Domain.from_sizes([3, 2, 4, 2])
    codes = np.column_stack([rng.integers(0, u, n) for u in dom.sizes])
    codes[:, 2] = np.where(rng.random(n) < 0.5, codes[:, 0], codes[:, 2])
    noise = fm_noise(0.01, 1.0) if dp else FMNoise(math.inf, 1.0, 0, 0)
    est = CarEst(_split_sketches(codes, dom, t, noise, rng, [[0, 1], [2, 3]]), n, method=method)
    for attrs in ([0], [0, 2], [1, 3], [0, 1, 2], [0, 1, 2, 3]):
        names = [dom.names[a] for a in attrs]
        truth = _truth(codes, dom, attrs)
        got = est.marginal(names)
        sizes = np.array(dom.shape(attrs))
        if method == "harmonic":
            sd = 1.04 * (n - truth + noise.k_p * (sizes - 1).sum()) / math.sqrt(t)
        else:
            total = n + noise.k_p * sizes.sum()
            extra = noise.k_p * len(attrs)
            sd = np.array(
                [_containment_sd(c, total, t, noise, extra) for c in truth.ravel()]
            ).reshape(truth.shape)
        assert np.all(np.abs(got - truth) <= 5 * sd + 1), (attrs, got - truth, sd)
    assert est.marginal(["2", "0"]).shape == (4, 3)


@pytest.mark.parametrize(
    ("a", "b", "gamma", "floor"), [(50, 500, 1.0, 0), (300, 3000, 0.5, 9), (5, 5, 1.0, 3)]
)
def test_containment_probability_matches_simulation(a, b, gamma, floor):
    """Exact max-of-geometric draws; 5 binomial standard errors over 200,000 trials."""
    rng = np.random.default_rng(a + b)
    m = 200_000
    ga = np.maximum(sample_max_geometric(a, gamma, m, rng), floor)
    gb = np.maximum(sample_max_geometric(b, gamma, m, rng), floor)
    freq = float(np.mean(ga > gb))
    p = containment_probability(np.array([a]), a + b, gamma, floor)[0]
    assert abs(freq - p) <= 5 * math.sqrt(p * (1 - p) / m)


def test_containment_beats_harmonic_on_skewed_binary_data():
    """Small cells of skewed attributes: the harmonic error scales with n - T(v), the
    containment error with the cell itself, so its mean absolute error is far smaller."""
    rng = np.random.default_rng(8)
    n, t = 20000, 2000
    dom = Domain.from_sizes([2, 2])
    codes = (rng.random((n, 2)) < [0.08, 0.12]).astype(np.int64)
    sk = _split_sketches(codes, dom, t, fm_noise(0.005, 1.0), rng, [[0], [1]])
    truth = _truth(codes, dom, [0, 1])
    err = {
        m: np.abs(CarEst(sk, n, method=m).marginal(["0", "1"]) - truth).mean()
        for m in ("containment", "harmonic")
    }
    assert err["containment"] < 0.5 * err["harmonic"]


def test_phantoms_are_subtracted_with_sum_of_u_minus_one():
    """DP sketches: with the correct count sum_i (u_i - 1) k_p the mean over all cells of
    (estimate - truth) is near 0; with the reference code's l*(u_first - 1) it is off by
    2 k_p = 1000. The union holds about 6400 elements, so at t = 10000 one cell's sd is about
    1.04 * 6400 / 100 = 67 and the 250 bound is several sd away from both."""
    rng = np.random.default_rng(9)
    n, t = 5000, 10000
    dom = Domain.from_sizes([4, 2])
    codes = np.column_stack([rng.integers(0, u, n) for u in dom.sizes])
    noise = fm_noise(0.002, 1.0)
    sketches = _split_sketches(codes, dom, t, noise, rng, [[0], [1]])
    est = CarEst(sketches, n, method="harmonic").marginal(["0", "1"])
    truth = _truth(codes, dom, [0, 1])
    err = (est - truth).mean()
    wrong_shift = (2 * 3 - 4) * noise.k_p  # l*(u_first-1) - sum(u_i-1) phantoms
    assert abs(err) < 0.25 * wrong_shift


def test_paper_method_matches_formula_and_cache():
    rng = np.random.default_rng(4)
    n, t = 5000, 300
    dom = Domain.from_sizes([3, 2])
    codes = np.column_stack([rng.integers(0, u, n) for u in dom.sizes])
    noise = fm_noise(0.05, 1.0)
    sketches = _split_sketches(codes, dom, t, noise, rng, [[0], [1]])
    est = CarEst(sketches, n, method="algorithm4")
    got = est.marginal(["0", "1"])
    comp = np.concatenate([complement_sketches(s.values, s.domain) for s in sketches], axis=1)
    for a, b in itertools.product(range(3), range(2)):
        s = np.maximum(comp[:, a], comp[:, 3 + b]).astype(float)
        hm = t / np.sum(1 / s)
        expect = max(n - (2.0**hm - (2 + 1) * noise.k_p), 0.0)
        assert got[a, b] == pytest.approx(expect, rel=1e-10)
    got[0, 0] = -1
    assert est.marginal(["0", "1"])[0, 0] != -1  # callers get a copy of the cached result


def test_parties_with_different_sketch_noise_are_refused_with_a_message_error():
    """Two parties whose sketches carry different noise parameters: a MessageError naming
    both (sorting the unorderable FMNoise values used to raise a TypeError instead)."""
    domain = Domain(["a"], [2])
    sets = [
        SketchSet(np.zeros((4, 2), np.uint8), domain, FMNoise(0.5, 1.0, k, 1), "fp") for k in (1, 2)
    ]
    with pytest.raises(MessageError, match="sketch noise"):
        MergedSketches(sets)
