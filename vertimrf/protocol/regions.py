"""The public arithmetic of partial record sets (docs/design/protocol.md)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from vertimrf.errors import ConfigError

__all__ = [
    "REGION_DELTA_SHARE",
    "RegionNoise",
    "SmallSharedWarning",
    "members",
    "population_rows",
    "region_mask",
    "regions_of",
    "small_shared",
]

# Each of the two failure probabilities (a clipped dummy count; a run that goes on with too
# few rows) takes this share of the config's delta; the conversion to zCDP keeps the rest.
REGION_DELTA_SHARE = 0.01


def regions_of(m: int, index: int | None = None) -> tuple[int, ...]:
    """The regions of ``m`` parties as bit masks, ascending; only those holding party
    ``index`` when given."""
    if not isinstance(m, int) or not 1 <= m <= 16:
        raise ConfigError(f"partial record sets take 1 to 16 parties; got {m!r}.")
    everything = range(1, 1 << m)
    return tuple(t for t in everything if index is None or t >> index & 1)


def population_rows(released: Mapping[int, float], population: str) -> int:
    """The synthetic rows of ``population`` from the published region counts: the count of
    the region of every party ("intersection") or of all regions ("union"), rounded and at
    least 0."""
    if population == "intersection":
        return round(max(released[max(released)], 0.0))
    if population == "union":
        return round(max(sum(released.values()), 0.0))
    raise ConfigError(f"population must be 'intersection' or 'union'; got {population!r}.")


class SmallSharedWarning(UserWarning):
    """The records every party holds are far fewer than the config's expected_shared."""


def small_shared(released: Mapping[int, float], expected: float | None) -> str | None:
    """A line naming the likely cause when the published count of the records every party
    holds is under a quarter of ``expected`` (the config's public expected_shared) of the
    published count of all records; None otherwise, or with no expectation. Judged on the
    noisy counts alone (post-processing)."""
    if expected is None:
        return None
    shared, total = max(released[max(released)], 0.0), max(sum(released.values()), 0.0)
    if total == 0 or shared >= expected / 4 * total:
        return None
    return (
        f"the records every party holds are about {shared / total:.1%} of all (noisy counts), "
        f"under a quarter of the expected_shared {expected:.0%}: the likely cause is record IDs "
        "of another type or format at some party (7 against '7' or '007', or one text ID among "
        "integers); declare the ID type with `vertimrf config --id-type integer|text` and "
        "check each party's ID column."
    )


def members(region: int, names: tuple[str, ...]) -> tuple[str, ...]:
    """The names of the parties in ``region`` (a bit mask over ``names``)."""
    return tuple(n for i, n in enumerate(names) if region >> i & 1)


def region_mask(parties: tuple[str, ...], names: tuple[str, ...]) -> int:
    """The bit mask of the region of ``parties`` (each one of ``names``)."""
    unknown = sorted(set(parties) - set(names))
    if unknown or not parties:
        raise ConfigError(f"a region is a non-empty set of {list(names)}; got {list(parties)}.")
    return sum(1 << names.index(p) for p in set(parties))


@dataclass(frozen=True)
class RegionNoise:
    """The noise of the region counts for ``m`` parties (module doc): from the zCDP
    budget ``rho`` they cost and the two failure probabilities (shares of the config's
    delta) of clipping a dummy count and of a run that goes on with too few rows."""

    m: int
    rho: float
    delta_clip: float
    delta_stop: float

    def __post_init__(self) -> None:
        regions_of(self.m)
        if not (isinstance(self.rho, int | float) and 0 < self.rho < math.inf):
            raise ConfigError(f"the region counts' rho must be positive; got {self.rho!r}.")
        for name in ("delta_clip", "delta_stop"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and 0 < value < 1):
                raise ConfigError(f"{name} must lie in (0, 1); got {value!r}.")

    @property
    def regions(self) -> int:
        """R = 2^m - 1, the number of regions."""
        return (1 << self.m) - 1

    @property
    def sigma(self) -> float:
        """The standard deviation parameter of each noise: sqrt(1 / (2 rho))."""
        return math.sqrt(1.0 / (2.0 * self.rho))

    @property
    def offset(self) -> int:
        """The public offset of every dummy count (and the clip of its noise)."""
        tail = math.log(2.0 * self.regions / self.delta_clip)
        return math.ceil(self.sigma * math.sqrt(2.0 * tail))

    @property
    def margin(self) -> int:
        """The per-region margin of the stop rule."""
        tail = math.log(1.0 / self.delta_stop)
        return math.ceil(self.sigma * math.sqrt(2.0 * tail / self.regions))

    @property
    def dummy_rows(self) -> int:
        """The most dummy tokens a run can hold: 2 ``offset`` per region."""
        return 2 * self.offset * self.regions

    @property
    def reserve(self) -> int:
        """R (offset + margin): the rows the stop rule sets aside beside the records' noisy
        count. A max_rows at or under it leaves no room for any record."""
        return self.regions * (self.offset + self.margin)

    def goes_on(self, released: dict[int, int], max_rows: int) -> bool:
        """Whether a run whose published region counts are ``released`` goes on: their sum
        plus R (offset + margin) fits in ``max_rows``."""
        return sum(released.values()) + self.reserve <= max_rows
