"""The union domain and the tables of it that the releases give
(post-processing only); design notes in docs/design/synth.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import chdtri

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.protocol.regions import regions_of
from vertimrf.synth.union.releases import NoisyTable, PartialReleases

__all__ = ["ALPHA", "Assembled", "Split", "UnionDomain", "pooled", "union_tables"]

#: How often records that do not differ may still lend the noisy shared counts a weight.
ALPHA = 0.01


@dataclass(frozen=True)
class UnionDomain:
    """The data attributes (owner by owner) with "absent", then one presence attribute per
    party (named ``present:<p>``)."""

    data: Domain
    owner: tuple[int, ...]

    def __post_init__(self) -> None:
        clash = sorted(set(self.flags) & set(self.data.names))
        if clash:
            raise ConfigError(f"rename the data columns {clash}: the union model uses them.")

    @property
    def parties(self) -> int:
        """m, the number of parties."""
        return max(self.owner) + 1

    @property
    def flags(self) -> tuple[str, ...]:
        """The presence attributes' names."""
        return tuple(f"present:{p}" for p in range(self.parties))

    @property
    def domain(self) -> Domain:
        """The tables' domain: the data attributes' sizes u_a + 1, then m binary presence
        attributes."""
        sizes = tuple(s + 1 for s in self.data.sizes) + (2,) * self.parties
        return Domain(self.data.names + self.flags, sizes)

    @property
    def model_domain(self) -> Domain:
        """The model's domain: the data attributes with their absent values."""
        return self.domain.project(range(len(self.data)))

    def attributes(self, p: int) -> tuple[int, ...]:
        """The data attributes of party p."""
        return tuple(a for a, q in enumerate(self.owner) if q == p)

    def presence(self, p: int) -> int:
        """The index of party p's presence attribute."""
        return len(self.data) + p

    def absent(self, a: int) -> int:
        """The "absent" code of data attribute a."""
        return self.data.sizes[a]


@dataclass(frozen=True)
class Assembled:
    """A table over ``attrs`` (union-domain indices, axes in that order) and the variance
    of each cell (0 at a structural zero)."""

    attrs: tuple[int, ...]
    values: np.ndarray
    variance: np.ndarray

    @property
    def measured_cells(self) -> int:
        """The cells that are not structural zeros."""
        return int(np.count_nonzero(self.variance))

    @property
    def sigma(self) -> float:
        """sqrt of the mean variance of the measured cells (module doc)."""
        return float(np.sqrt(self.variance.sum() / self.measured_cells))


class _Parts:
    """The released numbers with their variances: region sums and summed tables."""

    def __init__(self, releases: PartialReleases) -> None:
        self.releases = releases
        self.space = UnionDomain(releases.domain, releases.owner)

    def regions(self, holding: Sequence[int], lacking: Sequence[int]) -> tuple[float, float]:
        """sum r_T over the regions T holding every party of ``holding`` and none of
        ``lacking``, and its variance."""
        chosen = [
            t
            for t in regions_of(self.space.parties)
            if all(_holds(t, p) for p in holding) and not any(_holds(t, p) for p in lacking)
        ]
        total = float(sum(self.releases.regions[t] for t in chosen))
        return total, len(chosen) * self.releases.region_sigma**2

    def summed(
        self, tables: Sequence[NoisyTable], attrs: tuple[int, ...], what: str
    ) -> tuple[np.ndarray, float]:
        """The counts over ``attrs`` (axes in that order) from the table holding them whose
        sums have the least variance (sigma^2 times the cells each sums), and that
        variance."""
        holding = [t for t in tables if set(attrs) <= set(t.attrs)]
        if not holding:
            raise ConfigError(
                f"the releases hold no {what} table over {attrs}; release one, or drop the "
                "tables that need it."
            )
        best = min(holding, key=lambda t: t.sigma**2 * t.values.size)
        others = tuple(i for i, a in enumerate(best.attrs) if a not in attrs)
        kept = [a for a in best.attrs if a in attrs]
        values = np.transpose(best.values.sum(axis=others), [kept.index(a) for a in attrs])
        return values, best.sigma**2 * best.values.size / values.size

    def own(self, p: int, attrs: tuple[int, ...]) -> tuple[np.ndarray, float]:
        """p's own counts over ``attrs`` and their variance."""
        mine = [t for t in self.releases.own if self.releases.owner[t.attrs[0]] == p]
        return self.summed(mine, attrs, f"own (party {p})")

    def shared(self, p: int, q: int, attrs: tuple[int, ...]) -> tuple[np.ndarray, float]:
        """The counts of p's ``attrs`` over the records p and q hold, and their variance."""
        tables = self.releases.presence.get((p, q), ())
        return self.summed(tables, attrs, f"presence ({p}, {q})")

    def has_shared(self, p: int, q: int, attrs: tuple[int, ...]) -> bool:
        """Whether a presence table of (p, q) holds ``attrs``."""
        tables = self.releases.presence.get((p, q), ())
        return any(set(attrs) <= set(t.attrs) for t in tables)

    def split(
        self, p: int, q: int, attrs: tuple[int, ...], both: np.ndarray, both_var: float
    ) -> Split:
        """p's own counts over ``attrs`` split into the records q also holds and the rest,
        from ``both`` (a noisy count of the former, of variance ``both_var`` per cell):
        :func:`pooled`'s estimate of the former and own minus it."""
        own, own_var = self.own(p, attrs)
        held = self.regions((p,), ())[0]
        share = min(max(self.regions((p, q), ())[0] / held, 0.0), 1.0) if held > 0 else 0.0
        return pooled(own, own_var, both, both_var, share)


