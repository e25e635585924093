"""A workload of marginals with weights, the candidates it makes and their weights.

AIM (McKenna, Mullins, Sheldon and Miklau, VLDB 2022) selects among the workload's
downward closure: every nonempty subset of a workload marginal. A candidate r helps each
workload marginal s it overlaps, so its weight is w_r = sum over s of c_s |r & s|, for the
workload weights c_s. The default workload is every 3-way marginal, each of weight 1.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.synth.engine.tables import Marginal

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
        entries: Iterable[Sequence[str | int]] | Iterable[tuple[Sequence[str | int], float]],
    ) -> Workload:
        """A workload over ``domain`` from marginals named by column names or indices, each
        either alone (weight 1) or as ``(columns, weight)``."""
        found: dict[Marginal, float] = {}
        for entry in entries:
            columns, weight = _split(entry)
            m = tuple(sorted(_index(domain, c) for c in columns))
            if not m or len(set(m)) != len(m):
                raise ConfigError(
                    f"a workload marginal needs distinct columns; got {list(columns)}."
                )
            if not (weight > 0 and math.isfinite(weight)):
                raise ConfigError(
                    f"a workload weight must be positive and finite; got {weight!r} for "
                    f"{list(columns)}."
                )
            if m in found:
                raise ConfigError(f"the workload names {list(columns)} twice; give it once.")
            found[m] = float(weight)
        if not found:
            raise ConfigError("the workload is empty; give at least one marginal.")
        return cls(tuple(found), tuple(found.values()))

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


def integer_weights(weights: Sequence[float]) -> list[int]:
    """The weights as integers: themselves when all are whole numbers, else on a grid of
    WEIGHT_GRID steps of the largest (each at least 1). Selection scales out: only their
    ratios matter."""
    if all(float(w).is_integer() for w in weights):
        return [int(w) for w in weights]
    top = max(weights)
    return [max(1, round(w / top * WEIGHT_GRID)) for w in weights]


def _split(entry: object) -> tuple[Sequence[str | int], float]:
    """(columns, weight) of a workload entry."""
    if (
        isinstance(entry, tuple)
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
