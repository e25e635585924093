"""Numba kernel for the weighted least-squares loss of mirror descent, in one pass.

``mu`` holds the measured marginals as plain sums of a calibration's shifted probabilities;
``scaled_loss`` scales each cell by its clique's factor in place and returns
``1/2 * sum w2 * (mu - y)^2``. Plain loop, no ``fastmath`` (NaN and inf propagate).
"""

from numba import njit


@njit(cache=True)
def scaled_loss(mu, factor, home, y, w2):
    """mu[i] *= factor[home[i]] in place; returns 0.5 * sum(w2 * (mu - y)**2)."""
    acc0 = 0.0
    acc1 = 0.0
    n = mu.shape[0]
    i = 0
    while i + 2 <= n:
        v0 = mu[i] * factor[home[i]]
        v1 = mu[i + 1] * factor[home[i + 1]]
        mu[i] = v0
        mu[i + 1] = v1
        r0 = v0 - y[i]
        r1 = v1 - y[i + 1]
        acc0 += w2[i] * r0 * r0
        acc1 += w2[i + 1] * r1 * r1
        i += 2
    if i < n:
        v0 = mu[i] * factor[home[i]]
        mu[i] = v0
        r0 = v0 - y[i]
        acc0 += w2[i] * r0 * r0
    return 0.5 * (acc0 + acc1)
