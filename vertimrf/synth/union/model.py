"""One model over the union of the parties' records: fit on the assembled tables, sample
either population.

**The model.** Its cliques are the attribute sets of the tables
(:func:`~vertimrf.synth.union.measurements.union_tables`: the presence clique, each own and
cross table, each table against a peer's presence) and (a, P_p) for every attribute a of
party p, which carries the structural zeros. The tables against a peer's presence join every
P_q to every attribute, so the junction tree's cliques are those of the data graph with the
m presence attributes added: at most 2^m times the cells, and m is small.

**The fit** is mirror descent (:func:`~vertimrf.mrf.estimation.mirror_descent`) from the
structural zeros (or a given warm start) on every table, with the model's total
N = max(sum_T r_T, 1). It stops once the loss is ``target_ratio`` times its expectation at
the truth (1/2 of the measured cells) or stalls, like the server's fit.

**Sampling** is post-processing of the fit. ``population="intersection"`` draws
round(max(r_all, 0)) rows, r_all the count of the region of every party, from the model
conditioned on every P_p = 1: the junction tree is conditioned exactly, by setting the
presence clique's log-potential to -inf off the all-held cell, not by rejection.
``population="union"`` draws round(max(sum_T r_T, 0)) rows from the model itself. A party's
attributes are empty (NaN) where it is absent; the presence attributes are not output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from vertimrf.errors import ConfigError, DomainError
from vertimrf.mrf.cliques import CliquePotentials
from vertimrf.mrf.estimation import FitResult, mirror_descent
from vertimrf.mrf.model import MarkovRandomField, PotentialsLike
from vertimrf.synth.fitted import Decoder, decoder_of
from vertimrf.synth.union.measurements import UnionDomain, structural_factors, union_tables
from vertimrf.synth.union.releases import PartialReleases

__all__ = ["Population", "UnionModel", "fit_union"]

Population = Literal["intersection", "union"]


@dataclass
class UnionModel:
    """A fitted model over the union of records (module doc) and the region counts its
    populations' row counts come from."""

    space: UnionDomain
    model: MarkovRandomField
    regions: dict[int, float]
    fit: FitResult

    def rows(self, population: Population = "intersection") -> int:
        """The population's DP row count: round(max(r_all, 0)) for the intersection,
        round(max(sum_T r_T, 0)) for the union."""
        if population == "intersection":
            return round(max(self.regions[(1 << self.space.parties) - 1], 0.0))
        if population == "union":
            return round(max(sum(self.regions.values()), 0.0))
        raise ConfigError(f"population must be 'intersection' or 'union'; got {population!r}.")

    def population_model(self, population: Population = "intersection") -> MarkovRandomField:
        """The model the population's rows are drawn from: the fitted one for the union, a
        copy conditioned on every party holding the record for the intersection."""
        self.rows(population)
        if population == "union":
            return self.model
        m = self.space.parties
        held = np.full((2,) * m, -np.inf)
        held[(1,) * m] = 0.0
        flags = tuple(self.space.presence(p) for p in range(m))
        model = self.model.copy()
        model.set_potentials(model.potentials.values + _factors(model, {flags: held}))
        return model

    def sample_codes(
        self,
        rng: np.random.Generator,
        population: Population = "intersection",
        rows: int | None = None,
    ) -> np.ndarray:
        """Rows of the population as data codes (n x d, int64), u_a where a is absent;
        ``rows`` (default :meth:`rows`) of them."""
        n = self.rows(population) if rows is None else rows
        codes = self.population_model(population).sample(n, rng)
        return codes[:, : len(self.space.data)]

    def sample(
        self,
        rng: np.random.Generator,
        decoder: Decoder | None = None,
        population: Population = "intersection",
        rows: int | None = None,
    ) -> pd.DataFrame:
        """:meth:`sample_codes` decoded by ``decoder`` (a spec or domain of the data
        attributes; default their codes), NaN where a party is absent."""
        decoder = self.space.data if decoder is None else decoder
        names = tuple(decoder.names)
        if names != self.space.data.names:
            raise DomainError(f"decode with columns {list(self.space.data.names)}; got {names}.")
        codes = self.sample_codes(rng, population, rows)
        absent = codes == np.asarray(self.space.data.sizes)
        frame = decoder_of(decoder)(np.where(absent, 0, codes))
        return frame.mask(absent)


def _factors(model: MarkovRandomField, factors: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """``factors`` as a potential buffer of ``model``'s cliques."""
    return CliquePotentials.from_factors(model.layout, factors).values


def fit_union(
    releases: PartialReleases,
    *,
    iters: int = 3000,
    target_ratio: float | None = 0.7,
    tol: float = 1e-6,
    warm_start: PotentialsLike | None = None,
    max_cells: int | None = None,
) -> UnionModel:
    """Fit the union model (module doc) on the tables the releases give.

    Args:
        releases: the run's noisy releases.
        iters: mirror-descent iteration cap.
        target_ratio: stop once the loss is this times its expectation at the truth (None:
            only ``tol``, ``iters`` or a stall stop the fit).
        tol: stop when the loss fell by less than this (relative) over 50 iterations.
        warm_start: starting log-potentials (e.g. a previous fit's); the structural zeros
            are kept either way.
        max_cells: cap on the model's cells (default the engine's).
    """
    space = UnionDomain(releases.domain, releases.owner)
    tables = union_tables(releases)
    zeros = structural_factors(space)
    cliques = [t.attrs for t in tables] + list(zeros)
    total = max(float(sum(releases.regions.values())), 1.0)
    model = MarkovRandomField(space.domain, cliques, zeros, total, max_cells=max_cells)
    if warm_start is not None:
        model.set_potentials(warm_start)
        model.set_potentials(model.potentials.values + _factors(model, zeros))
    target = None
    if target_ratio is not None:
        target = target_ratio * 0.5 * sum(t.measured_cells for t in tables)
    result = mirror_descent(
        model, [t.measurement() for t in tables], iters=iters, tol=tol, target_loss=target
    )
    return UnionModel(space, model, dict(releases.regions), result)
