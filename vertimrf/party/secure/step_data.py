"""What a party's secure steps have made so far, typed; saved as a private state
for ``measure``; design notes in docs/design/party.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.container import Target, read_container, source_name, write_container
from vertimrf.errors import RUN_CHANGED, ConfigError, MessageError
from vertimrf.party.records.frame import sha256_parts
from vertimrf.party.secure.session import PartySession
from vertimrf.protocol.secure.deal import Deal, GroupDeal
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT, Layout

STATE_KIND = "vertimrf-secure-party-state"


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
    group_request: Request | None = None  # the round-2 request, checked
    paillier: dict[tuple[str, str], Any] = field(default_factory=dict)  # keys made once

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

    def save(self, target: Target, session: PartySession, binding: str = "") -> None:
        """Write the private state (module doc) of ``session``'s party to ``target``: the
        run, the party, its data, the caller's ``binding``, the deal's hash, the record-set
        digest, the steps done and the inputs' digests, and the shares as arrays
        (ConfigError without them). No pickle."""
        if self.shares is None or not self.deal_hash:
            raise ConfigError("save_state needs the shares: run release(blobs) first.")
        meta = {
            **_meta(session, binding),
            "deal": self.deal_hash,
            "digest": self.digest.hex(),
            "done": sorted(self.done),
            "inputs": self.inputs,
        }
        arrays = {f"s/{key}": share for key, share in self.shares.items()}
        write_container(target, STATE_KIND, meta, arrays)

    def load(
        self, source: Target, session: PartySession, binding: str = "", deal: bytes | None = None
    ) -> None:
        """Read a state written by :meth:`save` (a path, or a binary file of its bytes) into
        this step data. MessageError when it is malformed, oversized, or of another run,
        party, data set, ``binding`` or (if given) ``deal``."""
        path, plan, want = source_name(source), session.plan, _meta(session, binding)
        pairs = {plan.pair_name(a, b): (a, b) for a, b in plan.pairs()}
        shapes = {k: (plan.widths[a], plan.widths[b]) for k, (a, b) in pairs.items()}
        own = {k for k, pair in pairs.items() if session.index in pair}

        def bound(name: str) -> int | None:  # every pair's: another party's is refused below
            shape = shapes.get(name[2:]) if name.startswith("s/") else None
            return None if shape is None else 8 * shape[0] * shape[1]

        meta, arrays = read_container(source, STATE_KIND, array_bytes=bound)
        what = {
            "party": "another party's",
            "config_hash": "another run's (config hash)",
            "data": "made from another data set's (" + RUN_CHANGED + ")",
            "binding": "made from other input files'",
        }
        for key, label in what.items():
            if not isinstance(meta, dict) or meta.get(key) != want[key]:
                raise MessageError(
                    f"{path}: this secure state is {label}, not {want['party']!r}'s in this "
                    "run with this data: pass the state that this party's `release` wrote in "
                    "this run."
                )
        if deal is not None and meta.get("deal") != sha256_parts(bytes(deal)):
            raise MessageError(
                f"{path}: this secure state was made from another deal: pass the state that "
                "`release` wrote with this deal."
            )
        shares = {k[2:]: v for k, v in arrays.items()}
        try:
            digest = bytes.fromhex(meta["digest"])
            done = {str(d) for d in meta["done"]}
            inputs = {str(k): str(v) for k, v in meta["inputs"].items()}
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MessageError(f"{path}: malformed secure state.") from None
        if set(shares) != own or any(
            v.dtype != np.uint64 or v.shape != shapes[k] for k, v in shares.items()
        ):
            raise MessageError(
                f"{path}: the state's shares do not match this run's pairs and widths."
            )
        if SELECT not in done:
            raise MessageError(f"{path}: the state records no release.")
        self.shares, self.digest, self.done = shares, digest, done
        self.deal_hash = str(meta.get("deal") or "")
        self.inputs.update(inputs)


def _meta(session: PartySession, binding: str) -> dict[str, Any]:
    """What a state is bound to: the run, the party, its data and the caller's binding."""
    config_hash, data = session.config.config_hash(), session.records.digest()
    return {"party": session.name, "config_hash": config_hash, "data": data, "binding": binding}
