"""The public numbers the engine selects and fits by, and the model caps they give."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.synth.privmrf.options import PrivMRFOptions
from vertimrf.workload import Workload

# The model caps (see model_caps): method secure's cells per unit of precision (the local
# engine's are EngineOptions.cells_per_precision).
MODEL_CELLS_PER_PRECISION = 2750.0
MIN_TOTAL_CELLS = 2.5e5
MIN_CLIQUE_CELLS = 1e5


@dataclass(frozen=True)
class EnginePlan:
    """What the engine knows before any data: the ``domain``; the first release's noise
    scale ``sigma_select`` (of every 2-way marginal, or a workload's first release); the
    re-measurement's zCDP share ``rho_measure``; ``refine_fraction`` (the re-measured pairs
    beyond the initial set, times d); the cap ``iters`` of each fit; and the search and fit
    settings of ``options`` (theta, size penalty, the ceilings of the model caps,
    convergence); the ``workload`` (None: every 3-way marginal, weight 1); and the model
    caps' ``cells_per_precision``."""

    domain: Domain
    sigma_select: float
    rho_measure: float
    refine_fraction: float
    iters: int
    options: PrivMRFOptions
    workload: Workload | None = None
    cells_per_precision: float = MODEL_CELLS_PER_PRECISION

    @property
    def pair_weights(self) -> np.ndarray | None:
        """The workload's weight of each pair (:meth:`Workload.pair_weights`); None with
        the default workload, in which every pair weighs the same."""
        return None if self.workload is None else self.workload.pair_weights(len(self.domain))

    @property
    def planned(self) -> float:
        """The number of re-measured marginals the plan expects: d (1 + refine_fraction)."""
        return len(self.domain) * (1.0 + self.refine_fraction)

    def model_caps(self, n_hat: float) -> tuple[float, float]:
        """The graph search's (clique, total) cell caps: the total grows with the planned
        measurements' precision n_hat / sigma^2 (``cells_per_precision`` cells per unit),
        between MIN_TOTAL_CELLS and the options' cap; the clique cap is 0.4 of it, between
        MIN_CLIQUE_CELLS and the options'. Small models fit several times faster and are as
        accurate while the noise is large; at high epsilon a larger model pays."""
        sigma2 = self.planned / (2.0 * self.rho_measure)
        total = self.cells_per_precision * n_hat / sigma2
        opts = self.options
        total = min(opts.max_total_cells, max(MIN_TOTAL_CELLS, total))
        clique = min(opts.max_clique_cells, max(MIN_CLIQUE_CELLS, 0.4 * total))
        return clique, total
