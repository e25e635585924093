"""What the server's secure steps have made so far, typed: the commitments' digest the
first releases name, the noisy first release (with the server's noise), the selection
(n_hat, the junction tree, the request and its bins), the parties whose releases said they
were seeded, the spec with the parties' quantile cuts, and the fit. :meth:`StepData.saved`
is what a later process needs after select (the server's private state file), read back by
:meth:`StepData.loaded`."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.domain import DomainSpec
from vertimrf.errors import MessageError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER
from vertimrf.server.binning import BinChoice
from vertimrf.server.secure.session import ServerSession, cut_spec
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import UnionModel


@dataclass
class StepData:
    """The server's step data (module doc); None or empty until the step that makes it."""

    spec: DomainSpec  # the config's, with the parties' DP quantile cuts once select reads them
    commit_set: bytes | None = None  # the digest of the commitments the deals were made for
    first: Tables | None = None
    request: Request | None = None
    bins: dict[Marginal, BinChoice] = field(default_factory=dict)
    seeded_parties: tuple[str, ...] = ()
    n_hat: float = 0.0
    tree: JunctionTree | None = None
    model: MarkovRandomField | None = None
    iterations: list[int] = field(default_factory=list)
    skipped: int = 0  # partial sets: marginals the union fit could not read
    refits: list[str] = field(default_factory=list)  # each fit again with a smaller model
    max_model_cells: int | None = None  # a refit's cap on the fitted model's cells
    union: UnionModel | None = None  # partial sets: the fitted model over the union
    fine: dict[str, np.ndarray] = field(default_factory=dict)  # the fitted fine histograms

    def selected(self, before: str) -> tuple[Tables, Request, JunctionTree]:
        """The first release, the request and the tree (MessageError, saying select must
        run ``before`` the caller, until select has run)."""
        if self.first is None or self.request is None or self.tree is None:
            raise MessageError(f"run select(first releases) before {before}.")
        return self.first, self.request, self.tree

    def note_seeded(self, plan: SecurePlan, releases: Sequence[SecureRelease]) -> None:
        """Add the parties whose ``releases`` say their noise came from a seed."""
        seeded = set(self.seeded_parties) | {r.party for r in releases if r.seeded}
        self.seeded_parties = tuple(n for n in plan.names if n in seeded)

    def seeded_roles(self, seeded: bool) -> tuple[str, ...]:
        """The roles whose noise came from a seed: the parties whose releases said so (in
        the plan's order), then the server if it is ``seeded``."""
        return self.seeded_parties + ((SERVER,) if seeded else ())

    def saved(self, session: ServerSession) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """What a later process needs after select (server-private: the noisy first release
        with the server's noise, n_hat, the cliques, the request, the parties whose releases
        said they were seeded, the quantile cuts, and with partial record sets the deal's
        region counts and slots)."""
        first, request, tree = self.selected("save_state")
        keys = list(first.values)
        meta = {
            "config_hash": session.config.config_hash(),
            "n_hat": self.n_hat,
            "request": [list(m) for m in request.marginals],
            "cliques": [list(c) for c in tree.cliques],
            "tables": [list(m) for m in keys],
            "scales": [first.scale[m] for m in keys],
            "seeded_parties": list(self.seeded_parties),
            "cuts": {c: list(self.spec[c].cuts or ()) for c, *_ in session.plan.quantile},
        }
        dealt = session.record_sets.kept()
        if dealt is not None:
            meta["regions"] = dealt
        return meta, {f"t{i}": first.values[m] for i, m in enumerate(keys)}

    @classmethod
    def loaded(
        cls,
        session: ServerSession,
        meta: dict[str, Any],
        arrays: dict[str, np.ndarray],
        path: str | os.PathLike,
    ) -> tuple[StepData, list[Marginal]]:
        """The step data :meth:`saved` wrote to ``path`` (``meta`` and ``arrays``), but the
        request, and the marginals requested; the region counts restored to the session."""
        plan, config = session.plan, session.config
        if meta.get("config_hash") != config.config_hash():
            raise MessageError(f"{path}: the server state belongs to another run.")
        try:
            keys = [tuple(int(a) for a in m) for m in meta["tables"]]
            first = Tables(
                {m: arrays[f"t{i}"] for i, m in enumerate(keys)},
                dict(zip(keys, (float(x) for x in meta["scales"]), strict=True)),
            )
            seeded = meta["seeded_parties"]
            if not isinstance(seeded, list) or not set(seeded) <= set(plan.names):
                raise ValueError("seeded_parties")
            data = cls(
                spec=cut_spec(session, meta.get("cuts", {})),
                first=first,
                seeded_parties=tuple(n for n in plan.names if n in seeded),
                n_hat=float(meta["n_hat"]),
                tree=JunctionTree.build(
                    config.spec.domain,
                    [tuple(c) for c in meta["cliques"]],
                    heuristic="min_fill",
                    max_cells=int(session.options.max_total_cells),
                ),
            )
            marginals = [tuple(m) for m in meta["request"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise MessageError(f"{path}: malformed server state ({exc!r}).") from None
        if "regions" in meta:  # partial record sets: the deal's region counts and slots
            session.record_sets.restore(meta["regions"])
        return data, marginals
