"""The public numbers the engine selects and fits by, and the model caps they give."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.synth.privmrf.options import PrivMRFOptions
from vertimrf.workload import Workload

# The model caps (see model_caps): the total cap grows with the planned precision and
# reaches its ceiling at a precision n_hat / sigma^2 of CEILING_PRECISION (4000 / 11, about
# 364). Measured on Adult as 2,750 cells per unit under a ceiling of 1e6, then 11,000 under
# 4e6 (benchmarks/results/engine_caps.md, secure_caps.md): the defaults of both oracles.
CEILING_PRECISION = 4000.0 / 11.0
MIN_TOTAL_CELLS = 2.5e5
MIN_CLIQUE_CELLS = 1e5
# The extra pairs re-measured (see extras): all refine_fraction * d of them from a precision
# n_hat / sigma^2 of FULL_EXTRAS_PRECISION, in proportion below it. Set from measurements:
# on births14 at 3 parties (precision 0.41) the secure method's mean 1-way TVD was 0.119 with
# its 20 extras, 0.104 with this rule's 4 and 0.103 with none, its 3-way 0.405, 0.392 and 0.384
# (20 seeds, benchmarks/results/extras_precision.md); the least precise benchmark point, NLTCS
# at epsilon 0.4, has 2.26 and keeps all of its extras.
FULL_EXTRAS_PRECISION = 2.0


@dataclass(frozen=True)
class EnginePlan:
    """What the engine knows before any data: the ``domain``; the first release's noise
    scale ``sigma_select`` (of every 2-way marginal, or a workload's first release); the
    re-measurement's zCDP share ``rho_measure``; ``refine_fraction`` (the most re-measured
    pairs beyond the initial set, times d: :meth:`extras`); the cap ``iters`` of each fit;
    and the search and fit settings of ``options`` (theta, size penalty, the ceilings of the
    model caps, convergence); the model caps' ``cells_per_precision``
    (:func:`cells_per_precision`); and the ``workload`` (None: every 3-way marginal, weight 1)."""

    domain: Domain
    sigma_select: float
    rho_measure: float
    refine_fraction: float
    iters: int
    options: PrivMRFOptions
    cells_per_precision: float
    workload: Workload | None = None

    @property
    def pair_weights(self) -> np.ndarray | None:
        """The workload's weight of each pair (:meth:`Workload.pair_weights`); None with
        the default workload, in which every pair weighs the same."""
        return None if self.workload is None else self.workload.pair_weights(len(self.domain))

    @property
    def planned(self) -> float:
        """The number of re-measured marginals the plan expects: d (1 + refine_fraction)."""
        return len(self.domain) * (1.0 + self.refine_fraction)

    @property
    def sigma2(self) -> float:
        """The noise variance of each of :attr:`planned` marginals sharing ``rho_measure``."""
        return self.planned / (2.0 * self.rho_measure)

    def precision(self, n_hat: float) -> float:
        """The planned re-measurement's precision n_hat / :attr:`sigma2`."""
        return n_hat / self.sigma2

    def extras(self, n_hat: float) -> int:
        """How many extra pairs to re-measure beyond the initial set: refine_fraction * d
        from a precision of FULL_EXTRAS_PRECISION, in proportion below it (rounded down).
        While few records meet much noise, an extra pair's budget does more for the
        marginals already chosen; n_hat is the first release's, so this is post-processing."""
        full = self.refine_fraction * len(self.domain)
        return int(full * min(1.0, self.precision(n_hat) / FULL_EXTRAS_PRECISION))

    def model_caps(self, n_hat: float) -> tuple[float, float]:
        """The graph search's (clique, total) cell caps: the total grows with the planned
        measurements' precision n_hat / sigma^2 (``cells_per_precision`` cells per unit),
        between MIN_TOTAL_CELLS and the options' cap; the clique cap is 0.4 of it, between
        MIN_CLIQUE_CELLS and the options'. Small models fit several times faster and are as
        accurate while the noise is large; at high epsilon a larger model pays."""
        total = self.cells_per_precision * self.precision(n_hat)
        opts = self.options
        total = min(opts.max_total_cells, max(MIN_TOTAL_CELLS, total))
        clique = min(opts.max_clique_cells, max(MIN_CLIQUE_CELLS, 0.4 * total))
        return clique, total


def cells_per_precision(max_total_cells: float) -> float:
    """The model cap's growth per unit of precision under the ceiling ``max_total_cells``:
    the ceiling over :data:`CEILING_PRECISION` (11,000 under 4e6, 2,750 under 1e6)."""
    return max_total_cells / CEILING_PRECISION
