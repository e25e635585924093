"""R-scores: exact values and the add/remove sensitivity bound, by brute force."""

import itertools

import numpy as np
import pytest

from vertimrf.synth.privmrf.budget_split import R_SCORE_SENSITIVITY
from vertimrf.synth.privmrf.scores import exact_r_scores, noisy_tvd_scores, pair_list, r_score


def _direct_r(codes: np.ndarray, i: int, j: int) -> float:
    n = len(codes)
    total = 0.0
    for a in range(codes[:, i].max() + 1):
        for b in range(codes[:, j].max() + 1):
            cab = np.sum((codes[:, i] == a) & (codes[:, j] == b))
            total += abs(cab - np.sum(codes[:, i] == a) * np.sum(codes[:, j] == b) / n)
    return total / 2


def test_exact_scores_match_the_definition() -> None:
    rng = np.random.default_rng(0)
    sizes = [3, 2, 4]
    codes = np.column_stack([rng.integers(0, s, 40) for s in sizes])
    codes[0] = [2, 1, 3]  # every value occurs, so max()+1 is the domain size
    scores = exact_r_scores(codes, sizes)
    for i, j in pair_list(3):
        assert scores[i, j] == scores[j, i] == pytest.approx(_direct_r(codes, i, j), abs=1e-12)
    assert np.all(np.diag(scores) == 0)


def test_independent_and_identical_columns() -> None:
    # x, y independent by construction (full product grid): R = 0.
    grid = np.array(list(itertools.product(range(3), range(2))))
    assert r_score(grid, 0, 1, [3, 2]) == pytest.approx(0.0, abs=1e-12)
    # y = x over two equiprobable values, n = 4: cells 2 - 1 = 1 on the diagonal, 0 - 1 off it.
    same = np.array([[0, 0], [0, 0], [1, 1], [1, 1]])
    assert r_score(same, 0, 1, [2, 2]) == pytest.approx(2.0)


def test_sensitivity_bound_by_brute_force() -> None:
    # Every table of n <= 4 records over a 2 x 3 domain and every added record: the change
    # of R is exactly n/(n+1) * 2 (1 - p_x)(1 - p_y) (scores.py) and below the bound 2.
    sizes = [2, 3]
    cells = list(itertools.product(range(2), range(3)))
    worst = 0.0
    for n in range(1, 5):
        for rows in itertools.combinations_with_replacement(cells, n):
            base = np.array(rows)
            r0 = r_score(base, 0, 1, sizes)
            for rec in cells:
                bigger = np.vstack([base, rec])
                change = abs(r_score(bigger, 0, 1, sizes) - r0)
                px, py = np.mean(base[:, 0] == rec[0]), np.mean(base[:, 1] == rec[1])
                assert change <= n / (n + 1) * 2 * (1 - px) * (1 - py) + 1e-12
                worst = max(worst, change)
    assert worst < R_SCORE_SENSITIVITY
    # Attained by adding a record with unseen values (p_x = p_y = 0) to n = 4 rows.
    assert worst == pytest.approx(4 / 5 * 2)


def test_noisy_scores_are_symmetric_and_centred() -> None:
    rng = np.random.default_rng(1)
    sizes = [2, 3, 2, 4]
    codes = np.column_stack([rng.integers(0, s, 500) for s in sizes])
    exact = exact_r_scores(codes, sizes) / 480.0
    noisy = noisy_tvd_scores(codes, sizes, sigma=1e-9, n_hat=480.0, rng=rng)
    np.testing.assert_allclose(noisy, exact, atol=1e-10)
    assert np.array_equal(noisy, noisy.T)
    noisy = noisy_tvd_scores(codes, sizes, sigma=5.0, n_hat=480.0, rng=np.random.default_rng(2))
    # Noise std on the TVD scale is 5/480 ~ 0.0104; 6 pairs stay within 6 sd.
    assert np.all(np.abs(noisy - exact) < 6 * 5 / 480)
