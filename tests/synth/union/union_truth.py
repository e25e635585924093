"""A small true table split over parties with partial holdings, and its releases computed
exactly (or with Gaussian noise of a fixed seed) for the union model's tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.cliques import histogram
from vertimrf.synth.union import NoisyTable, PartialReleases, UnionDomain

# The sigma exact releases report: the pooled shared counts weigh the presence tables
# 1 - 1e-12 / (their gap to the scaled own counts)^2, exact to far below 1e-6.
EXACT = 1e-6


@dataclass(frozen=True)
class Truth:
    """Data codes (n x d), the region (bit mask of holders) of every record, and owners."""

    domain: Domain
    owner: tuple[int, ...]
    codes: np.ndarray
    region: np.ndarray

    @property
    def parties(self) -> int:
        return max(self.owner) + 1

    def holds(self, p: int) -> np.ndarray:
        return (self.region >> p & 1).astype(bool)

    def union_codes(self) -> np.ndarray:
        """Codes over the union domain: absent codes where the owner lacks the record, then
        the presence attributes."""
        space = UnionDomain(self.domain, self.owner)
        held = np.stack([self.holds(self.owner[a]) for a in range(len(self.domain))], 1)
        data = np.where(held, self.codes, np.asarray(self.domain.sizes))
        flags = np.stack([self.holds(p) for p in range(self.parties)], 1).astype(np.int64)
        assert data.shape[1] + flags.shape[1] == len(space.domain)
        return np.concatenate([data, flags], 1)

    def union_marginal(self, attrs: tuple[int, ...]) -> np.ndarray:
        """The true counts over union-domain ``attrs`` (axes in that order)."""
        space = UnionDomain(self.domain, self.owner).domain
        return histogram(self.union_codes(), attrs, space.sizes).reshape(space.shape(attrs))

    def counts(self, attrs: tuple[int, ...], rows: np.ndarray) -> np.ndarray:
        """The counts over data ``attrs`` of the records ``rows`` selects."""
        sizes = self.domain.sizes
        table = histogram(self.codes[rows], attrs, sizes)
        return table.reshape(self.domain.shape(attrs)).astype(np.float64)


def make_truth(
    rng: np.random.Generator, n: int, sizes: tuple[int, ...], owner: tuple[int, ...]
) -> Truth:
    """``n`` records whose attributes share a latent value (so they correlate within and
    across parties) and whose holdings depend on it too; every region is non-empty."""
    m = max(owner) + 1
    latent = rng.integers(0, 4, n)
    codes = np.empty((n, len(sizes)), np.int64)
    for a, size in enumerate(sizes):
        keep = rng.random(n) < 0.7
        codes[:, a] = np.where(keep, latent % size, rng.integers(0, size, n))
    # Each party holds a record with a probability that depends on the latent value.
    held = rng.random((n, m)) < 0.55 + 0.1 * latent[:, None] - 0.05 * np.arange(m)
    region = (held * (1 << np.arange(m))).sum(1)
    region[region == 0] = (1 << m) - 1
    region[: (1 << m) - 1] = np.arange(1, 1 << m)
    domain = Domain.from_sizes(sizes)
    return Truth(domain, owner, codes, region)


def releases(truth: Truth, noise_sigma: float = 0.0, seed: int = 0) -> PartialReleases:
    """The releases the union model takes: each party's 1-ways and the 2-way of its first two
    attributes, every cross pair, every attribute against every peer's presence and the
    region counts; exact when ``noise_sigma`` is 0 (sigma ``EXACT`` is reported: the pooled
    shared counts then follow the presence tables), else with Gaussian noise of that sigma
    from ``seed``."""
    rng = np.random.default_rng(seed)
    sigma = noise_sigma if noise_sigma > 0 else EXACT

    def noisy(attrs: tuple[int, ...], rows: np.ndarray) -> NoisyTable:
        values = truth.counts(attrs, rows)
        return NoisyTable(attrs, values + noise_sigma * rng.standard_normal(values.shape), sigma)

    m, owner = truth.parties, truth.owner
    mine = [tuple(a for a in range(len(owner)) if owner[a] == p) for p in range(m)]
    own = []
    for p in range(m):
        own += [noisy((a,), truth.holds(p)) for a in mine[p]]
        own += [noisy(mine[p][:2], truth.holds(p))] if len(mine[p]) > 1 else []
    cross = [
        noisy((a, b), truth.holds(p) & truth.holds(q))
        for p in range(m)
        for q in range(p + 1, m)
        for a in mine[p]
        for b in mine[q]
    ]
    presence = {
        (p, q): tuple(noisy((a,), truth.holds(p) & truth.holds(q)) for a in mine[p])
        for p in range(m)
        for q in range(m)
        if p != q
    }
    counts = np.bincount(truth.region, minlength=1 << m).astype(np.float64)
    regions = {t: counts[t] + noise_sigma * rng.standard_normal() for t in range(1, 1 << m)}
    return PartialReleases(truth.domain, owner, tuple(own), tuple(cross), presence, regions, sigma)
