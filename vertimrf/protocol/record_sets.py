"""The record-set variation on the protocol's side: equal or partial, as two
small strategies; design notes in docs/design/protocol.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from vertimrf.errors import ConfigError
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.regions import REGION_DELTA_SHARE, RegionNoise

T = TypeVar("T")
POPULATIONS = ("intersection", "union")
REGION_SHARE = 0.02  # of the zCDP budget, for the region counts of partial record sets
REGION_MECHANISM = "region_discrete_gaussian"  # dummy tokens seen by the server, its own noise
UNION_CELLS = 4  # the union model's cell cap over the selected model's (partial record sets)


class EqualSets:
    """Every party holds the same records (checked): rows in buckets, nothing released
    about the record sets. A config reads the class's methods; a plan holds an instance."""

    name = "equal"
    noise: RegionNoise | None = None
    union_words = " (every column alone)"  # the smallest model, in the plan's refusal

    @classmethod
    def check(cls, population: str, region_share: float, expected_shared: float | None) -> None:
        """ConfigError unless the partial sets' settings are left at their defaults."""
        if population != "intersection" or region_share != REGION_SHARE:
            raise ConfigError(
                "population and region_share are settings of record_sets='partial'; with "
                "equal record sets every record is every party's."
            )
        if expected_shared is not None:
            raise ConfigError(
                "expected_shared is a setting of record_sets='partial' (equal sets share every "
                "record); drop it or use partial record sets."
            )

    @classmethod
    def fields(cls, population: str, region_share: float) -> dict[str, Any]:
        """What the config file and its hash hold of the record sets: nothing, so an
        equal-set config keeps its bytes."""
        return {}

    @classmethod
    def reverted(cls, default: str) -> dict[str, Any]:
        """The settings that return to equal sets when the method changes: none."""
        return {}

    @classmethod
    def refuse(cls, label: str, why: str) -> None:
        """Nothing: every method runs equal record sets."""

    @classmethod
    def schedule(cls, label: str) -> str:
        """The select pipeline's schedule name."""
        return label

    @classmethod
    def model_cap(cls, cap: float) -> float:
        """The ceiling on the model's cells: the options' cap."""
        return cap

    @classmethod
    def smallest_model(cls, sizes: Sequence[int], held: Sequence[Sequence[int]]) -> int:
        """The cells of the smallest model the server falls back to: every attribute alone."""
        return int(sum(sizes))

    @classmethod
    def split(
        cls, epsilon: float, delta: float, parties: int, region_share: float
    ) -> tuple[float, EqualSets]:
        """The zCDP budget of the releases, and the plan's record sets (no region counts)."""
        return epsilon_to_rho(epsilon, delta), cls()

    def choose(self, equal: Callable[[], T], partial: Callable[[RegionNoise], T]) -> T:
        """What ``equal()`` makes: the one place a role picks its own home of the
        variation (its records layout, its record sets)."""
        return equal()

    def region_noise(self) -> RegionNoise:
        """ConfigError: equal record sets have no region counts."""
        raise ConfigError("equal record sets have no region counts nor tokens.")

    def rows(self, buckets: int, capacity: int, max_rows: int) -> tuple[int, int]:
        """The rows' buckets and each bucket's capacity: the options'."""
        return buckets, capacity

    def max_tokens(self, max_rows: int) -> int:
        """The most tokens one party may have: none (no tokens)."""
        return 0

    def releases(self) -> list[Release]:
        """The releases about the record sets: none."""
        return []

    def lone_attributes(self, attrs: Sequence[Sequence[int]]) -> list[int]:
        """Attributes whose cross marginals the union fit cannot read: none (every cross
        pair counts every record)."""
        return []

    def token_steps(self, nbytes: int) -> dict[str, int]:
        """A party's extra steps and their memory: none."""
        return {}

    def check_rows(self, max_rows: int) -> None:
        """Nothing: every row holds a record."""

    def plan_lines(self) -> list[str]:
        """The plan's lines about the record sets: none."""
        return []


