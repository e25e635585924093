"""A workload of weighted marginals: AIM's candidates and weights, and the
engine's pair weights; design notes in docs/design/core.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError

Marginal = tuple[int, ...]

# A workload of weights that are not whole numbers is scored with integer weights: each
# weight times WEIGHT_GRID / the largest, rounded (at least 1).
WEIGHT_GRID = 2**20
DEFAULT_WAY = 3


@dataclass(frozen=True)
class Workload:
    """Marginals (sorted attribute indices) and their positive weights."""

    marginals: tuple[Marginal, ...]
    weights: tuple[float, ...]

    @classmethod
    def all_way(cls, d: int, way: int = DEFAULT_WAY) -> Workload:
        """Every ``way``-way marginal of ``d`` attributes (every d-way one if d < way),
        weight 1."""
        k = min(way, d)
        marginals = tuple(combinations(range(d), k))
        return cls(marginals, (1.0,) * len(marginals))

    @classmethod
    def of(
        cls,
        domain: Domain,
        entries: Sequence[object],
    ) -> Workload:
        """A workload over ``domain`` from marginals named by column names or indices, each
        either alone (weight 1) or as ``(columns, weight)``."""
        found: dict[Marginal, float] = {}
        for columns, weight in workload_entries(entries):
            m = tuple(sorted(_index(domain, c) for c in columns))
            if m in found:
                raise ConfigError(f"the workload names {list(columns)} twice; give it once.")
            found[m] = weight
        return cls(tuple(found), tuple(found.values()))

    @classmethod
    def given(cls, domain: Domain, entries: Sequence[object] | None) -> Workload | None:
        """The workload of ``entries`` over ``domain`` for the engine's selection: None when
        there are none or they are the default workload (every 3-way marginal, equal
        weights), whose selection is the default one."""
        if entries is None:
            return None
        workload = cls.of(domain, entries)
        d = len(domain)
        way = min(DEFAULT_WAY, d)
        # its marginals are distinct: math.comb(d, way) of them of size `way` are all of them
        every = all(len(m) == way for m in workload.marginals)
        every = every and len(workload.marginals) == math.comb(d, way)
        return None if every and len(set(workload.weights)) == 1 else workload

    def candidates(self) -> dict[Marginal, float]:
        """Every nonempty subset r of a workload marginal, with weight sum_s c_s |r & s|,
        in order of size, then attributes."""
        subsets = {
            r for m in self.marginals for k in range(1, len(m) + 1) for r in combinations(m, k)
        }
        ordered = sorted(subsets, key=lambda r: (len(r), r))
        return {
            r: math.fsum(
                c * len(set(r) & set(s)) for s, c in zip(self.marginals, self.weights, strict=True)
            )
            for r in ordered
        }

    def pair_weights(self, d: int) -> np.ndarray:
        """The ``d`` x ``d`` symmetric weights of the pairs of attributes: the sum of the
        weights of the workload marginals holding both, divided by the largest (all zero
        when no workload marginal holds two attributes)."""
        out = np.zeros((d, d))
        for m, c in zip(self.marginals, self.weights, strict=True):
            for i, j in combinations(m, 2):
                out[i, j] += c
                out[j, i] += c
        top = out.max()
        return out / top if top > 0 else out

    def first_release(self, d: int) -> list[Marginal]:
        """The engine's first release under this workload: every pair of attributes that a
        workload marginal holds (in the order of ``combinations(range(d), 2)``), then the
        1-way marginal of each attribute in none of them, so that every attribute is
        measured."""
        weights = self.pair_weights(d)
        pairs: list[Marginal] = [m for m in combinations(range(d), 2) if weights[m] > 0]
        alone: list[Marginal] = [(a,) for a in range(d) if not any(a in m for m in pairs)]
        return pairs + alone


def workload_entries(
    entries: Sequence[object],
) -> tuple[tuple[tuple[str | int, ...], float], ...]:
    """The entries of a workload as (columns, weight) pairs, checked without a domain:
    each marginal has distinct columns, each weight is positive and finite, and there is at
    least one."""
    if not isinstance(entries, (list, tuple)):
        raise ConfigError(
            f"a workload is a list of marginals, each a list of columns or (columns, weight); "
            f"got {entries!r:.80}."
        )
    out = []
    for entry in entries:
        columns, weight = _split(entry)
        if not all(isinstance(c, (str, int)) and not isinstance(c, bool) for c in columns):
            raise ConfigError(
                f"a workload marginal lists column names or indices; got {list(columns)}."
            )
        if not columns or len(set(columns)) != len(columns):
            raise ConfigError(f"a workload marginal needs distinct columns; got {list(columns)}.")
        if not (weight > 0 and math.isfinite(weight)):
            raise ConfigError(
                f"a workload weight must be positive and finite; got {weight!r} for "
                f"{list(columns)}."
            )
        out.append((tuple(columns), weight))
    if not out:
        raise ConfigError("the workload is empty; give at least one marginal.")
    return tuple(out)


def integer_weights(weights: Sequence[float]) -> list[int]:
    """The weights as integers: themselves when all are whole numbers, else on a grid of
    WEIGHT_GRID steps of the largest (each at least 1). Selection scales out: only their
    ratios matter."""
    if all(float(w).is_integer() for w in weights):
        return [int(w) for w in weights]
    top = max(weights)
    return [max(1, round(w / top * WEIGHT_GRID)) for w in weights]


def _split(entry: object) -> tuple[Sequence[str | int], float]:
    """(columns, weight) of a workload entry: a list of columns, or a pair (list of
    columns, weight) as a tuple or, from JSON, a list."""
    if (
        isinstance(entry, (tuple, list))
        and len(entry) == 2
        and isinstance(entry[0], (list, tuple))
        and isinstance(entry[1], (int, float))
        and not isinstance(entry[1], bool)
    ):
        return entry[0], float(entry[1])
    if isinstance(entry, (list, tuple)):
        return entry, 1.0
    raise ConfigError(f"a workload entry is a list of columns or (columns, weight); got {entry!r}.")


def _index(domain: Domain, column: str | int) -> int:
    """The index of ``column`` (a name, or an index) in ``domain``."""
    if isinstance(column, str):
        if column not in domain.names:
            raise ConfigError(
                f"the workload names a column {column!r} the table does not have; its columns "
                f"are {list(domain.names)}."
            )
        return domain.names.index(column)
    if isinstance(column, int) and not isinstance(column, bool) and 0 <= column < len(domain):
        return column
    raise ConfigError(
        f"a workload column is a name or an index in 0..{len(domain) - 1}; got {column!r}."
    )
