"""Noisy pairwise R-scores: how far each attribute pair is from independence.

The score of a pair (i, j) is released in count form,

    R_ij(D) = 1/2 * sum_{a,b} | c_ab - c_a * c_b / n |,

(c = counts in D, n = |D|), with Gaussian noise, and divided by the released noisy count
n_hat afterwards, which gives the normalised TVD form the reference scores with. The division
is post-processing, so no true n enters a released value.

Sensitivity (add/remove one record r = (x, y) in the pair's columns). Write
g_ab = c_ab - c_a c_b / n and p_a = c_a / n for the smaller table D (n rows) and compare with
D + r (n + 1 rows). Expanding c'_a c'_b / (n + 1) gives, for every cell,

    g'_ab - g_ab = n / (n + 1) * ([a = x] - p_a) * ([b = y] - p_b),

so sum_{a,b} |g'_ab - g_ab| = n / (n + 1) * 2 (1 - p_x) * 2 (1 - p_y) < 4, and by the
triangle inequality |R(D + r) - R(D)| < 2. Hence each score has L2 sensitivity 2
(tight as n grows and p_x, p_y -> 0). This is the bound the reference uses in normalised
form (2 / n), which the analysis marks UNSURE (section 8, item 11); in count form it holds
exactly, and ``tests/test_privmrf_scores.py`` checks it by brute force.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.mrf.cliques import histogram
from vertimrf.privacy.samplers import NoiseSampler


def r_score(codes: np.ndarray, i: int, j: int, sizes: Sequence[int]) -> float:
    """Exact count-form R-score of attributes ``i`` and ``j`` (0 for an empty table)."""
    n = codes.shape[0]
    if n == 0:
        return 0.0
    joint = histogram(codes, (i, j), sizes)
    indep = np.outer(joint.sum(axis=1), joint.sum(axis=0)) / n
    return 0.5 * float(np.abs(joint - indep).sum())


def pair_list(d: int) -> list[tuple[int, int]]:
    """All attribute pairs i < j in lexicographic order."""
    return [(i, j) for i in range(d) for j in range(i + 1, d)]


def exact_r_scores(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Symmetric (d, d) matrix of exact count-form R-scores (zero diagonal)."""
    d = len(sizes)
    out = np.zeros((d, d))
    for i, j in pair_list(d):
        out[i, j] = out[j, i] = r_score(codes, i, j, sizes)
    return out


def noisy_tvd_scores(
    codes: np.ndarray,
    sizes: Sequence[int],
    sigma: float,
    n_hat: float,
    rng: np.random.Generator | NoiseSampler,
) -> np.ndarray:
    """Release every pair's R-score with N(0, sigma^2) noise; return them divided by n_hat.

    The result is a symmetric (d, d) matrix of noisy normalised TVDs with a zero diagonal.
    """
    d = len(sizes)
    exact = exact_r_scores(codes, sizes)
    noisy = np.zeros((d, d))
    pairs = pair_list(d)
    noise = rng.normal(0.0, sigma, size=len(pairs))
    for (i, j), z in zip(pairs, noise, strict=True):
        noisy[i, j] = noisy[j, i] = (exact[i, j] + z) / n_hat
    return noisy
