"""Which records the parties hold: the record-set variation's one home on the
server's side; design notes in docs/design/server.md."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from vertimrf.crypto.kdf import NONCE_BYTES
from vertimrf.errors import ConfigError, MessageError
from vertimrf.io import ScratchFolder
from vertimrf.protocol.regions import RegionNoise, members, population_rows, regions_of
from vertimrf.protocol.secure.marginals import Marginal
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.slot_map import write_slot_map
from vertimrf.server.slots import Slots, TokenSource, assign_slots

__all__ = ["UNION_Z", "EqualSets", "PartialSets", "RecordSets", "SlotMapKey", "record_sets"]

# The published counts of the regions that lack a party must exceed this many standard
# deviations of their summed noise for the model to cover the union (see models_union).
UNION_Z = 3.0

#: What a party's slot map is dealt with: its key, its plaintext's digest and its slots.
SlotMapKey = tuple[bytes, bytes, int]


class EqualSets:
    """Every party holds the same records."""

    rho = 0.0  # the share of the budget the region counts take
    absent = False  # whether a synthetic row may leave a party's columns empty
    released = None  # no region counts are published
    ready = True  # select and round 2 need nothing of the deal
    models_union = False  # the model is over the records every party holds

    def check_admit(self) -> None:
        """ConfigError: equal record sets have no admit step."""
        raise ConfigError("admit is a step of method 'secure' with partial record sets.")

    def deal_label(self) -> tuple[str, ...]:
        """Nothing beyond the commitments."""
        return ()

    def assign(
        self,
        tokens: Mapping[str, TokenSource | np.ndarray] | None,
        secret: bytes,
        context: bytes,
        expected_shared: float | None,
    ) -> None:
        """MessageError for any tokens: every party finds its rows on its own."""
        if tokens is not None:
            raise MessageError(
                "the server deals on every party's tokens exactly when the record sets are partial."
            )

    def write_slot_maps(
        self, derived: Callable[..., bytes], context: bytes
    ) -> dict[str, SlotMapKey]:
        """No slot maps."""
        return {}

    def slot_maps(self) -> dict[str, Path]:
        """No slot maps."""
        return {}

    def assignment(self) -> bytes:
        """No assignment."""
        return b""

    def kept(self) -> dict[str, object] | None:
        """Nothing to keep."""
        return None

    def restore(self, kept: object) -> None:
        """MessageError: equal record sets keep nothing of the deal."""
        raise MessageError("the kept region counts do not name this run's regions.")

    def regions(self) -> tuple[dict[int, int], float]:
        """MessageError: equal record sets publish no region counts."""
        raise MessageError("a run with equal record sets has no region counts.")

    def rows(self, n_hat: float, population: str) -> float:
        """``n_hat``: every record is in every population."""
        return n_hat

    def pair_populations(self) -> dict[Marginal, float] | None:
        """None: every table is over the same records."""
        return None

    def region_names(self) -> dict[str, int]:
        """No regions."""
        return {}

    def region_sigma(self) -> float | None:
        """No region counts."""
        return None


class PartialSets:
    """The parties hold partly different records (module doc)."""

    def __init__(self, plan: SecurePlan, regions: RegionNoise) -> None:
        self._plan, self._noise = plan, regions
        self.rho, self.absent = regions.rho, True
        self._slots: Slots | None = None  # the slot assignment
        self._folder: ScratchFolder | None = None  # and its slot maps
        self._released: dict[int, int] | None = None  # and the region counts it published
        self._digest: bytes | None = None  # and its digest, which binds the deal's masks

    @property
    def released(self) -> dict[int, int] | None:
        """After the deal: the published noisy region counts, by region bit mask
        (:mod:`vertimrf.protocol.regions`); None before."""
        return None if self._released is None else dict(self._released)

    @property
    def ready(self) -> bool:
        """Whether the region counts are known (dealt, or restored)."""
        return self._released is not None

    @property
    def models_union(self) -> bool:
        """Whether the model covers the union of the records with an "absent" value per
        attribute. Not when the published counts of the regions that lack some party sum
        to within UNION_Z standard deviations of their noise above 0 (no evidence that any
        party lacks records: then every release is over the same records, and the model of
        equal sets fits them, without the absent cells' cost). A post-processing of the
        published counts."""
        if self._released is None:
            return False
        everyone = (1 << self._noise.m) - 1
        partial = sum(r for t, r in self._released.items() if t != everyone)
        sd = math.sqrt(2.0 * (self._noise.regions - 1)) * self._noise.sigma
        return partial > UNION_Z * sd

    def check_admit(self) -> None:
        """Nothing: partial record sets admit."""

    def deal_label(self) -> tuple[str, ...]:
        """The slot assignment's digest (MessageError before the assignment)."""
        if self._digest is None:
            raise MessageError(
                "the server deals with partial record sets only on its slot assignment: "
                "deal on every party's tokens, or restore the kept deal state first."
            )
        return (self._digest.hex(),)

    def assign(
        self,
        tokens: Mapping[str, TokenSource | np.ndarray] | None,
        secret: bytes,
        context: bytes,
        expected_shared: float | None,
    ) -> None:
        """Each distinct token of the parties' sorted ``tokens`` gets a slot, and the region
        counts are published (MessageError without tokens)."""
        if tokens is None:
            raise MessageError(
                "the server deals on every party's tokens exactly when the record sets are partial."
            )
        plan = self._plan
        lists = {i: tokens[name] for i, name in enumerate(plan.names)}
        self._slots = assign_slots(
            lists, self._noise, plan.max_rows, secret, context, expected_shared=expected_shared
        )
        self._released = dict(self._slots.released)
        self._digest = self._slots.digest

    def write_slot_maps(
        self, derived: Callable[..., bytes], context: bytes
    ) -> dict[str, SlotMapKey]:
        """Each party's slot map written by blocks to a file of a fresh temporary folder
        (:meth:`slot_maps`), under a key of the dealer's; each party's key, plaintext digest
        and count of slots (for its deal)."""
        slots, plan = self._slots, self._plan
        self._folder = None
        if slots is None:
            return {}
        self._folder = ScratchFolder(prefix="vertimrf-slot-maps-")
        paths = self.slot_maps()
        out = {}
        for p, name in enumerate(plan.names):
            key, count = derived("slot-map", name), slots.sources[p].count
            nonce = derived("slot-map-nonce", name)[:NONCE_BYTES]
            with open(paths[name], "wb") as fh:
                digest = write_slot_map(
                    fh, key, slots.party(p), count, plan.max_tokens, context, name,
                    slots.digest, nonce,
                )  # fmt: skip
            out[name] = (key, digest, count)
        return out

    def slot_maps(self) -> dict[str, Path]:
        """After the deal: each party's slot map, a file (kept while this object is)."""
        if self._folder is None:
            return {}
        where = Path(self._folder.name)
        return {name: where / f"{name}.deal-slots" for name in self._plan.names}

    def assignment(self) -> bytes:
        """The slot assignment's digest (empty before the assignment)."""
        return b"" if self._slots is None else self._slots.digest

    def kept(self) -> dict[str, object] | None:
        """After the deal: the published region counts and the slot assignment's digest
        (which binds every deal's masks: the round-2 deal's too); None before."""
        if self._released is None or self._digest is None:
            return None
        counts = {str(t): r for t, r in self._released.items()}
        return {"counts": counts, "slots": self._digest.hex()}

    def restore(self, kept: object) -> None:
        """What :meth:`kept` gave after this run's deal (kept by the server's state between
        processes); MessageError (one line) unless it holds the slot assignment's digest and
        a count of every region."""
        if not isinstance(kept, Mapping) or "slots" not in kept:
            raise MessageError(
                "the server's kept deal state lacks the slot assignment's digest (kept by an "
                "older vertimrf): deal again into a new state folder, then select."
            )
        try:
            counts = {int(t): int(r) for t, r in kept["counts"].items()}
            digest = bytes.fromhex(kept["slots"])
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MessageError("the server's kept deal state is malformed.") from None
        if sorted(counts) != list(regions_of(self._noise.m)) or len(digest) != 32:
            raise MessageError("the kept region counts do not name this run's regions.")
        self._released, self._digest = counts, digest

    def regions(self) -> tuple[dict[int, int], float]:
        """The published region counts and their noise scale (MessageError before the
        deal)."""
        if self._released is None:
            raise MessageError("the server fits partial record sets on its deal's region counts.")
        return dict(self._released), self._noise.sigma

    def rows(self, n_hat: float, population: str) -> float:
        """The population's DP row count from the published region counts (``n_hat``
        before the deal)."""
        if self._released is None:
            return n_hat
        return float(population_rows(self._released, population))

    def pair_populations(self) -> dict[Marginal, float] | None:
        """With a model over the union: each pair of attributes' population (every pair,
        whatever the first release holds), the records both its owners hold, summed from
        the published region counts (a post-processing); None otherwise."""
        if not self.models_union or self._released is None:
            return None
        owner, released = self._plan.owner, self._released
        return {
            (i, j): float(
                sum(r for t, r in released.items() if t >> owner[i] & 1 and t >> owner[j] & 1)
            )
            for i, j in self._plan.all_pairs()
        }

    def region_names(self) -> dict[str, int]:
        """The published region counts by the names of their parties ("A+B")."""
        released, names = self._released or {}, self._plan.names
        return {"+".join(members(t, names)): r for t, r in sorted(released.items())}

    def region_sigma(self) -> float | None:
        """The region counts' noise scale."""
        return self._noise.sigma


# The server's side of the record-set variation (module doc): either strategy, one interface.
RecordSets = EqualSets | PartialSets


def record_sets(plan: SecurePlan) -> RecordSets:
    """The plan's record sets."""

    def partial(noise: RegionNoise) -> RecordSets:
        return PartialSets(plan, noise)

    return plan.sets.choose(EqualSets, partial)
