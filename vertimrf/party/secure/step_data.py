"""What a party's secure steps have made so far, typed: the round-1 deal and the record-set
digest it binds, the shares, the round-2 deal with its request and layout, the steps done,
and the digests of every input its keyed streams are bound to. :meth:`StepData.saved` is
the part a later process reads back (the party's state file)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.protocol.secure.deal import Deal, GroupDeal
from vertimrf.protocol.secure.plan import Layout


@dataclass
class StepData:
    """A party's step data (module doc); None or empty until the step that makes it."""

    deal: Deal | None = None
    deal_hash: str = ""
    digest: bytes = b""  # the record-set digest bound to the admit
    shares: dict[str, np.ndarray] | None = None
    done: set[str] = field(default_factory=set)
    inputs: dict[str, str] = field(default_factory=dict)
    group_deal: GroupDeal | None = None
    group_deal_hash: str = ""
    layout: Layout | None = None
    request: str = ""  # the round-2 request's digest

    def opened(self) -> Deal:
        """The round-1 deal (ConfigError before it is opened)."""
        if self.deal is None:
            raise ConfigError("open the deal (features(deal) or open_deal(deal)) first.")
        return self.deal

    def round_two(self) -> tuple[GroupDeal, Layout]:
        """The round-2 deal and its layout (ConfigError before they are opened)."""
        if self.group_deal is None or self.layout is None:
            raise ConfigError("open the round-2 deal (groups or open_group_deal) first.")
        return self.group_deal, self.layout

    def saved(self, meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """``meta`` with what a later process needs (the deal's hash, the record-set digest,
        the steps done, the inputs' digests), and the shares as arrays (ConfigError without
        them)."""
        if self.shares is None or not self.deal_hash:
            raise ConfigError("save_state needs the shares: run release(blobs) first.")
        meta = {
            **meta,
            "deal": self.deal_hash,
            "digest": self.digest.hex(),
            "done": sorted(self.done),
            "inputs": self.inputs,
        }
        return meta, {f"s/{key}": share for key, share in self.shares.items()}