class PartialSets:
    """Each party holds its own records: rows at the server's slots, dummy tokens and the
    noisy region counts (``noise``). A config reads the class's methods; a plan holds an
    instance, with the noise its budget split gave (:meth:`split`)."""

    name = "partial"
    union_words = (
        " over the union of the parties' records (every column alone, with one more value, "
        "absent, and each party's columns linked)"
    )

    def __init__(self, noise: RegionNoise) -> None:
        self.noise: RegionNoise = noise

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PartialSets) and other.noise == self.noise

    def __hash__(self) -> int:
        return hash((self.name, self.noise))

    def __repr__(self) -> str:
        return f"PartialSets({self.noise!r})"

    @classmethod
    def check(cls, population: str, region_share: float, expected_shared: float | None) -> None:
        """Nothing beyond the values' own checks."""

    @classmethod
    def fields(cls, population: str, region_share: float) -> dict[str, Any]:
        """The record sets' settings, written to the config file and its hash."""
        return {"record_sets": cls.name, "population": population, "region_share": region_share}

    @classmethod
    def reverted(cls, default: str) -> dict[str, Any]:
        """Back to equal sets (and the partial settings' defaults) when the new method's
        default is equal sets."""
        if default == cls.name:
            return {}
        return dict(
            record_sets="equal", population="intersection", region_share=REGION_SHARE,
            expected_shared=None,
        )  # fmt: skip

    @classmethod
    def refuse(cls, label: str, why: str) -> None:
        """ConfigError (one line) when the method needs equal record sets (``why``)."""
        if why:
            raise ConfigError(
                f"method {label!r} needs every party to hold the same records ({why}): use "
                "record_sets='equal'."
            )

    @classmethod
    def schedule(cls, label: str) -> str:
        """The select pipeline's schedule name, with the tokens' steps."""
        return label + "/partial"

    @classmethod
    def model_cap(cls, cap: float) -> float:
        """The union model's ceiling, UNION_CELLS times the options' cap (each attribute has
        one more value, "absent", and a party's attributes are linked:
        :mod:`vertimrf.synth.union`)."""
        return cap * UNION_CELLS

    @classmethod
    def smallest_model(cls, sizes: Sequence[int], held: Sequence[Sequence[int]]) -> int:
        """The model over the union (:mod:`vertimrf.synth.union.structure`): each attribute
        has one more value, "absent"; each party's attributes (``held``: their sizes, by
        party) are joined by its cheapest spanning tree of pairs (a star on its smallest
        attribute, a pair costing the product of its sizes), and one clique joins each
        party's smallest attribute. That graph is chordal (trees hung on one clique), so
        these are its cliques and fill-in adds none."""
        links, joined = 0, 1
        for own in held:
            values = sorted(int(u) + 1 for u in own)
            links += sum(values[0] * u for u in values[1:])
            joined *= values[0]
        return links + joined

    @classmethod
    def split(
        cls, epsilon: float, delta: float, parties: int, region_share: float
    ) -> tuple[float, PartialSets]:
        """The zCDP budget of the releases after the region counts' share, and the plan's
        record sets with the region counts' noise: each of its two failure probabilities
        takes REGION_DELTA_SHARE of ``delta``, the conversion the rest."""
        rho = epsilon_to_rho(epsilon, delta * (1 - 2 * REGION_DELTA_SHARE))
        fail = delta * REGION_DELTA_SHARE
        noise = RegionNoise(parties, rho * region_share, fail, fail)
        return rho - noise.rho, PartialSets(noise)

    def choose(self, equal: Callable[[], T], partial: Callable[[RegionNoise], T]) -> T:
        """What ``partial(noise)`` makes (see :meth:`EqualSets.choose`)."""
        return partial(self.noise)

    def region_noise(self) -> RegionNoise:
        """The region counts' noise."""
        return self.noise

    def rows(self, buckets: int, capacity: int, max_rows: int) -> tuple[int, int]:
        """One bucket of max_rows slots."""
        return 1, max_rows

    def max_tokens(self, max_rows: int) -> int:
        """The most tokens (and so slots) one party may have: max_rows records plus every
        dummy."""
        return max_rows + self.noise.dummy_rows

    def releases(self) -> list[Release]:
        """The noisy region counts, with the first release."""
        r = self.noise
        params = {
            "sigma": r.sigma,
            "offset": r.offset,
            "failure_delta": r.delta_clip + r.delta_stop,
        }
        what = f"noisy counts of the {r.regions} regions of the record sets"
        return [Release(REGION_MECHANISM, what, r.rho, r.regions, None, params)]

    def lone_attributes(self, attrs: Sequence[Sequence[int]]) -> list[int]:
        """Each attribute that is its party's only one: no own pair counts it over the
        party's records, and the union fit reads a cross marginal only where an own table
        holds each party's part."""
        return [own[0] for own in attrs if len(own) == 1]

    def token_steps(self, nbytes: int) -> dict[str, int]:
        """A party's tokens step and its memory (``nbytes``)."""
        return {"tokens": nbytes}

    def check_rows(self, max_rows: int) -> None:
        """ConfigError when max_rows does not exceed the rows the server's stop rule sets
        aside (:attr:`RegionNoise.reserve`): the run would stop after the region counts, a
        charged release, unless their noise is below minus the records' count."""
        noise = self.noise
        if max_rows > noise.reserve:
            return
        raise ConfigError(
            f"max_rows {max_rows:,} leaves no room for any record: with partial record sets the "
            f"run needs the records of the union plus {noise.reserve:,} rows ({noise.regions} "
            f"regions x (an offset of {noise.offset:,} dummy rows + a margin of "
            f"{noise.margin:,})), so it would stop after the parties spent budget on the region "
            f"counts; give `vertimrf config --max-rows` at least {noise.reserve:,} plus the "
            "records of the union, or --record-sets equal if every party holds the same "
            "records, or a larger --epsilon or --region-share (fewer dummies)."
        )

    def plan_lines(self) -> list[str]:
        """The plan's line about the region counts."""
        noise = self.noise
        return [
            f"record sets: partial; the server sees the count of each of the "
            f"{noise.regions} regions (the records held by exactly one set of parties) plus "
            f"N_Z(0, {noise.sigma:.4g}^2) noise from the parties' dummy tokens, and "
            f"publishes them with its own noise of the same scale (rho {noise.rho:.4g}); "
            "max_rows must hold every party's records at once (their union) plus up to "
            f"{noise.dummy_rows:,} dummy rows and a margin of "
            f"{noise.regions * noise.margin:,}"
        ]


RecordSets = EqualSets | PartialSets
# The strategies by the config's ``record_sets``.
RECORD_SETS: dict[str, type[RecordSets]] = {
    "equal": EqualSets,
    "partial": PartialSets,
}
