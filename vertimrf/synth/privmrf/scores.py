"""Noisy pairwise R-scores: how far each attribute pair is from independence.

The score of a pair (i, j) is released in count form,

    R_ij(D) = 1/2 * sum_{a,b} | c_ab - c_a * c_b / n |,

(c = counts in D, n = |D|), with discrete Gaussian noise on the 1/s grid of a public scale s
(:mod:`vertimrf.privacy.mechanisms`): round(s R_ij) is computed exactly in integers, as
floor((s N + n) / (2 n)) with N = sum_{a,b} | n c_ab - c_a c_b |, and noised with parameter
s sigma. The result is divided by the released noisy count n_hat afterwards, which gives the
normalised TVD form the reference scores with. The division is post-processing, so no true n
enters a released value.

Sensitivity (add/remove one record r = (x, y) in the pair's columns). Write
g_ab = c_ab - c_a c_b / n and p_a = c_a / n for the smaller table D (n rows) and compare with
D + r (n + 1 rows). Expanding c'_a c'_b / (n + 1) gives, for every cell,

    g'_ab - g_ab = n / (n + 1) * ([a = x] - p_a) * ([b = y] - p_b),

so sum_{a,b} |g'_ab - g_ab| = n / (n + 1) * 2 (1 - p_x) * 2 (1 - p_y) < 4, and by the
triangle inequality |R(D + r) - R(D)| < 2. Hence each score has L2 sensitivity 2
(tight as n grows and p_x, p_y -> 0). This is the bound the reference uses in normalised
form (2 / n), which the analysis marks UNSURE (section 8, item 11); in count form it holds
exactly, and ``tests/synth/privmrf/test_privmrf_scores.py`` checks it by brute force.

Rounded, round(s R) has sensitivity ceil(2 s) = 2 s (s a positive integer; derivation in
:mod:`vertimrf.privacy.mechanisms`), so the charge (2 s)^2 / (2 (s sigma)^2) per pair is the
continuous charge 2^2 / (2 sigma^2): the budget split is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.mrf.cliques import histogram
from vertimrf.synth.privmrf.budget_split import R_SCORE_SENSITIVITY
from vertimrf.synth.privmrf.noise import FitNoise


def pair_list(d: int) -> list[tuple[int, int]]:
    """All attribute pairs i < j in lexicographic order."""
    return [(i, j) for i in range(d) for j in range(i + 1, d)]


def _deviation_sum(joint: np.ndarray, n: int) -> int:
    """N = sum_{a,b} | n c_ab - c_a c_b | of an integer joint table, exactly."""
    counts = np.rint(joint).astype(np.int64)
    if n >= 2**30:  # n c_ab and N could pass int64: Python integers
        counts = counts.astype(object)
    dev = n * counts - np.outer(counts.sum(axis=1), counts.sum(axis=0))
    return int(np.abs(dev).sum())


def rounded_r_scores(codes: np.ndarray, sizes: Sequence[int], scale: int) -> np.ndarray:
    """round(scale * R_ij) (half up) for every pair of :func:`pair_list`, exactly (int64)."""
    n = int(codes.shape[0])
    if n == 0:
        return np.zeros(len(pair_list(len(sizes))), dtype=np.int64)
    s = int(scale)
    return np.array(
        [
            (s * _deviation_sum(histogram(codes, (i, j), sizes), n) + n) // (2 * n)
            for i, j in pair_list(len(sizes))
        ],
        dtype=np.int64,
    )


def noisy_r_scores(
    codes: np.ndarray, sizes: Sequence[int], sigma: float, noise: FitNoise
) -> np.ndarray:
    """Release every pair's count-form R-score with noise std ``sigma`` on the 1/s grid
    (charged to ``noise``'s ledger as ``privmrf.r_scores``): a symmetric (d, d) matrix of
    multiples of 1/s with a zero diagonal."""
    d = len(sizes)
    pairs = pair_list(d)
    noisy = np.zeros((d, d))
    if not pairs:
        return noisy
    values = noise.real(
        "privmrf.r_scores",
        lambda scale: rounded_r_scores(codes, sizes, scale),
        R_SCORE_SENSITIVITY,
        sigma,
        "pair R-scores",
    )
    for (i, j), v in zip(pairs, values, strict=True):
        noisy[i, j] = noisy[j, i] = v
    return noisy


def noisy_tvd_scores(
    codes: np.ndarray,
    sizes: Sequence[int],
    sigma: float,
    n_hat: float,
    noise: FitNoise,
) -> np.ndarray:
    """:func:`noisy_r_scores` divided by the noisy count ``n_hat``: noisy normalised TVDs."""
    return noisy_r_scores(codes, sizes, sigma, noise) / n_hat
