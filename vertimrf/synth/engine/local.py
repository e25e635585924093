"""The local measurement oracle: exact counts of an encoded table plus exact discrete
Gaussian noise, and AIM's selection by the exponential mechanism, each release charged to
the fit's ledger before it is drawn. Nothing constrains what it measures (no parties, no
round-2 caps)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from vertimrf.domain import Domain
from vertimrf.mrf.cliques import histogram
from vertimrf.synth.engine.tables import Marginal, Tables
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.refinement import rounded_l1_error

# Each release of K marginals changes by one in one cell of each: L2 sensitivity 1 each.
MARGINAL_SENSITIVITY = 1.0
# The selection scores L1 errors on the grid of 1/SCORE_SCALE (a power of two): an error
# round(s ||model - counts||_1) moves by at most s when one record is added or removed.
SCORE_SCALE = 16


class LocalOracle:
    """Measures marginals of ``codes`` (rows of codes over ``domain``) with ``noise``."""

    too_large = "the local oracle has no cap on model cells."  # model_fits always holds

    def __init__(self, codes: np.ndarray, domain: Domain, noise: FitNoise) -> None:
        self.codes = codes
        self.domain = domain
        self.noise = noise
        self._counts: dict[Marginal, np.ndarray] = {}

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
        """The exact counts of ``m`` (canonical), flat in C order (kept for the next call)."""
        if m not in self._counts:
            self._counts[m] = histogram(self.codes, m, self.domain.sizes).ravel()
        return self._counts[m]

    def measure(self, marginals: Sequence[Marginal], sigma: float, what: str) -> Tables:
        """Charge ``len(marginals)`` releases at ``sigma``, then draw each one's counts."""
        self.noise.charge("engine.marginals", MARGINAL_SENSITIVITY, sigma, len(marginals), what)
        values = {m: self.noise.gaussian(self.counts(m), sigma) for m in marginals}
        return Tables(values, dict.fromkeys(marginals, sigma))

    def select(
        self,
        estimates: Mapping[Marginal, np.ndarray],
        weights: Mapping[Marginal, int],
        sigma: float,
        epsilon: float,
        what: str,
    ) -> Marginal:
        """Charge, then draw one marginal of ``estimates`` (the model's counts of each) by
        the exponential mechanism with ``epsilon`` on AIM's score: its integer weight times
        (its L1 error minus the error a measurement with noise ``sigma`` would still have,
        sqrt(2 / pi) sigma cells). Scored on the 1/SCORE_SCALE grid; sensitivity
        SCORE_SCALE times the largest weight."""
        keys = list(estimates)
        s = SCORE_SCALE
        scores = [
            weights[m]
            * (
                rounded_l1_error(estimates[m], self.counts(m), s)
                - round(s * math.sqrt(2.0 / math.pi) * sigma * self.cells(m))
            )
            for m in keys
        ]
        sensitivity = s * max(weights[m] for m in keys)
        pick = self.noise.select(
            "engine.select", np.array(scores, dtype=object), sensitivity, epsilon, what
        )
        return keys[pick]
