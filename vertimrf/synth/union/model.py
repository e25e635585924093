"""The union model: fit on the assembled tables, sample either
population; design notes in docs/design/synth.md."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from vertimrf.errors import ConfigError, DomainError
from vertimrf.mrf.cliques import CliquePotentials
from vertimrf.mrf.estimation import FitResult, mirror_descent
from vertimrf.mrf.model import MarkovRandomField, PotentialsLike
from vertimrf.protocol.regions import population_rows
from vertimrf.synth.engine.scores import left_out_one_ways
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.fitted import Decoder, absent_decoder, check_rows
from vertimrf.synth.union.measurements import UnionDomain, union_tables
from vertimrf.synth.union.releases import NoisyTable, PartialReleases
from vertimrf.synth.union.structure import Structure, presence_bins, union_structure

__all__ = ["PLATEAU", "Population", "UnionModel", "fit_union"]

#: The fit stops below the loss's expectation at the truth once 50 iterations take off less
#: than this many of its standard deviations.
PLATEAU = 0.5

Population = Literal["intersection", "union"]


@dataclass
class UnionModel:
    """A fitted model over the union of records (module doc), its structure, and the region
    counts its populations' row counts come from."""

    space: UnionDomain
    structure: Structure
    model: MarkovRandomField
    regions: dict[int, float]
    fit: FitResult

    def rows(self, population: Population = "intersection") -> int:
        """The population's DP row count: round(max(r_all, 0)) for the intersection,
        round(max(sum_T r_T, 0)) for the union."""
        return population_rows(self.regions, population)

    def marginal(self, attrs: Sequence[int]) -> np.ndarray:
        """The model's counts over ``attrs`` of the tables' domain (:class:`UnionDomain`:
        data attributes, then presence attributes), axes in that order."""
        d, reps = len(self.space.data), self.structure.representatives
        on = [a if a < d else reps[a - d] for a in attrs]
        if len(set(on)) != len(on):
            raise DomainError(f"marginal needs distinct attributes; got {list(attrs)}.")
        table = self.model.marginal(on)
        for axis, a in enumerate(attrs):
            if a >= d:
                bins = presence_bins(self.space, on[axis])
                table = np.stack([table.compress(bins == k, axis).sum(axis) for k in (0, 1)], axis)
        return table

    def population_model(self, population: Population = "intersection") -> MarkovRandomField:
        """The model the population's rows are drawn from: the fitted one for the union, a
        copy conditioned on every party holding the record for the intersection."""
        self.rows(population)
        if population == "union":
            return self.model
        reps = self.structure.representatives
        held = np.full(tuple(self.space.absent(a) + 1 for a in reps), -np.inf)
        held[tuple(slice(0, self.space.absent(a)) for a in reps)] = 0.0
        model = self.model.copy()
        model.set_potentials(model.potentials.values + _factors(model, {reps: held}))
        return model

    def sample_codes(
        self,
        rng: np.random.Generator,
        population: Population = "intersection",
        rows: int | None = None,
    ) -> np.ndarray:
        """Rows of the population as data codes (n x d, int64), u_a where a is absent;
        ``rows`` (default :meth:`rows`) of them."""
        n = self.rows(population) if rows is None else check_rows(rows)
        return self.population_model(population).sample(n, rng)

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
        return absent_decoder(decoder)(self.sample_codes(rng, population, rows))


def _factors(model: MarkovRandomField, factors: dict[tuple[int, ...], np.ndarray]) -> np.ndarray:
    """``factors`` as a potential buffer of ``model``'s cliques."""
    return CliquePotentials.from_factors(model.layout, factors).values


def with_left_out_one_ways(
    releases: PartialReleases, cliques: Sequence[Sequence[int]]
) -> PartialReleases:
    """``releases`` with the own 1-way tables pooled from the own 2-way tables in none of
    ``cliques`` (:func:`~vertimrf.synth.engine.scores.left_out_one_ways`), which the fit
    leaves out whole; each counts its party's records, as its sources do."""
    pairs: dict[tuple[int, ...], NoisyTable] = {}
    for t in releases.own:
        if len(t.attrs) == 2:
            pairs.setdefault(t.attrs, t)
    tables = Tables(
        {m: t.values.ravel() for m, t in pairs.items()}, {m: t.sigma for m, t in pairs.items()}
    )
    ones = left_out_one_ways(tables, releases.domain.sizes, cliques)
    extra = tuple(NoisyTable(m, v, ones.scale[m]) for m, v in ones.values.items())
    return dataclasses.replace(releases, own=releases.own + extra)


def fit_union(
    releases: PartialReleases,
    *,
    iters: int = 3000,
    target_ratio: float | None = 0.7,
    tol: float = 1e-6,
    cliques: Sequence[Sequence[int]] | None = None,
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
            Also stop once the loss is below its expectation at the truth (half the
            measured cells) and fell by less than ``PLATEAU`` of its noise (the square root
            of that expectation) over 50 iterations: past that the fit follows noise.
        cliques: the data attribute sets the model may join (e.g. a secure run's cliques);
            a table over two or more data attributes inside none of them is left out,
            but an own 2-way table's 1-way sums are kept (:func:`with_left_out_one_ways`)
            (default: every table's attributes are joined).
        warm_start: starting log-potentials (e.g. a previous fit's); the structural zeros
            are kept either way.
        max_cells: cap on the model's cells (default the engine's).
    """
    if target_ratio is not None and not (0 < target_ratio < np.inf):
        raise ConfigError(f"target_ratio must be positive (or None); got {target_ratio!r}.")
    space = UnionDomain(releases.domain, releases.owner)
    if cliques is not None:
        releases = with_left_out_one_ways(releases, cliques)
    structure = union_structure(space, union_tables(releases), cliques)
    total = max(float(sum(releases.regions.values())), 1.0)
    model = MarkovRandomField(
        space.model_domain, structure.cliques, structure.zeros, total, max_cells=max_cells
    )
    if warm_start is not None:
        model.set_potentials(warm_start)
        model.set_potentials(model.potentials.values + _factors(model, structure.zeros))
    expected = 0.5 * sum(t.measured_cells for t in structure.tables)  # the loss at the truth
    target = None if target_ratio is None else target_ratio * expected
    result = mirror_descent(
        model, structure.measurements, iters=iters, tol=tol, target_loss=target,
        plateau=(expected, PLATEAU * math.sqrt(expected)),
    )  # fmt: skip
    return UnionModel(space, structure, model, dict(releases.regions), result)
