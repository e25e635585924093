"""PrivMRF's measurement source for the refinement loop; design notes in docs/design/synth.md."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.synth.privmrf import budget_split as bud
from vertimrf.synth.privmrf.histograms import CliqueTables
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.refinement import (
    CandidatePool,
    noisy_l1_errors,
    query_set,
    select_and_update,
)

Marginal = tuple[int, ...]


@dataclass
class GaussianSource:
    """PrivMRF's own data as a measurement source (charged to ``noise``'s ledger).

    ``sigma`` is the noise of every measured marginal, ``query_rho`` each round's share for
    the L1 error queries; true tables are projected from the clique histograms ``data`` and
    kept, since candidates recur across rounds.
    """

    noise: FitNoise
    data: CliqueTables
    pool: CandidatePool
    sigma: float
    query_rho: float
    max_queries: int
    rng: np.random.Generator
    known: dict[Marginal, np.ndarray] = field(default_factory=dict)

    def truth(self, m: Marginal) -> np.ndarray:
        """The true histogram of ``m``."""
        if m not in self.known:
            self.known[m] = self.data.project(m)
        return self.known[m]

    def select(self, model: MarkovRandomField, k: int, round_index: int) -> list[Marginal]:
        """Noisy L1 errors of a weighted sample of candidates; the ``k`` worst leave the pool."""
        queries = query_set(self.pool, self.max_queries, self.rng, min_size=k)
        sigma_q = bud.sigma_for_share(self.query_rho, len(queries), bud.ERROR_QUERY_SENSITIVITY)
        fitted = CliqueTables({c: model.clique_marginal(c) for c in model.cliques})
        new = [q for q in dict.fromkeys(queries) if q not in self.known]
        self.known.update(zip(new, self.data.project_many(new), strict=True))
        model_tables = dict(zip(queries, fitted.project_many(queries), strict=True))
        errors = noisy_l1_errors(
            queries,
            model_tables.__getitem__,
            self.truth,
            sigma_q,
            self.noise,
            f"round {round_index + 1} L1 errors",
        )
        return select_and_update(self.pool, queries, errors, k)

    def measure(self, marginals: list[Marginal], round_index: int) -> list[Measurement]:
        """Gaussian measurements of a round's marginals."""
        return self.measure_set(marginals, f"round {round_index + 1} marginals")

    def measure_set(self, marginals: list[Marginal], what: str) -> list[Measurement]:
        """Gaussian measurements of ``marginals`` (weight 1 / sigma), charged as one batch."""
        self.noise.charge(
            "privmrf.marginals",
            bud.MARGINAL_SENSITIVITY,
            self.sigma,
            len(marginals),
            what,
        )
        return [
            Measurement(m, self.noise.gaussian(self.truth(m), self.sigma), 1.0 / self.sigma)
            for m in marginals
        ]
