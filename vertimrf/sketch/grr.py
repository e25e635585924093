"""Generalized randomized response (GRR), the frequency-oracle baseline of LocEnc.

Each attribute value is kept with probability p = e^eps / (e^eps + u - 1) and otherwise
replaced by one of the u - 1 other values uniformly (each with q = 1 / (e^eps + u - 1)).
The coins come from a :class:`~vertimrf.privacy.samplers.NoiseSampler` (cryptographically
secure by default); its Bernoulli keeps with probability p' = floor(p 2^53) / 2^53 <= p, so
the likelihood ratio p' (u - 1) / (1 - p') of any two reports is at most e^eps exactly.
The transition matrix is (p - q) I + q 11^T, whose inverse applied to a histogram h along
one axis is (h - q * sum(h)) / (p - q) (because p + (u - 1) q = 1). Applying it along
each axis of an l-way histogram gives the unbiased marginal estimate without ever building
the (prod u)^2 matrix.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler


def grr_probabilities(epsilon: float, u: int) -> tuple[float, float]:
    """(p, q): probability of reporting the true value and each other value."""
    e = math.exp(epsilon)
    return e / (e + u - 1), 1.0 / (e + u - 1)


def grr_perturb(
    codes: np.ndarray,
    domain: Domain,
    epsilon: float,
    *,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> np.ndarray:
    """Perturb every column with GRR at ``epsilon`` each; charge d releases to ``ledger``."""
    codes = np.asarray(codes)
    if codes.ndim != 2 or codes.shape[1] != len(domain):
        raise DomainError(f"codes must have shape (n, {len(domain)}); got {codes.shape}.")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"GRR epsilon must be positive; got {epsilon!r}.")
    ledger.charge_pure(
        "grr",
        epsilon,
        count=len(domain),
        party=party,
        description=f"GRR of {len(domain)} attributes (eps-LDP per report; row count public)",
    )
    n = codes.shape[0]
    out = np.empty_like(codes)
    for j, u in enumerate(domain.sizes):
        x = codes[:, j].astype(np.int64)
        if u == 1:
            out[:, j] = x
            continue
        p, _ = grr_probabilities(epsilon, u)
        keep = noise.bernoulli(p, n)
        other = noise.integers(u - 1, n)
        other += other >= x
        out[:, j] = np.where(keep, x, other)
    return out


def grr_marginal(
    perturbed: np.ndarray, domain: Domain, epsilon: float, attrs: Sequence[int]
) -> np.ndarray:
    """Unbiased estimate of the counts of the marginal over attribute indices ``attrs``."""
    attrs = [int(a) for a in attrs]
    shape = domain.shape(attrs)
    flat = np.ravel_multi_index(tuple(perturbed[:, a].astype(np.int64) for a in attrs), shape)
    est = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)
    for axis, a in enumerate(attrs):
        p, q = grr_probabilities(epsilon, domain.sizes[a])
        est = (est - q * est.sum(axis=axis, keepdims=True)) / (p - q)
    return est
