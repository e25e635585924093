"""A party's release: its noisy own marginals, padded noisy shares, count, fine histograms
and quantile cuts, in the bounded message container."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.container import Target, read_container, source_name, write_container
from vertimrf.errors import MessageError
from vertimrf.protocol.secure.plan import SecurePlan

RELEASE_KIND = "vertimrf-secure-release"
MAX_WITHIN_CELLS = 1 << 24  # a within-party marginal larger than this is never measured


@dataclass(frozen=True)
class SecureRelease:
    """One party's release: noisy own marginals (int64), padded noisy shares (uint64, one
    flat vector per product in the plan's block order), the noisy count, if any, the noisy
    fine histograms of its numeric columns by name (int64; the re-measurement's, when the
    plan has them), the DP quantile cuts of its columns cut at quantiles (the first
    release's) and ``seeded``: whether the party's noise came from a seed (then no DP
    guarantee holds)."""

    party: str
    release: str
    config_hash: str
    digest: str
    within: dict[tuple[int, ...], np.ndarray]
    cross: dict[str, np.ndarray]
    count: int | None = None
    commit_set: str = ""  # hex digest of the commitments the party's deal was made for
    seeded: bool = field(kw_only=True)
    fine: dict[str, np.ndarray] = field(default_factory=dict, kw_only=True)
    cuts: dict[str, list[float]] = field(default_factory=dict, kw_only=True)

    def fingerprint(self) -> str:
        """SHA-256 of everything the release holds (what the server's keyed noise of a step
        depends on: the same releases give the same noise)."""
        h = hashlib.sha256()
        head = [
            self.party, self.release, self.config_hash, self.digest, self.count,
            self.commit_set, self.seeded, *([self.cuts] if self.cuts else []),
        ]  # fmt: skip
        h.update(json.dumps(head).encode())
        for m in sorted(self.within):
            h.update(json.dumps(list(m)).encode())
            h.update(np.ascontiguousarray(self.within[m], "<i8").tobytes())
        for k in sorted(self.cross):
            h.update(k.encode())
            h.update(np.ascontiguousarray(self.cross[k], "<u8").tobytes())
        for k in sorted(self.fine):
            h.update(json.dumps(["fine", k]).encode())
            h.update(np.ascontiguousarray(self.fine[k], "<i8").tobytes())
        return h.hexdigest()

    def save(self, path: Target) -> None:
        """Write the release (public metadata, DP values and masked values) atomically, or
        into a binary file object."""
        marginals = list(self.within)
        meta: dict[str, Any] = {
            "party": self.party,
            "release": self.release,
            "config_hash": self.config_hash,
            "digest": self.digest,
            "within": [list(m) for m in marginals],
            "count": self.count,
            "commit_set": self.commit_set,
            "seeded": self.seeded,
        }
        fine = list(self.fine)
        if fine:
            meta["fine"] = fine
        if self.cuts:
            meta["cuts"] = {k: [float(v) for v in c] for k, c in self.cuts.items()}
        arrays = {f"w{i}": np.asarray(self.within[m], np.int64) for i, m in enumerate(marginals)}
        arrays.update({f"x/{k}": np.asarray(v, np.uint64) for k, v in self.cross.items()})
        arrays.update({f"f{i}": np.asarray(self.fine[k], np.int64) for i, k in enumerate(fine)})
        write_container(path, RELEASE_KIND, meta, arrays)

    @classmethod
    def load(cls, path: Target, plan: SecurePlan) -> SecureRelease:
        """Read a release with every array bounded by the plan's shapes (MessageError on a
        malformed, oversized or foreign file)."""
        own = max(math.prod(plan.sizes[a] for a in attrs) for attrs in plan.attrs)
        within_bytes = 8 * min(own, MAX_WITHIN_CELLS)
        pairs = {plan.pair_name(p, q): 8 * plan.max_cells(p, q) for p, q in plan.pairs()}

        fine_bytes = 8 * max((cells for _, _, cells, _ in plan.fine), default=0)

        def bound(name: str) -> int | None:
            if name.startswith("x/"):
                return pairs.get(name[2:])
            if name.startswith("f"):
                return fine_bytes or None
            return within_bytes if name.startswith("w") else None

        meta, arrays = read_container(path, RELEASE_KIND, array_bytes=bound)
        try:
            within = {
                tuple(int(a) for a in m): arrays[f"w{i}"].astype(np.int64)
                for i, m in enumerate(meta["within"])
            }
            cross = {k[2:]: v.astype(np.uint64) for k, v in arrays.items() if k.startswith("x/")}
            fine = {
                str(k): arrays[f"f{i}"].astype(np.int64) for i, k in enumerate(meta.get("fine", []))
            }
            count = meta["count"]
            if count is not None and not isinstance(count, int):
                raise TypeError("count")
            if not isinstance(meta.get("seeded"), bool):
                raise MessageError(
                    f"{source_name(path)}: the secure release does not say whether its noise "
                    "was seeded (a 'seeded' of true or false); re-create it with this vertimrf."
                )
            return cls(
                str(meta["party"]),
                str(meta["release"]),
                str(meta["config_hash"]),
                str(meta["digest"]),
                within,
                cross,
                count,
                str(meta["commit_set"]),
                seeded=meta["seeded"],
                fine=fine,
                cuts={str(k): [float(v) for v in c] for k, c in meta.get("cuts", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = source_name(path)
            raise MessageError(f"{where}: malformed secure release ({exc!r}).") from None