@dataclass(frozen=True)
class Split:
    """A party's own counts split by a peer's presence: ``both`` (over the records the peer
    also holds) and ``rest`` (own minus both), each with its variance per cell."""

    both: np.ndarray
    both_var: float
    rest: np.ndarray
    rest_var: float


def pooled(
    own: np.ndarray, own_var: float, both: np.ndarray, both_var: float, share: float
) -> Split:
    """The counts over the records a peer also holds, pooled from two noisy sources, and own
    minus them (module doc, **Shared counts**): ``own`` (all of the party's records, variance
    ``own_var`` per cell) times ``share`` (the fraction the peer holds too), and ``both``
    (variance ``both_var``), weighted w = tau^2 / (tau^2 + v), v = both_var + share^2
    own_var, tau^2 = max(mean (both - share own)^2 - v q / k, 0) over k cells, q the
    chi^2_k quantile at ``1 - ALPHA``: the two sources' spread beyond what their noise gives
    in all but ``ALPHA`` of the runs where the records do not differ."""
    prop, prop_var = share * own, share**2 * own_var
    gap = both - prop
    noise = both_var + prop_var
    k = gap.size
    tau2 = max(float(np.mean(gap**2)) - noise * float(chdtri(k, ALPHA)) / k, 0.0)
    w = tau2 / (tau2 + noise)
    # own - pooled = (1 - share (1 - w)) own - w both: the sources' noises are independent.
    keep = 1.0 - share * (1.0 - w)
    return Split(
        prop + w * gap,
        w**2 * both_var + (1.0 - w) ** 2 * prop_var,
        own - prop - w * gap,
        keep**2 * own_var + w**2 * both_var,
    )


def _holds(region: int, p: int) -> bool:
    return bool(region >> p & 1)


