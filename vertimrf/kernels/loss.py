"""Numba kernels for the weighted least-squares loss of mirror descent, each
in one pass; design notes in docs/design/kernels.md."""

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


@njit(cache=True)
def dot_diff(g, a, b):
    """sum(g * (a - b)), without a temporary."""
    acc0 = 0.0
    acc1 = 0.0
    n = g.shape[0]
    i = 0
    while i + 2 <= n:
        acc0 += g[i] * (a[i] - b[i])
        acc1 += g[i + 1] * (a[i + 1] - b[i + 1])
        i += 2
    if i < n:
        acc0 += g[i] * (a[i] - b[i])
    return acc0 + acc1


@njit(cache=True)
def weighted_squares(w, r):
    """sum(w * r**2)."""
    acc0 = 0.0
    acc1 = 0.0
    n = w.shape[0]
    i = 0
    while i + 2 <= n:
        acc0 += w[i] * r[i] * r[i]
        acc1 += w[i + 1] * r[i + 1] * r[i + 1]
        i += 2
    if i < n:
        acc0 += w[i] * r[i] * r[i]
    return acc0 + acc1
