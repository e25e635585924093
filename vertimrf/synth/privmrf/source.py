"""PrivMRF's noise and its measurement source for the refinement loop.

:class:`FitNoise` charges every release of a fit to the ledger before drawing its noise:
exact discrete Gaussian noise on integer counts (continuous Gaussian in the reference's
paper-accounting mode). :class:`GaussianSource` is the measurement source of
:func:`vertimrf.synth.refine.refine`: each round it queries the model's L1 error on a
weighted sample of candidates with Gaussian noise, selects the worst, and measures them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.synth.privmrf import budget_split as bud
from vertimrf.synth.privmrf.histograms import CliqueTables
from vertimrf.synth.privmrf.refinement import (
    CandidatePool,
    noisy_l1_errors,
    query_set,
    select_and_update,
)

Marginal = tuple[int, ...]


@dataclass
class FitNoise:
    """The ledger, the sampler and the releases of one fit."""

    ledger: PrivacyLedger
    sampler: NoiseSampler
    party: str | None
    discrete: bool
    charged: list[Release] = field(default_factory=list)

    def charge(
        self, mechanism: str, sensitivity: float, sigma: float, count: int, what: str, exact: bool
    ) -> None:
        """Charge ``count`` Gaussian releases (``exact``: drawn from the discrete sampler)."""
        self.charged.append(
            self.ledger.charge_gaussian(
                mechanism,
                sensitivity,
                sigma,
                count=count,
                party=self.party,
                description=what,
                sampler="discrete_gaussian" if exact else "gaussian",
            )
        )

    def gaussian(self, counts: np.ndarray, sigma: float) -> np.ndarray:
        """Integer counts plus exact discrete Gaussian noise (continuous in paper mode)."""
        if self.discrete:
            exact = np.rint(counts).astype(np.int64)
            return (exact + self.sampler.discrete_gaussian(sigma, exact.shape)).astype(np.float64)
        return counts + self.sampler.normal(0.0, sigma, np.shape(counts))


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
        sigma_q = bud.sigma_for_share(self.query_rho, len(queries), 1.0)
        self.noise.charge(
            "privmrf.error_queries",
            bud.ERROR_QUERY_SENSITIVITY,
            sigma_q,
            len(queries),
            f"round {round_index + 1} L1 errors",
            False,
        )
        fitted = CliqueTables({c: model.clique_marginal(c) for c in model.cliques})
        new = [q for q in dict.fromkeys(queries) if q not in self.known]
        self.known.update(zip(new, self.data.project_many(new), strict=True))
        model_tables = dict(zip(queries, fitted.project_many(queries), strict=True))
        errors = noisy_l1_errors(
            queries, model_tables.__getitem__, self.truth, sigma_q, self.noise.sampler
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
            self.noise.discrete,
        )
        return [
            Measurement(m, self.noise.gaussian(self.truth(m), self.sigma), 1.0 / self.sigma)
            for m in marginals
        ]
