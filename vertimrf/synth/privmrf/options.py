"""PrivMRF's tuning options, their defaults and their validation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

from vertimrf.errors import ConfigError
from vertimrf.synth.privmrf.budget_split import BudgetSplit
from vertimrf.within import PLACEMENTS


@dataclass(frozen=True)
class PrivMRFOptions:
    """Options of :class:`~vertimrf.synth.privmrf.PrivMRF` (reference defaults, analysis 2.1,
    except the model-size caps, which the reference sets to 1e7 / 5e7 cells).

    The caps default to the reference's ACS setting, 2e5 / 1e6 cells;
    ``benchmarks/bench_privmrf_caps.py`` measures utility and time on Adult under other caps.
    NLTCS (one 65,536-cell clique) is the same under the default and larger caps, the
    reference's 1e7 / 5e7 included; a 5e4 per-clique cap would split it.

    Attributes:
        theta: theta-usefulness factor (a marginal is measured only if its mean count per
            cell is ``theta`` times the noise).
        split: fractions of the zCDP budget for scores, count, measurements, error queries.
        refine_fraction: refinement measures ``int(refine_fraction * d)`` marginals.
        max_rounds: at most ``min(d // 2, max_rounds)`` refinement rounds (0: no refinement).
        max_clique_cells: cap on the cells of any maximal clique in the graph search.
        max_total_cells: cap on the summed cells of all maximal cliques.
        size_penalty: graph score penalty per clique cell.
        max_measure_arity: largest refinement candidate (number of attributes).
        max_queries: error queries drawn per refinement round.
        iters: mirror-descent iteration cap per fit.
        check_every: mirror-descent convergence check interval.
        tol: relative loss decrease over ``check_every`` iterations below which a fit stops.
        convergence_ratio: stop a fit when the loss is below this times the noise's
            expected loss; ``final_convergence_ratio`` in the last round.
        gdp_accounting: spend the reference's GDP budget x(epsilon, delta) / 2 instead of
            the zCDP conversion (the reference's noise levels; its guarantee is the zCDP
            one, a larger epsilon, see ``budget_split.py``).
        progress: log short progress lines (no data values) at INFO to the
            ``vertimrf.synth.privmrf`` logger (see :mod:`vertimrf.logs`).
        values: where a sampled numeric value lies inside its bin: "fine" (by a DP fine
            histogram of the column), "uniform" or "midpoint" (:mod:`vertimrf.within`).
            Read on a fit of a frame with a DomainSpec only.
        numeric_share: the fraction of the budget spent before the fit on the numeric
            releases (:mod:`vertimrf.synth.numeric`: the fine histograms, and the cuts of
            columns of scale "quantile"); nothing when no column releases.
    """

    theta: float = 6.0
    split: BudgetSplit = field(default_factory=BudgetSplit)
    refine_fraction: float = 0.8
    max_rounds: int = 8
    max_clique_cells: float = 2e5
    max_total_cells: float = 1e6
    size_penalty: float = 1e-8
    max_measure_arity: int = 6
    max_queries: int = 400
    iters: int = 3000
    check_every: int = 50
    tol: float = 1e-6
    convergence_ratio: float = 1.2
    final_convergence_ratio: float = 0.7
    gdp_accounting: bool = False
    progress: bool = True
    values: str = "fine"
    numeric_share: float = 0.05

    def __post_init__(self) -> None:
        bad = _not_positive(
            self,
            "theta",
            "max_clique_cells",
            "max_total_cells",
            "convergence_ratio",
            "final_convergence_ratio",
        )
        if bad:
            raise ConfigError(f"these PrivMRF options must be positive and finite: {bad}.")
        counts = ("max_measure_arity", "max_queries", "iters", "check_every")
        at_least_one = {name: getattr(self, name) for name in counts}
        bad = {k: v for k, v in at_least_one.items() if not (isinstance(v, int) and v >= 1)}
        if bad:
            raise ConfigError(f"these PrivMRF options must be integers >= 1: {bad}.")
        _check_integer(self, "max_rounds", 0)
        if not (self.refine_fraction >= 0.0 and math.isfinite(self.refine_fraction)):
            raise ConfigError(f"refine_fraction must be >= 0; got {self.refine_fraction!r}.")
        if not (self.size_penalty >= 0 and self.tol >= 0):
            raise ConfigError("size_penalty and tol must be >= 0.")
        if not isinstance(self.split, BudgetSplit):
            raise ConfigError("split must be a BudgetSplit.")
        if self.values not in PLACEMENTS:
            raise ConfigError(f"values must be one of {list(PLACEMENTS)}; got {self.values!r}.")
        share = self.numeric_share
        if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share < 1:
            raise ConfigError(f"numeric_share must lie in (0, 1); got {share!r}.")

    @classmethod
    def from_kwargs(cls, options: dict[str, Any]) -> PrivMRFOptions:
        """Options from keyword arguments; unknown names raise ConfigError."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ConfigError(f"unknown PrivMRF options {unknown}; valid ones are {sorted(known)}.")
        return cls(**options)


# selection="engine" (the default; EngineOptions), "privmrf" (the paper's PrivMRF, kept for
# reproduction) or "aim" (AIMOptions).
SELECTIONS = ("privmrf", "engine", "aim")


@dataclass(frozen=True)
class EngineOptions:
    """Options of ``PrivMRF(..., selection="engine")``: the select-measure-fit engine
    (:mod:`vertimrf.synth.engine`) with the local oracle, the algorithm of method "secure"
    on the whole table. The defaults are method "secure"'s (``secure_refine_fraction``,
    ``secure_iters``) except the split between the first release and the re-measurement,
    which adapts (:func:`vertimrf.privacy.split.first_share`): after the count, the first
    release gets 0.5 of rho where it is informative and 0.2 where it would be mostly noise,
    and the re-measurement the rest. ``benchmarks/results/engine_shares.md`` measured both
    on NLTCS and Adult; method secure's default (``secure_shares="auto"``) is the same rule
    with the config's max_rows for the count.

    Attributes:
        count, select, measure: fractions of rho for the noisy count, the first release of
            every 2-way marginal and the re-measurement of the selection; they sum to 1.
            ``select`` and ``measure`` both None (the default): the adaptive split above.
        refine_fraction: the most re-measured pairs beyond the initial set (times d); fewer
            while the first release is imprecise (``EnginePlan.extras``).
        iters: the mirror-descent cap of each of the two fits.
        cells_per_precision, max_clique_cells, max_total_cells: the model caps of the
            graph search (:meth:`vertimrf.synth.engine.plan.EnginePlan.model_caps`): the
            total grows by ``cells_per_precision`` cells per unit of the re-measurement's
            precision n_hat / sigma^2, up to ``max_total_cells``; a clique has at most 0.4
            of it, up to ``max_clique_cells``. Method secure's defaults too
            (``secure_max_clique_cells``, ``secure_max_total_cells``; its cells per unit
            are :func:`vertimrf.synth.engine.plan.cells_per_precision` of its ceiling, as
            these are). Against a quarter of each, on Adult (held-out seeds) they lowered the
            3-way TVD from 0.0390 to 0.0377 at epsilon 1.6 and from 0.0349 to 0.0323 at 3.2,
            for 5x the time (``benchmarks/results/engine_caps.md``). PrivMRF's own
            ``max_clique_cells`` and ``max_total_cells`` are the paper selection's, not these.
        workload: the marginals the synthetic data should answer, as column names (or
            indices), each alone (weight 1) or as ``(columns, weight)``. The first release
            is then the pairs they hold (and the 1-way marginal of each other column), the
            selection weighs each pair by the workload marginals holding it, and the
            re-measurement adds the workload's useful marginals
            (:mod:`vertimrf.synth.engine.select`). None, or every 3-way marginal with equal
            weights: the default selection.
    """

    count: float = 0.001
    select: float | None = None
    measure: float | None = None
    refine_fraction: float = 1.6
    iters: int = 1000
    cells_per_precision: float = 11000.0
    max_clique_cells: float = 8e5
    max_total_cells: float = 4e6
    workload: tuple[Any, ...] | None = None

    def __post_init__(self) -> None:
        if self.workload is not None:
            object.__setattr__(self, "workload", tuple(self.workload))
        bad_caps = _not_positive(self, "cells_per_precision", "max_clique_cells", "max_total_cells")
        if bad_caps:
            raise ConfigError(f"the engine's model caps must be positive numbers; got {bad_caps}.")
        if (self.select is None) != (self.measure is None):
            raise ConfigError(
                "give the engine's select and measure shares both, or neither (the adaptive split)."
            )
        shares = {"count": self.count, "select": self.select, "measure": self.measure}
        given = {k: v for k, v in shares.items() if v is not None}
        bad = {k: v for k, v in given.items() if not (0.0 < v <= 1.0 and math.isfinite(v))}
        if bad:
            raise ConfigError(f"the engine's shares must be in (0, 1]; got {bad}.")
        if self.select is None and self.count >= 0.5:
            raise ConfigError(
                f"with the adaptive split the count's share must be below 0.5; got {self.count!r}."
            )
        total = math.fsum(given.values())
        if self.select is not None and abs(total - 1.0) > 1e-12:
            raise ConfigError(f"the engine's shares must sum to 1; they sum to {total!r}.")
        if not (self.refine_fraction >= 0.0 and math.isfinite(self.refine_fraction)):
            raise ConfigError(f"refine_fraction must be >= 0; got {self.refine_fraction!r}.")
        _check_integer(self, "iters", 1)


def _not_positive(options: object, *names: str) -> dict[str, Any]:
    """The options ``names`` that are not finite numbers above 0 (a bool is not one), by
    name."""
    named = {name: getattr(options, name) for name in names}
    return {
        k: v
        for k, v in named.items()
        if isinstance(v, bool) or not isinstance(v, int | float) or not (v > 0 and math.isfinite(v))
    }


def _check_integer(options: object, name: str, least: int) -> None:
    """ConfigError unless the option ``name`` is an integer >= ``least``."""
    value = getattr(options, name)
    if not (isinstance(value, int) and value >= least):
        raise ConfigError(f"{name} must be an integer >= {least}; got {value!r}.")


@dataclass(frozen=True)
class AIMOptions:
    """Options of ``PrivMRF(..., selection="aim")``: the aim-like preset
    (:mod:`vertimrf.synth.engine.aim`), AIM's rounds on the engine's MRF with the local
    oracle. The defaults are the AIM paper's (McKenna et al., VLDB 2022) except the model
    cap and the fit's iterations (80 MB of float64, about 1e7 cells, and 1000 there): on
    Adult at epsilon 0.8, seed 0, a 1e7 cap grew a 1.1M-cell model and took 390 s (3-way
    TVD 0.0477), and 1e6 cells with 300 iterations a round took 38 s (0.0479), both on 2
    shared cores. ``benchmarks/results/vs_mst.md`` compares it with the engine over seeds.

    Attributes:
        workload: the marginals the synthetic data should answer, as column names (or
            indices), each alone (weight 1) or as ``(columns, weight)``; None: every 3-way
            marginal, weight 1.
        rounds_per_attribute: T = this times d rounds at the first rounds' budget.
        alpha: the share of each round's budget spent on the measurement (the rest selects).
        max_cells: the model's cap on cells, reached when the whole budget is spent; a
            round selects only marginals in a clique or whose model fits the cap times the
            share of the budget spent so far.
        iters: the mirror-descent cap of each round's fit.
    """

    workload: tuple[Any, ...] | None = None
    rounds_per_attribute: int = 16
    alpha: float = 0.9
    max_cells: float = 1e6
    iters: int = 300

    def __post_init__(self) -> None:
        if self.workload is not None:
            object.__setattr__(self, "workload", tuple(self.workload))
        _check_integer(self, "rounds_per_attribute", 1)
        if not (0.0 < self.alpha < 1.0):
            raise ConfigError(f"alpha must be in (0, 1); got {self.alpha!r}.")
        if not (self.max_cells >= 1 and math.isfinite(self.max_cells)):
            raise ConfigError(f"max_cells must be a number >= 1; got {self.max_cells!r}.")
        _check_integer(self, "iters", 1)
