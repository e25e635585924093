"""What every role of method="secure" derives from the config alone;
design notes in docs/design/protocol.md."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from vertimrf.errors import ConfigError, MessageError, PrivacyBudgetError
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.numeric import fine_release, quantile_releases
from vertimrf.privacy.zcdp import pure_to_rho
from vertimrf.protocol.record_sets import EqualSets, RecordSets
from vertimrf.protocol.regions import RegionNoise
from vertimrf.protocol.secure.cross_noise import CrossNoise, SplitNoise
from vertimrf.protocol.secure.marginals import BinMaps, Marginal, Request
from vertimrf.protocol.seeds import SERVER

SELECT = "select"
MEASURE = "measure"
RELEASES = (SELECT, MEASURE)
COUNT_MECHANISM = "discrete_laplace"
WITHIN_MECHANISM = "discrete_gaussian"
# Coins: the fixed-point steps toward sigma, and the relative step up to a sigma that fits.
_COIN_STEPS = 4
_COIN_RAISE = 1e-6

# A count plus noise is read back correctly from Z_{2^r} when it lies in [-2^(r-1), 2^(r-1)).
# The noise of a cross cell is the sum of three N_Z(0, sigma^2 / 2), which is
# 1.5 sigma^2-subgaussian (Canonne, Kamath & Steinke 2020, each discrete Gaussian is
# subgaussian with its parameter; with coins, a centred sum of N fair bits is
# N/4-subgaussian by Hoeffding, and N <= 4 w sigma^2 + 2 with sigma >= 1 / sqrt(w) keeps the
# whole within 1.5 sigma^2), so P(|noise| >= t) <= 2 exp(-t^2 / (3 sigma^2)):
# t = RING_TAIL * sigma leaves a probability below 2^-128 per cell.
RING_TAIL = math.sqrt(3.0 * 129.0 * math.log(2.0))
# The ring widths a plan may choose (whole bytes, so a blob packs r / 8 bytes per value).
RING_WIDTHS = (16, 24, 32, 40, 48, 56, 64)
# The chosen ring also holds the tail of a re-measurement of this many marginals (far more
# than a selection requests), so :attr:`SecurePlan.max_request` never binds in practice.
RING_MIN_REQUEST = 10_000


@dataclass(frozen=True)
class SecurePlan:
    """The public layout and budget of a secure run, made from the config by its method's
    rules (:func:`vertimrf.protocol.methods.secure_plan`).

    ``attrs[p]`` are party p's attribute indices (in spec order), ``groups[p]`` its round-1
    feature groups (its single attributes, in ``attrs`` order), ``offsets[p][g]`` the first
    one-hot column of its g-th group, ``widths[p]`` its k_p and ``group_caps[p]`` its cap on
    round-2 columns toward one peer; ``rows`` is the public padded row count, ``buckets``
    PRF buckets of ``capacity`` rows each (:mod:`vertimrf.protocol.buckets`; one bucket of
    ``max_rows`` rows by default), which hold at most ``max_rows`` records in all. With
    partial record sets (``sets``: :mod:`vertimrf.protocol.record_sets`) the rows are
    ``max_rows`` slots that the server gives out (:mod:`vertimrf.server.slots`), and
    ``rho`` excludes the region counts' share.
    ``workload_first`` is the first release a workload sets
    (:meth:`vertimrf.workload.Workload.first_release`; None: every pair). Each column of ``fine``
    (with ``values`` "fine") has its owner release a noisy fine histogram at its rho with
    the re-measurement, and each of ``quantile`` its DP quantile cuts with the first
    release; ``rho`` excludes their share (:attr:`numeric_rho`).
    """

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    attrs: tuple[tuple[int, ...], ...]
    groups: tuple[tuple[tuple[int, ...], ...], ...]
    offsets: tuple[tuple[int, ...], ...]
    widths: tuple[int, ...]
    group_caps: tuple[int, ...]
    rows: int
    max_rows: int
    count_party: str
    rho: float
    rho_count: float
    rho_select: float
    rho_measure: float
    refine_fraction: float
    select: bool = True  # the select pipeline (else the paper pipeline)
    buckets: int = 1
    sets: RecordSets = EqualSets()  # equal or partial (with the region counts' noise)
    workload_first: tuple[Marginal, ...] | None = None
    values: str = "midpoint"  # where a synthetic number lies inside its bin (vertimrf.within)
    fine: tuple[tuple[str, int, int, float], ...] = ()  # (column, attribute, cells, rho)
    quantile: tuple[tuple[str, int, int, float], ...] = ()  # (column, attribute, bins, rho)
    cross_noise: CrossNoise = SplitNoise()  # how a cross cell's noise is made (config)
    cross_rule: str = ""  # cross_noise "auto": the rule that chose it, and its values
    coalitions: bool = False  # no role deals (product "paillier"): the server with a party views

    @property
    def numeric_rho(self) -> float:
        """The rho of the numeric columns' releases in all (not in ``rho``)."""
        return math.fsum(r for *_, r in (*self.fine, *self.quantile))

    def fine_releases(self, party: str | None = None) -> list[Release]:
        """The ledger entries of the fine histograms (:mod:`vertimrf.privacy.numeric`), of
        every party's numeric columns or of ``party``'s; measured with the
        re-measurement."""
        return [fine_release(*entry) for entry in self._owned(self.fine, party)]

    def quantile_columns(self, p: int) -> dict[str, float]:
        """Party ``p``'s columns cut at quantiles, with the rho of each one's cuts."""
        return {name: rho for name, a, _, rho in self.quantile if self.owner[a] == p}

    def quantile_releases(self, party: str | None = None) -> list[Release]:
        """The ledger entries of the DP quantile cuts of every party's columns cut at
        quantiles, or of ``party``'s; measured before the party encodes its table, sent
        with the first release."""
        return [r for entry in self._owned(self.quantile, party) for r in quantile_releases(*entry)]

    def _owned(
        self, entries: tuple[tuple[str, int, int, float], ...], party: str | None
    ) -> Iterator[tuple[str, int, float, str]]:
        """(column, cells or bins, rho, owner) of the numeric ``entries`` of every party, or
        of ``party``."""
        for name, a, size, rho in entries:
            owner = self.names[self.owner[a]]
            if party in (None, owner):
                yield name, size, rho, owner

    @property
    def regions(self) -> RegionNoise | None:
        """Partial record sets: the region counts' noise; None with equal sets."""
        return self.sets.noise

    @property
    def max_tokens(self) -> int:
        """Partial record sets: the most tokens (and so slots) one party may have, max_rows
        records plus every dummy; 0 with equal record sets."""
        return self.sets.max_tokens(self.max_rows)

    @property
    def capacity(self) -> int:
        """The padded rows of one bucket."""
        return self.rows // self.buckets

    @cached_property
    def ring_bits(self) -> int:
        """The ring Z_{2^r} of the masks, shares and cross releases: the smallest of
        :data:`RING_WIDTHS` in whose signed range every count (at most ``max_rows``) plus the
        noise tail bound (:data:`RING_TAIL`) of the first release, and of a re-measurement
        of :data:`RING_MIN_REQUEST` marginals, lies. Public: from the config only."""
        first = self.first_release()
        sigma = self.sigma(SELECT, first) if self.rho_select > 0 and first else 0.0
        if self.rho_measure > 0:
            sigma = max(sigma, self.nominal_sigma(MEASURE, RING_MIN_REQUEST))
        return next((b for b in RING_WIDTHS[:-1] if self._ring_sigma(b) >= sigma), 64)

    def _ring_sigma(self, bits: int) -> float:
        """The largest noise scale whose tail bound, added to ``max_rows`` (no count is
        larger), fits ``bits``."""
        return max(0.0, (2.0 ** (bits - 1) - 1 - self.max_rows) / RING_TAIL)

    @property
    def word(self) -> type[np.unsignedinteger]:
        """The numpy type that holds one ring value in memory (32 or 64 bits)."""
        return np.uint32 if self.ring_bits <= 32 else np.uint64

    @property
    def word_bytes(self) -> int:
        """Bytes of one ring value in a feature blob."""
        return self.ring_bits // 8

    @property
    def ring_mask(self) -> np.uint64:
        """2^r - 1: a uint64 value reduced into the ring."""
        return np.uint64((1 << self.ring_bits) - 1)

    def signed(self, words: np.ndarray) -> np.ndarray:
        """uint64 ring elements read as signed integers in [-2^(r-1), 2^(r-1)) (int64)."""
        r = self.ring_bits
        if r == 64:
            return words.view(np.int64)
        low = (words & self.ring_mask).astype(np.int64)
        return np.where(low >= 1 << (r - 1), low - (1 << r), low)

    @cached_property
    def max_request(self) -> int | None:
        """The most marginals a re-measurement may hold, so that its nominal noise
        (:meth:`nominal_sigma`) stays inside the ring (None: no bound); the ring is chosen so
        that it is about :data:`RING_MIN_REQUEST` or more. A request's :meth:`sigma` is its
        nominal one to the last bits there (the KLS tau term underflows for s above 9)."""
        if self.ring_bits == 64 or self.rho_measure <= 0:
            return None
        limit = self._ring_sigma(self.ring_bits)
        return max(1, int(2.0 * self.rho_measure * limit * limit))

    @property
    def pipeline(self) -> str:
        """ "select" (its server selects, then requests a re-measurement) or "paper" (one
        release of the cross pairs)."""
        return "select" if self.select else "paper"

    # ------------------------------------------------------------------ layout
    @cached_property
    def owner(self) -> tuple[int, ...]:
        """Party index of every attribute."""
        out = [0] * len(self.sizes)
        for p, own in enumerate(self.attrs):
            for a in own:
                out[a] = p
        return tuple(out)

    def party_index(self, name: str) -> int:
        """Index of the party called ``name``."""
        if name not in self.names:
            raise ConfigError(f"no party {name!r}; parties are {list(self.names)}.")
        return self.names.index(name)

    def pairs(self) -> list[tuple[int, int]]:
        """Every pair of parties (p, q), p < q: the products of the run."""
        m = len(self.names)
        return [(p, q) for p in range(m) for q in range(p + 1, m)]

    def pair_name(self, p: int, q: int) -> str:
        """The public name of the pair (p, q), p < q: its shares' key in messages."""
        return f"{self.names[p]}+{self.names[q]}"

    def _parts(self, m: Marginal) -> dict[int, Marginal]:
        """``m``'s attributes by owning party (each part sorted)."""
        parts: dict[int, list[int]] = {}
        for a in m:
            parts.setdefault(self.owner[a], []).append(int(a))
        return {p: tuple(sorted(v)) for p, v in sorted(parts.items())}

    def measurable(self, m: Marginal) -> bool:
        """True when one or two parties own ``m`` (a cross marginal's parts that are not
        single attributes are round-2 groups)."""
        return len(self._parts(m)) <= 2

    def kind(self, m: Marginal) -> str:
        """ "within" (one party), "cross" (two parties) or raise."""
        parts = self._parts(m)
        if len(parts) == 1:
            return "within"
        if len(parts) == 2:
            return "cross"
        raise MessageError(
            f"marginal {tuple(m)} is not measurable: the secure product measures a marginal "
            "of one party or of two "
            f"({', '.join(f'{self.names[p]}: {g}' for p, g in parts.items())})."
        )

    def canonical(self, m: Marginal) -> Marginal:
        """Within: sorted. Cross: the lower party's part, then the higher party's."""
        m = tuple(int(a) for a in m)
        self.kind(m)
        return tuple(a for part in self._parts(m).values() for a in part)

    def pair_of(self, m: Marginal) -> tuple[int, int]:
        """The two parties (p < q) of a cross marginal."""
        p, q = self._parts(m)
        return p, q

    def split(self, m: Marginal) -> tuple[Marginal, Marginal]:
        """The lower and the higher party's parts of a cross marginal."""
        g, h = self._parts(m).values()
        return g, h

    def cross_blocks(self, marginals: Sequence[Marginal], p: int, q: int) -> list[Marginal]:
        """The cross marginals of ``marginals`` measured by the product of parties p < q, in
        order (the blocks of that pair's release)."""
        return [m for m in marginals if self.kind(m) == "cross" and self.pair_of(m) == (p, q)]

    def layout(self, marginals: Sequence[Marginal] = ()) -> Layout:
        """The share layout that measures ``marginals`` (canonical): for each pair, each
        side's round-2 groups in order of first use. MessageError when a side's groups
        exceed its :attr:`group_caps`."""
        extra: dict[tuple[int, int], list[Marginal]] = {}
        for m in marginals:
            if self.kind(m) != "cross":
                continue
            (p, g), (q, h) = self._parts(m).items()
            for side, peer, part in ((p, q, g), (q, p, h)):
                if len(part) > 1 and part not in extra.setdefault((side, peer), []):
                    extra[side, peer].append(part)
        out = Layout(self, {k: tuple(v) for k, v in extra.items() if v})
        for p, q in out.extra:
            if out.width(p, q) > self.group_caps[p]:
                raise MessageError(
                    f"the request needs {out.width(p, q)} round-2 columns of party "
                    f"{self.names[p]!r} toward {self.names[q]!r}, more than its cap "
                    f"{self.group_caps[p]} (set by the feature width and its singles)."
                )
        return out

    def max_cells(self, p: int, q: int) -> int:
        """The most cells of the pair p < q's share matrix (both sides at their caps)."""
        return (self.widths[p] + self.group_caps[p]) * (self.widths[q] + self.group_caps[q])

    def block(self, m: Marginal) -> tuple[int, int, int, int]:
        """Rows and columns (r0, r1, c0, c1) of the cross 2-way marginal ``m`` in its pair's
        round-1 k_p x k_q share matrix (:meth:`Layout.block` places any cross marginal)."""
        return self.layout().block(m)

    def cells(self, m: Marginal, bins: BinMaps | None = None) -> int:
        """Number of cells of the marginal ``m`` as measured (bin cells where ``bins`` maps)."""
        return math.prod(self.shape(m, bins))

    def shape(self, m: Marginal, bins: BinMaps | None = None) -> tuple[int, ...]:
        """Axis sizes of ``m`` as measured: an attribute's bin count where ``bins`` maps it."""
        bins = bins or (None,) * len(m)
        return tuple(
            self.sizes[a] if b is None else max(b) + 1 for a, b in zip(m, bins, strict=True)
        )

    def all_pairs(self) -> list[Marginal]:
        """Every 2-way marginal (the paper pipeline: every cross-party one), canonical."""
        d = len(self.sizes)
        pairs = [self.canonical((i, j)) for i in range(d) for j in range(i + 1, d)]
        if self.select:
            return pairs
        return [m for m in pairs if self.owner[m[0]] != self.owner[m[1]]]

    def first_release(self) -> list[Marginal]:
        """The first release's marginals, canonical: the workload's
        (:attr:`workload_first`: its pairs, then 1-way marginals of the attributes in none),
        else :meth:`all_pairs`; with partial record sets, then the 1-way marginal of each
        attribute that is its party's only one (:meth:`lone_attributes`)."""
        if self.workload_first is None:
            first = self.all_pairs()
        else:
            first = [self.canonical(m) for m in self.workload_first]
        return first + [(a,) for a in self.lone_attributes() if (a,) not in first]

    def lone_attributes(self) -> list[int]:
        """With partial record sets, each attribute that is its party's only one: no own
        pair counts it over the party's records, and the union fit reads a cross marginal
        only where an own table holds each party's part (an empty list with equal sets,
        where every cross pair counts every record)."""
        return self.sets.lone_attributes(self.attrs) if self.select else []

    # ------------------------------------------------------------------ noise
    def _share(self, release: str, count: int) -> float:
        if release not in RELEASES or count < 1:
            raise ConfigError(f"unknown release {release!r} or no marginals ({count}).")
        share = self.rho_select if release == SELECT else self.rho_measure
        if share <= 0:
            raise ConfigError(f"this plan ({self.pipeline} pipeline) has no {release} release.")
        return share

    def nominal_sigma(self, release: str, count: int) -> float:
        """sqrt(count / (2 share)): the noise scale of ``count`` marginals of ``release``
        without the KLS tau term, a lower bound of :meth:`sigma` (equal to it but for the
        last bits unless the noise is near 1), for what is planned before the marginals are
        known (the ring, the model caps, the samplers' range)."""
        return math.sqrt(count / (2.0 * self._share(release, count)))

    def sigma(
        self,
        release: str,
        marginals: Sequence[Marginal],
        bins: Mapping[Marginal, BinMaps] | None = None,
    ) -> float:
        """The noise scale of one release (select or measure) of ``marginals``, ``bins``
        those of a :class:`Request`: the smallest at which its ledger entries
        (:meth:`releases`, the count and the region counts aside) cost at most the release's
        share, found by bisection to the last bit, so the release spends its share whatever
        the marginals, their number and cells. A function of the plan and the public request
        only: every role derives the same.

        The cross noise's bound needs sigma >= its ``min_sigma`` (split: components of
        s = sigma / sqrt(2) >= 1/2, :func:`ddg_rho`). Where even that costs less than the
        share, the re-measurement takes it and leaves the rest unspent, and the first
        release raises PrivacyBudgetError (the config's check refuses such an epsilon).
        With coins, whose cost is computed on the exact law, sigma is found by
        :meth:`_coin_sigma` to a relative 1e-6 (not to the last bit: it may spend a hair
        under the share)."""
        share = self._share(release, len(marginals))
        within, cross = self._terms([self.canonical(m) for m in marginals], bins or {})
        count = sum(k for _, k in within) + sum(k for _, _, k, _ in cross)
        nominal = math.sqrt(count / (2.0 * share))
        low = max(nominal, self.cross_noise.min_sigma) if cross else nominal
        if self._cost(low, within, cross) <= share:
            if low > nominal and release == SELECT:
                raise PrivacyBudgetError(
                    "the first release cannot spend its share: its cross noise would be below "
                    f"the scale {self.cross_noise.min_sigma:.3g} its bound needs."
                )
            return low
        if cross and self.cross_noise.coins(low):
            return self._coin_sigma(share, within, cross, low)
        high = 2.0 * low
        while self._cost(high, within, cross) > share:
            low, high = high, 2.0 * high
        while True:  # cost(low) > share >= cost(high)
            mid = 0.5 * (low + high)
            if not low < mid < high:
                return high
            if self._cost(mid, within, cross) > share:
                low = mid
            else:
                high = mid

    def _coin_sigma(
        self, share: float, within: list[tuple[int, int]],
        cross: list[tuple[int, int, int, int]], sigma: float,
    ) -> float:  # fmt: skip
        """:meth:`sigma` with coins: each step takes the cross cost's ratio r to the
        Gaussian's 1 / (2 sigma^2) at the last sigma and solves (W + r X) / (2 sigma^2) =
        share (W within, X cross marginals); then, if that does not fit, the least sigma
        that does within a relative _COIN_RAISE (the cost falls as sigma grows, in steps
        where the coins are whole)."""
        w = sum(k for _, k in within)
        x = sum(k for _, _, k, _ in cross)
        for _ in range(_COIN_STEPS):
            ratio = self.cross_noise.rho(sigma, 1, 1) * 2.0 * sigma * sigma
            sigma = max(sigma, math.sqrt((w + ratio * x) / (2.0 * share)))
        if self._cost(sigma, within, cross) <= share:
            return sigma
        low, step = sigma, _COIN_RAISE
        while self._cost(sigma * (1.0 + step), within, cross) > share:
            low, step = sigma * (1.0 + step), 2.0 * step
        high = sigma * (1.0 + step)
        while high > low * (1.0 + _COIN_RAISE):  # cost(low) > share >= cost(high)
            mid = 0.5 * (low + high)
            if self._cost(mid, within, cross) > share:
                low = mid
            else:
                high = mid
        return high

    def _terms(
        self, marginals: Sequence[Marginal], bins: Mapping[Marginal, BinMaps]
    ) -> tuple[list[tuple[int, int]], list[tuple[int, int, int, int]]]:
        """A release's entries: (party, its within marginals) for each party that has some,
        and (p, q, cross marginals, their cells) for each product that has some; the
        marginals canonical."""
        within = []
        for p in range(len(self.names)):
            own = sum(1 for m in marginals if self.kind(m) == "within" and self.owner[m[0]] == p)
            if own:
                within.append((p, own))
        cross = []
        for p, q in self.pairs():
            blocks = self.cross_blocks(marginals, p, q)
            if blocks:
                cells = sum(self.cells(m, bins.get(m)) for m in blocks)
                cross.append((p, q, len(blocks), cells))
        return within, cross

    @staticmethod
    def _within_rho(sigma: float, count: int) -> float:
        return count / (2.0 * sigma * sigma)

    def _cross_rho(self, sigma: float, count: int, cells: int) -> float:
        return self.cross_noise.rho(sigma, count, cells)

    def _cost(
        self, sigma: float, within: list[tuple[int, int]], cross: list[tuple[int, int, int, int]]
    ) -> float:
        """The ledger total of a release's entries (:meth:`_terms`) at ``sigma``."""
        return math.fsum(
            [self._within_rho(sigma, k) for _, k in within]
            + [self._cross_rho(sigma, k, c) for _, _, k, c in cross]
        )

    @property
    def count_epsilon(self) -> float:
        """Epsilon of the discrete Laplace noisy record count."""
        return math.sqrt(2.0 * self.rho_count)

    def releases(
        self,
        release: str,
        marginals: Sequence[Marginal],
        bins: Mapping[Marginal, BinMaps] | None = None,
    ) -> list[Release]:
        """The ledger entries of one release of ``marginals`` (and of the count with the
        first release): one entry per party for its within marginals, one per product;
        ``bins`` (of a :class:`Request`) lower the cell counts of the binned ones."""
        marginals = [self.canonical(m) for m in marginals]
        bins = bins or {}
        sigma = self.sigma(release, marginals, bins)
        out = []
        if release == SELECT:
            out += self.sets.releases()
        if release == SELECT and self.rho_count > 0:
            out.append(
                Release(
                    COUNT_MECHANISM,
                    "noisy record count",
                    pure_to_rho(self.count_epsilon),
                    1,
                    self.count_party,
                    {"epsilon": self.count_epsilon},
                )
            )
        within, cross = self._terms(marginals, bins)
        for p, k in within:
            out.append(
                Release(
                    WITHIN_MECHANISM,
                    f"{release}: {k} own marginals",
                    self._within_rho(sigma, k),
                    k,
                    self.names[p],
                    {"sensitivity": 1.0, "sigma": sigma},
                )
            )
        for p, q, k, cells in cross:
            what, pair = f"{release}: {k} cross marginals", self.pair_name(p, q)
            out.append(self.cross_noise.entry(what, pair, sigma, k, cells))
        return out

    def coin_shapes(
        self,
        release: str,
        marginals: Sequence[Marginal],
        bins: Mapping[Marginal, BinMaps] | None = None,
    ) -> dict[tuple[int, int], tuple[int, int]]:
        """With coins, each pair's (cells, coins a cell) in one release of ``marginals``
        (the pairs that have cross blocks; none with split noise): the shape of the pair's
        coin words each way and of its dealt coin product."""
        if not self.cross_noise.weight:  # split noise: no coins, and no sigma to find
            return {}
        marginals, bins = [self.canonical(m) for m in marginals], bins or {}
        _, cross = self._terms(marginals, bins)
        coins = self.cross_noise.coins(self.sigma(release, marginals, bins)) if cross else 0
        return {(p, q): (cells, coins) for p, q, _, cells in cross} if coins else {}

    @cached_property
    def first_coins(self) -> dict[tuple[int, int], tuple[int, int]]:
        """:meth:`coin_shapes` of the first release (a function of the plan alone)."""
        return self.coin_shapes(SELECT, self.first_release())

    def viewers(self) -> tuple[str, ...]:
        """Who sees messages: the server and each party, each on its own; with a product no
        role deals (:attr:`coalitions`), also the server with each party ("server+P").
        Where the server deals every mask there is no entry for a coalition: the server with
        any party that receives a masked table recovers that table exactly (no guarantee at
        all)."""
        pairs = tuple(f"{SERVER}+{p}" for p in self.names) if self.coalitions else ()
        return (SERVER, *self.names, *pairs)

    def viewer_rho(self, releases: Sequence[Release]) -> dict[str, float]:
        """The zCDP rho each of :meth:`viewers` faces over ``releases`` (the plan's ledger
        entries). A viewer subtracts the noise components it knows: its own (a coalition:
        its members'). So a cross release of P and Q leaves two of its three components to
        the server, P and Q, all three to any other party, one to the server with P (with
        coins, the coins too: charged as for two). Count and within releases are charged in
        full to everyone (their one noise is the owner's)."""
        out = {}
        for viewer in self.viewers():
            total = []
            for r in releases:
                if r.mechanism != self.cross_noise.mechanism:
                    total.append(r.rho)
                    continue
                owners = r.party.split("+") if r.party else []
                known = len(set(viewer.split("+")) & {SERVER, *owners})
                total.append(self.cross_noise.viewer_rho(r, known))
            out[viewer] = math.fsum(total)
        return out

    def check_request(
        self, marginals: Sequence[Marginal], bins: Mapping[Marginal, BinMaps] | None = None
    ) -> Request:
        """Validate the server's re-measurement request: measurable, distinct, non-empty
        marginals, within :attr:`max_request` and every party's round-2 cap; each bin map
        (of a marginal listed in canonical order) sends every value of its attribute to one
        of 1..size-1 bins, each bin used. The request returned is canonical (a
        :class:`Request` sorts its marginals), so the same statistics in another order are
        the same request (one digest, one layout, the same bytes)."""
        if not marginals:
            raise MessageError("the request lists no marginals to measure.")
        d = len(self.sizes)
        out = []
        for m in marginals:
            if not m or any(not (isinstance(a, int) and 0 <= a < d) for a in m):
                raise MessageError(f"the request holds an invalid marginal {m!r}.")
            if len(set(m)) != len(m):
                raise MessageError(f"the request holds a marginal with repeats {m!r}.")
            out.append(self.canonical(m))
        if len(set(out)) != len(out):
            raise MessageError("the request lists a marginal twice.")
        if self.max_request is not None and len(out) > self.max_request:
            raise MessageError(
                f"the request lists {len(out):,} marginals; this run's {self.ring_bits}-bit "
                f"ring holds the noise of at most {self.max_request:,}."
            )
        self.layout(out)  # its round-2 groups fit every party's cap
        checked = {}
        for m, maps in (bins or {}).items():
            m = tuple(m)
            if m not in out:
                raise MessageError(
                    f"the request bins {m!r}, which it does not list in canonical order."
                )
            checked[m] = self._check_maps(m, maps)
        return Request(tuple(out), checked)

    def _check_maps(self, m: Marginal, maps: Sequence) -> BinMaps:
        if not isinstance(maps, Sequence) or len(maps) != len(m):
            raise MessageError(f"the bins of {m} must give one map (or null) per attribute.")
        out: list[tuple[int, ...] | None] = []
        for a, b in zip(m, maps, strict=True):
            if b is None:
                out.append(None)
                continue
            b = tuple(b) if isinstance(b, Sequence) else ()
            ok = len(b) == self.sizes[a] and all(
                isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in b
            )
            if not ok or set(b) != set(range(max(b) + 1)) or max(b) + 1 >= self.sizes[a]:
                raise MessageError(
                    f"the bin map of attribute {a} in {m} must send each of its "
                    f"{self.sizes[a]} values to a bin 0..k-1 (k < {self.sizes[a]}, each used)."
                )
            out.append(b)
        if all(b is None for b in out):
            raise MessageError(f"the bins of {m} map no attribute; list it without bins.")
        return tuple(out)


