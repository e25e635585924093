"""The local measurement oracle: exact counts of an encoded table plus exact discrete
Gaussian noise, each release charged to the fit's ledger before it is drawn. Nothing
constrains what it measures (no parties, no round-2 caps)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.cliques import histogram
from vertimrf.synth.engine.tables import Marginal, Tables
from vertimrf.synth.privmrf.noise import FitNoise

# Each release of K marginals changes by one in one cell of each: L2 sensitivity 1 each.
MARGINAL_SENSITIVITY = 1.0


class LocalOracle:
    """Measures marginals of ``codes`` (rows of codes over ``domain``) with ``noise``."""

    too_large = "the local oracle has no cap on model cells."  # model_fits always holds

    def __init__(self, codes: np.ndarray, domain: Domain, noise: FitNoise) -> None:
        self.codes = codes
        self.domain = domain
        self.noise = noise

    def all_pairs(self) -> list[Marginal]:
        return list(combinations(range(len(self.domain)), 2))

    def canonical(self, m: Marginal) -> Marginal:
        return tuple(sorted(int(a) for a in m))

    def cells(self, m: Marginal) -> int:
        return math.prod(self.domain.sizes[a] for a in m)

    def search_sizes(self) -> tuple[int, ...]:
        return tuple(self.domain.sizes)

    def populations(self) -> Mapping[Marginal, float] | None:
        return None

    def measurable(self, wanted: Sequence[Marginal], edges: set[Marginal]) -> list[Marginal]:
        return list(wanted)

    def model_fits(self, cliques: Sequence[Sequence[int]]) -> bool:
        return True

    def counts(self, m: Marginal) -> np.ndarray:
        """The exact counts of ``m`` (canonical), flat in C order."""
        return histogram(self.codes, m, self.domain.sizes).ravel()

    def measure(self, marginals: Sequence[Marginal], sigma: float, what: str) -> Tables:
        """Charge ``len(marginals)`` releases at ``sigma``, then draw each one's counts."""
        self.noise.charge("engine.marginals", MARGINAL_SENSITIVITY, sigma, len(marginals), what)
        values = {m: self.noise.gaussian(self.counts(m), sigma) for m in marginals}
        return Tables(values, dict.fromkeys(marginals, sigma))
