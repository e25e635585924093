"""Noisy pairwise R-scores: how far each attribute pair is from
independence; design notes in docs/design/synth.md."""

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