def _blank(space: UnionDomain, attrs: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Zero values and variances over data ``attrs`` with their absent codes."""
    shape = tuple(space.absent(a) + 1 for a in attrs)
    return np.zeros(shape), np.zeros(shape)


def _held(space: UnionDomain, attrs: tuple[int, ...]) -> tuple[slice, ...]:
    """The cells of ``attrs`` where every one is held."""
    return tuple(slice(0, space.absent(a)) for a in attrs)


def _nowhere(space: UnionDomain, attrs: tuple[int, ...]) -> tuple[int, ...]:
    """The cell of ``attrs`` where every one is absent."""
    return tuple(space.absent(a) for a in attrs)


def _presence_table(parts: _Parts) -> Assembled:
    """r_T at the cell of T over P_0 .. P_{m-1}; the all-absent cell a structural zero."""
    m = parts.space.parties
    values, variance = np.zeros((2,) * m), np.zeros((2,) * m)
    for t in regions_of(m):
        cell = tuple(int(_holds(t, p)) for p in range(m))
        holding = [p for p in range(m) if _holds(t, p)]
        lacking = [p for p in range(m) if not _holds(t, p)]
        values[cell], variance[cell] = parts.regions(holding, lacking)
    return Assembled(tuple(parts.space.presence(p) for p in range(m)), values, variance)


def _own_table(parts: _Parts, table: NoisyTable) -> Assembled:
    """An own table padded with absent cells: N - n_p where all of it is absent."""
    space, attrs = parts.space, table.attrs
    p = space.owner[attrs[0]]
    values, variance = _blank(space, attrs)
    values[_held(space, attrs)], variance[_held(space, attrs)] = table.values, table.sigma**2
    nowhere = _nowhere(space, attrs)
    values[nowhere], variance[nowhere] = parts.regions((), (p,))
    return Assembled(attrs, values, variance)


def _cross_table(parts: _Parts, table: NoisyTable) -> Assembled:
    """A cross table over attributes of parties p and q with its absent cells: where p's
    part is held and q's absent, p's own counts less the table summed over q's part (and
    the other way round); where both are absent, the regions holding neither; where some of
    one party's attributes are absent and others held, a structural zero."""
    space, attrs = parts.space, table.attrs
    p = space.owner[attrs[0]]
    q = next(space.owner[a] for a in attrs if space.owner[a] != p)
    mine = tuple(a for a in attrs if space.owner[a] == p)
    theirs = tuple(a for a in attrs if space.owner[a] == q)
    order = [attrs.index(a) for a in mine + theirs]
    counts = np.transpose(table.values, order)
    values, variance = _blank(space, mine + theirs)
    held_p, held_q = _held(space, mine), _held(space, theirs)
    gone_p, gone_q = _nowhere(space, mine), _nowhere(space, theirs)
    cell = table.sigma**2
    values[held_p + held_q], variance[held_p + held_q] = counts, cell
    k = len(mine)
    for part, held, gone, owner, peer, axes, other in (
        (mine, held_p, gone_q, p, q, tuple(range(k, len(attrs))), theirs),
        (theirs, held_q, gone_p, q, p, tuple(range(k)), mine),
    ):
        index = held + gone if part is mine else gone + held
        if parts.has_shared(owner, peer, part):  # a presence table: the least noise
            both, both_var = parts.shared(owner, peer, part)
        else:  # this table summed over the peer's part
            both = counts.sum(axis=axes)
            both_var = cell * math.prod(space.absent(a) for a in other)
        split = parts.split(owner, peer, part, both, both_var)
        values[index], variance[index] = split.rest, split.rest_var
    values[gone_p + gone_q], variance[gone_p + gone_q] = parts.regions((), (p, q))
    back = list(np.argsort(order))
    return Assembled(attrs, np.transpose(values, back), np.transpose(variance, back))


def _shared_table(parts: _Parts, p: int, q: int, table: NoisyTable) -> Assembled:
    """A table of p's attributes over the records p and q hold, against P_q."""
    space, attrs = parts.space, table.attrs
    held, nowhere = _held(space, attrs), _nowhere(space, attrs)
    split = parts.split(p, q, attrs, table.values, table.sigma**2)
    sides = []
    for counts, var, holding, lacking in (
        (split.rest, split.rest_var, (), (p, q)),  # P_q = 0
        (split.both, split.both_var, (q,), (p,)),  # P_q = 1
    ):
        values, variance = _blank(space, attrs)
        values[held], variance[held] = counts, var
        values[nowhere], variance[nowhere] = parts.regions(holding, lacking)
        sides.append((values, variance))
    return Assembled(
        (*attrs, space.presence(q)),
        np.stack([v for v, _ in sides], -1),
        np.stack([v for _, v in sides], -1),
    )


def union_tables(releases: PartialReleases) -> list[Assembled]:
    """Every table of the union domain the releases give (module doc): presence first,
    then own, cross and presence tables in the order given."""
    parts = _Parts(releases)
    tables = [_presence_table(parts)]
    tables += [_own_table(parts, t) for t in releases.own]
    tables += [_cross_table(parts, t) for t in releases.cross]
    for (p, q), shared in sorted(releases.presence.items()):
        tables += [_shared_table(parts, p, q, t) for t in shared]
    return tables
