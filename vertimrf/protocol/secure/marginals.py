"""The marginals of the secure method: a marginal's attributes, its bin maps, and the
server's re-measurement request (public: post-processing of the first release)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

Marginal = tuple[int, ...]
BinMaps = tuple[tuple[int, ...] | None, ...]  # per attribute of a marginal: value -> bin


@dataclass(frozen=True)
class Request:
    """The server's re-measurement request: the marginals (canonical) and, for some of them,
    a bin map per attribute (``None``: the attribute at its full domain). Public: a function
    of the first release (post-processing), sent to every party."""

    marginals: tuple[Marginal, ...]
    bins: Mapping[Marginal, BinMaps] = field(default_factory=dict)

    def __post_init__(self) -> None:  # canonical: the same statistics, one request
        object.__setattr__(self, "marginals", tuple(sorted(self.marginals)))

    def maps(self, m: Marginal) -> tuple[np.ndarray | None, ...]:
        """``m``'s bin maps as arrays (all ``None`` when it is measured at full domain)."""
        maps = self.bins.get(m, (None,) * len(m))
        return tuple(None if b is None else np.asarray(b, np.int64) for b in maps)

    def digest(self) -> str:
        """SHA-256 of the marginals and bin maps (canonical JSON)."""
        data = {
            "marginals": [[int(a) for a in m] for m in self.marginals],
            "bins": sorted(
                [[int(a) for a in m], [None if b is None else [int(x) for x in b] for b in maps]]
                for m, maps in self.bins.items()
            ),
        }
        return hashlib.sha256(json.dumps(data, separators=(",", ":")).encode()).hexdigest()
