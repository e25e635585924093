"""R-scores: exact values, the add/remove sensitivity bound of the real and of the rounded
(released) score by brute force, and the release on the 1/s grid with its charge."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.mechanisms import quantum_scale, rounded_sensitivity
from vertimrf.privacy.samplers import SeededSampler
from vertimrf.synth.privmrf.budget_split import R_SCORE_SENSITIVITY
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.scores import (
    _deviation_sum,
    noisy_r_scores,
    noisy_tvd_scores,
    pair_list,
    rounded_r_scores,
)


def _fraction_r(codes: np.ndarray, i: int, j: int, sizes) -> Fraction:
    """R_ij in exact rationals, from the definition."""
    n = len(codes)
    total = Fraction(0)
    for a in range(sizes[i]):
        for b in range(sizes[j]):
            cab = int(np.sum((codes[:, i] == a) & (codes[:, j] == b)))
            ca, cb = int(np.sum(codes[:, i] == a)), int(np.sum(codes[:, j] == b))
            total += abs(Fraction(cab) - Fraction(ca * cb, n))
    return total / 2


def _noise(seed: int = 0) -> FitNoise:
    return FitNoise(PrivacyLedger(), SeededSampler(seed), None)


def _direct_r(codes: np.ndarray, i: int, j: int) -> float:
    n = len(codes)
    total = 0.0
    for a in range(codes[:, i].max() + 1):
        for b in range(codes[:, j].max() + 1):
            cab = np.sum((codes[:, i] == a) & (codes[:, j] == b))
            total += abs(cab - np.sum(codes[:, i] == a) * np.sum(codes[:, j] == b) / n)
    return total / 2


@pytest.mark.parametrize("scale", [1, 3, 1024, 2**20])
def test_rounded_scores_are_exact(scale: int) -> None:
    # round(s R) half up, from the exact rational R: floor(s R + 1/2).
    rng = np.random.default_rng(4)
    sizes = [3, 2, 4]
    codes = np.column_stack([rng.integers(0, s, 37) for s in sizes])
    got = rounded_r_scores(codes, sizes, scale)
    want = [
        math.floor(scale * _fraction_r(codes, i, j, sizes) + Fraction(1, 2))
        for i, j in pair_list(3)
    ]
    assert got.dtype == np.int64 and got.tolist() == want


def test_deviation_sum_in_python_integers_for_large_n() -> None:
    # Counts above 2**30 take the Python-integer path; the sum is checked by hand.
    joint = np.array([[2.0**31, 1.0], [3.0, 2.0**31]])
    n = 2**32 + 4
    row, col = [2**31 + 1, 2**31 + 3], [2**31 + 3, 2**31 + 1]
    cells = [[2**31, 1], [3, 2**31]]
    want = sum(abs(n * cells[a][b] - row[a] * col[b]) for a in range(2) for b in range(2))
    assert want > 2**63  # would overflow int64
    assert _deviation_sum(joint, n) == want


def test_independent_and_identical_columns() -> None:
    # x, y independent by construction (full product grid): R = 0.
    grid = np.array(list(itertools.product(range(3), range(2))))
    assert rounded_r_scores(grid, [3, 2], 1).tolist() == [0]
    # y = x over two equiprobable values, n = 4: cells 2 - 1 = 1 on the diagonal, 0 - 1 off it.
    same = np.array([[0, 0], [0, 0], [1, 1], [1, 1]])
    assert rounded_r_scores(same, [2, 2], 1).tolist() == [2]


def test_sensitivity_bound_by_brute_force() -> None:
    # Every table of n <= 4 records over a 2 x 3 domain and every added record: the change
    # of R is exactly n/(n+1) * 2 (1 - p_x)(1 - p_y) (scores.py) and below the bound 2.
    cells = list(itertools.product(range(2), range(3)))
    worst = 0.0
    for n in range(1, 5):
        for rows in itertools.combinations_with_replacement(cells, n):
            base = np.array(rows)
            r0 = _direct_r(base, 0, 1)
            for rec in cells:
                bigger = np.vstack([base, rec])
                change = abs(_direct_r(bigger, 0, 1) - r0)
                px, py = np.mean(base[:, 0] == rec[0]), np.mean(base[:, 1] == rec[1])
                assert change <= n / (n + 1) * 2 * (1 - px) * (1 - py) + 1e-12
                worst = max(worst, change)
    assert worst < R_SCORE_SENSITIVITY
    # Attained by adding a record with unseen values (p_x = p_y = 0) to n = 4 rows.
    assert worst == pytest.approx(4 / 5 * 2)


@pytest.fixture(scope="module")
def neighbours() -> list[tuple[np.ndarray, np.ndarray, Fraction]]:
    """Every table of n <= 4 records on a 2 x 3 domain with every added record, and the
    exact change of R (the empty table scores 0)."""
    sizes = [2, 3]
    cells = list(itertools.product(range(2), range(3)))
    out = []
    for n in range(0, 5):
        for rows in itertools.combinations_with_replacement(cells, n):
            base = np.array(rows, dtype=np.int64).reshape(n, 2)
            r0 = _fraction_r(base, 0, 1, sizes) if n else Fraction(0)
            for rec in cells:
                bigger = np.vstack([base, rec])
                out.append((base, bigger, abs(_fraction_r(bigger, 0, 1, sizes) - r0)))
    return out


@pytest.mark.parametrize("scale", [1, 2, 3, 4, 1024])
def test_rounded_score_sensitivity_by_brute_force(scale: int, neighbours) -> None:
    # The released integer round(s R) moves by at most ceil(2 s) = 2 s under add/remove of a
    # record (mechanisms.py), over every neighbouring pair of the fixture. The rounding can
    # make the change exceed s times the real change (checked), so the bound must allow it.
    bound = rounded_sensitivity(R_SCORE_SENSITIVITY, scale)
    assert bound == 2 * scale
    worst, beyond = 0, False
    for base, bigger, real in neighbours:
        r0, r1 = (
            rounded_r_scores(base, [2, 3], scale)[0],
            rounded_r_scores(bigger, [2, 3], scale)[0],
        )
        change = abs(int(r1) - int(r0))
        beyond |= change > scale * real
        worst = max(worst, change)
    assert worst <= bound
    assert beyond


def test_noisy_scores_are_symmetric_and_centred() -> None:
    rng = np.random.default_rng(1)
    sizes = [2, 3, 2, 4]
    codes = np.column_stack([rng.integers(0, s, 500) for s in sizes])
    exact = np.zeros((4, 4))
    for i, j in pair_list(4):
        exact[i, j] = exact[j, i] = _direct_r(codes, i, j) / 480.0
    # sigma 1e-9: s = 2**20 (the cap), noise parameter ~1e-3, so the draws are 0 and the
    # scores are the exact ones rounded to 2**-20 (error <= 2**-21 / 480).
    noisy = noisy_tvd_scores(codes, sizes, sigma=1e-9, n_hat=480.0, noise=_noise(1))
    np.testing.assert_allclose(noisy, exact, atol=1e-8)
    assert np.array_equal(noisy, noisy.T)
    noisy = noisy_tvd_scores(codes, sizes, sigma=5.0, n_hat=480.0, noise=_noise(2))
    # Noise std on the TVD scale is 5/480 ~ 0.0104; 6 pairs stay within 6 sd.
    assert np.all(np.abs(noisy - exact) < 6 * 5 / 480)


def test_noisy_scores_lie_on_the_public_grid_and_are_charged_by_hand() -> None:
    # sigma = 5: the smallest power of two s with 5 s >= 2**10 is 256 (5 * 128 = 640).
    # Rounded scores have sensitivity ceil(2 * 256) = 512, the noise parameter is
    # 256 * 5 = 1280, so each of the C(3, 2) = 3 pairs costs 512**2 / (2 * 1280**2) = 0.08,
    # 0.24 in all: the continuous charge 3 * 2**2 / (2 * 5**2).
    rng = np.random.default_rng(3)
    sizes = [2, 3, 2]
    codes = np.column_stack([rng.integers(0, s, 200) for s in sizes])
    noise = _noise(5)
    noisy = noisy_r_scores(codes, sizes, 5.0, noise)
    assert quantum_scale(5.0) == 256
    upper = noisy[np.triu_indices(3, 1)] * 256
    assert np.array_equal(upper, np.rint(upper)) and not np.array_equal(upper % 256, 0 * upper)
    (release,) = noise.ledger.releases
    assert release.mechanism == "privmrf.r_scores" and release.count == 3
    assert release.params == {
        "sensitivity": 512,
        "sigma": 1280.0,
        "sampler": "discrete_gaussian",
        "scale": 256,
    }
    assert release.rho == pytest.approx(0.24, rel=1e-15)
    assert noise.charged == [release]
