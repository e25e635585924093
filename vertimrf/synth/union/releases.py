"""What the server holds after a run with partially overlapping record sets:
noisy tables; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.protocol.regions import regions_of

__all__ = ["NoisyTable", "PartialReleases"]


@dataclass(frozen=True)
class NoisyTable:
    """Noisy counts over ``attrs`` (data attribute indices; ``values`` has one axis per
    attribute, in that order), each cell's noise of standard deviation ``sigma``."""

    attrs: tuple[int, ...]
    values: np.ndarray
    sigma: float

    def __post_init__(self) -> None:
        attrs = tuple(int(a) for a in self.attrs)
        values = np.asarray(self.values, dtype=np.float64)
        if not attrs or len(set(attrs)) != len(attrs) or values.ndim != len(attrs):
            raise ConfigError(
                f"a noisy table needs distinct attributes and one axis each; got {attrs} "
                f"with values of shape {values.shape}."
            )
        if not np.all(np.isfinite(values)):
            raise ConfigError(f"the noisy table over {attrs} has NaN or infinite counts.")
        sigma = float(self.sigma)
        if not (np.isfinite(sigma) and sigma > 0):
            raise ConfigError(f"the noisy table over {attrs} needs a positive sigma; got {sigma}.")
        object.__setattr__(self, "attrs", attrs)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "sigma", sigma)


@dataclass(frozen=True)
class PartialReleases:
    """Every noisy release of a run whose parties hold different records.

    Attributes:
        domain: the data attributes and their sizes (without the "absent" value).
        owner: the party (0 .. m-1) holding each attribute.
        own: tables over one party's attributes, counted over that party's records.
        cross: tables over attributes of exactly two parties (one or more each), counted
            over the records both hold.
        presence: for a pair (p, q) of parties, tables over p's attributes counted over the
            records p and q both hold.
        regions: the noisy count r_T of the records held by exactly the parties in T, for
            every region T (bit mask, bit i for party i).
        region_sigma: the standard deviation of each region count's noise.
    """

    domain: Domain
    owner: tuple[int, ...]
    own: tuple[NoisyTable, ...]
    cross: tuple[NoisyTable, ...]
    presence: Mapping[tuple[int, int], tuple[NoisyTable, ...]]
    regions: Mapping[int, float]
    region_sigma: float

    def __post_init__(self) -> None:
        owner = tuple(int(p) for p in self.owner)
        if len(owner) != len(self.domain) or not owner:
            raise ConfigError(
                f"give the owner of each of the {len(self.domain)} attributes; got {owner}."
            )
        m = max(owner) + 1
        if sorted(set(owner)) != list(range(m)):
            raise ConfigError(f"owners must be the parties 0 .. {m - 1}, each holding some.")
        object.__setattr__(self, "owner", owner)
        if sorted(self.regions) != list(regions_of(m)):
            raise ConfigError(
                f"give a count for each of the {2**m - 1} regions of {m} parties "
                f"(masks 1 .. {2**m - 1}); got {sorted(self.regions)}."
            )
        if not all(np.isfinite(float(r)) for r in self.regions.values()):
            raise ConfigError("the region counts must be finite numbers.")
        if not (np.isfinite(self.region_sigma) and self.region_sigma > 0):
            raise ConfigError(f"region_sigma must be positive; got {self.region_sigma}.")
        for t in self.own:
            self._check(t, "own")
        for t in self.cross:
            self._check(t, "cross")
        for (p, q), tables in self.presence.items():
            if p == q or not (0 <= p < m and 0 <= q < m):
                raise ConfigError(f"presence pair ({p}, {q}) must be two of parties 0..{m - 1}.")
            for t in tables:
                self._check(t, "presence", p)

    @property
    def parties(self) -> int:
        """m, the number of parties."""
        return max(self.owner) + 1

    def _check(self, table: NoisyTable, kind: str, party: int = -1) -> None:
        """ConfigError unless ``table`` lies in the domain and its attributes' owners suit
        its ``kind`` (``party``: the first of a presence table's pair)."""
        d = len(self.domain)
        if any(not 0 <= a < d for a in table.attrs):
            raise ConfigError(f"{kind} table over {table.attrs}: attributes are 0 .. {d - 1}.")
        if table.values.shape != self.domain.shape(table.attrs):
            raise ConfigError(
                f"{kind} table over {table.attrs} has shape {table.values.shape}; the domain "
                f"needs {self.domain.shape(table.attrs)}."
            )
        parties = {self.owner[a] for a in table.attrs}
        fits = {
            "own": len(parties) == 1,
            "cross": len(parties) == 2,
            "presence": parties == {party},
        }
        if not fits[kind]:
            rule = {
                "own": "attributes of one party",
                "cross": "attributes of exactly two parties",
                "presence": "attributes of the first party of its pair",
            }[kind]
            raise ConfigError(f"{kind} table over {table.attrs}: it must be over {rule}.")