@dataclass(frozen=True)
class Layout:
    """The share layout of a release. For a pair p < q the share matrix is
    [X_p | G_pq]^T [X_q | G_qp]: p's single attributes (round 1), then ``extra[p, q]``,
    the attribute groups of p that the release's cross marginals with q need (round 2, in
    order of first use), against the same for q. A pair with no groups keeps its round-1
    k_p x k_q matrix. Public: a function of the plan and the request."""

    plan: SecurePlan
    extra: Mapping[tuple[int, int], tuple[Marginal, ...]] = field(default_factory=dict)

    def groups(self, p: int, q: int) -> tuple[Marginal, ...]:
        """Party p's round-2 groups toward q."""
        return self.extra.get((p, q), ())

    def width(self, p: int, q: int) -> int:
        """Party p's round-2 columns toward q."""
        return sum(self.plan.cells(g) for g in self.groups(p, q))

    def grows(self, p: int, q: int) -> bool:
        """True when the pair p < q has round-2 groups on either side."""
        return bool(self.groups(p, q) or self.groups(q, p))

    def shape(self, p: int, q: int) -> tuple[int, int]:
        """The pair p < q's share matrix shape."""
        widths = self.plan.widths
        return widths[p] + self.width(p, q), widths[q] + self.width(q, p)

    def offset(self, p: int, q: int, part: Marginal) -> int:
        """The first column of ``part`` (a single attribute of p, or one of its groups
        toward q) in p's side of the pair's matrix."""
        plan = self.plan
        if len(part) == 1:
            return plan.offsets[p][plan.attrs[p].index(part[0])]
        start = plan.widths[p]
        for g in self.groups(p, q):
            if g == part:
                return start
            start += plan.cells(g)
        raise MessageError(f"the layout has no group {part} of party {plan.names[p]!r}.")

    def block(self, m: Marginal) -> tuple[int, int, int, int]:
        """Rows and columns (r0, r1, c0, c1) of the cross marginal ``m`` in its pair's share
        matrix; its cells in C order over its canonical attributes."""
        plan = self.plan
        p, q = plan.pair_of(m)
        g, h = plan.split(m)
        r0, c0 = self.offset(p, q, g), self.offset(q, p, h)
        return r0, r0 + plan.cells(g), c0, c0 + plan.cells(h)
