"""The server's selection, post-processing of the first release: from every 2-way
marginal, or a workload's first release (summed, with the server's noise), the engine's
selection (:mod:`vertimrf.synth.engine`) on the whole table, with the secure product as its
oracle (:mod:`.oracle`: within one party, or cross blocks within the round-2 caps). It
returns the request for re-measurement, in which a 2-way marginal is binned where its
estimated error is lower binned than at its full domain (``secure_binning="auto"``,
:mod:`vertimrf.server.binning`). What select found is kept between processes in the server's
private state file (:meth:`Selection.save_state`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import MessageError
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import rules
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.server.binning import BinChoice, choose_bins
from vertimrf.server.secure.oracle import SecureOracle
from vertimrf.server.secure.state import ServerState
from vertimrf.synth.engine.plan import EnginePlan, cells_per_precision
from vertimrf.synth.engine.scores import laplace_weight, pooled_one_way, record_total
from vertimrf.synth.engine.select import choose
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.union import UnionDomain, union_cells
from vertimrf.workload import Workload

STATE_KIND = "vertimrf-secure-server-state"
S = TypeVar("S", bound="Selection")


class Selection(ServerState):
    """The server's first-release step: :meth:`select` (or the paper pipeline's
    :meth:`cross_tables`), and its state between processes."""

    def select(self, releases: Sequence[SecureRelease]) -> Request:
        """Step 2: sum the first releases and choose the marginals to re-measure (and the
        ones to measure on bins). Every input is checked before anything is charged; a
        failed call changes nothing."""
        if self._first is not None:
            raise MessageError("this server already ran select; each run selects once.")
        marginals = self.plan.first_release()
        self._check_releases(SELECT, marginals, releases)
        self._check_commit_set(releases)
        count = [r.count for r in releases if r.party == self.plan.count_party]
        if count[0] is None:
            raise MessageError(
                f"the first release of the count party {self.plan.count_party!r} holds no "
                "noisy count."
            )
        noise, rng = self._randomness(SELECT, releases)
        with self._atomic():
            self._note_seeded(releases)
            for r in [*self.plan.quantile_releases(), *self.plan.releases(SELECT, marginals)]:
                self.ledger.charge(r)
            self.spec = self._cut_spec({c: v for r in releases for c, v in r.cuts.items()})
            first = self._first = self._tables(SELECT, marginals, releases, noise)
            weight = laplace_weight(self.plan.count_epsilon)
            self.n_hat = record_total(count[0], weight, first)
            chosen = self._choose(first, rng)
            self._bins = self._binning(first, chosen)
            bins = {m: c.maps for m, c in self._bins.items()}
            self._request = self.plan.check_request(chosen, bins)  # canonical order
        return self._request

    def _check_commit_set(self, releases: Sequence[SecureRelease]) -> None:
        """Every first release names the commitments its deal was made for, all the same
        (and this server's, if it dealt in this process); they bind the round-2 deals."""
        sets = {r.commit_set for r in releases}
        mine = None if self.commit_set is None else self.commit_set.hex()
        if len(sets) != 1 or (mine is not None and sets != {mine}):
            raise MessageError(
                "the first releases were made with deals of other data commitments: every "
                "party must release with the deal the server made in this run."
            )
        try:
            self.commit_set = bytes.fromhex(sets.pop())
        except ValueError:
            raise MessageError("a first release names a malformed commit set.") from None

    def _binning(self, first: Tables, marginals: Sequence[Marginal]) -> dict[Marginal, BinChoice]:
        """The 2-way marginals of the request to measure on bins, with their estimated
        errors: post-processing of the ``first`` release (:func:`choose_bins`)."""
        if self.config.secure_options().binning == "off":
            return {}
        plan = self.plan
        ones, ones_var = pooled_one_way(first, plan.sizes)
        sigma = plan.sigma(MEASURE, marginals)  # before binning, which lowers it
        out: dict[Marginal, BinChoice] = {}
        for m in marginals:
            if len(m) != 2 or m not in first.values:
                continue
            scale = sigma * (math.sqrt(1.5) if plan.kind(m) == "cross" else 1.0)
            shaped = first.values[m].reshape(plan.shape(m))
            choice = choose_bins(shaped, first.scale[m], scale, ones, ones_var, m)
            if choice is not None:
                out[m] = choice
        return out

    def engine_plan(self) -> EnginePlan:
        """The plan's public numbers as the engine reads them."""
        plan, domain = self.plan, self.config.spec.domain
        workload = self.config.secure_options().workload
        return EnginePlan(
            domain=domain,
            sigma_select=plan.sigma(SELECT, plan.first_release()),
            rho_measure=plan.rho_measure,
            refine_fraction=plan.refine_fraction,
            iters=self.config.secure_options().iters,
            options=self.options,
            cells_per_precision=cells_per_precision(self.options.max_total_cells),
            workload=Workload.given(domain, workload),
        )

    def model_caps(self) -> tuple[float, float]:
        """The graph search's (clique, total) cell caps (:meth:`EnginePlan.model_caps`)."""
        return self.engine_plan().model_caps(self.n_hat)

    def _union_fits(self, cliques: Sequence[Sequence[int]]) -> bool:
        """Partial record sets: whether the union model over ``cliques`` (with each party's
        links and the representatives' group) fits the fit's cap on cells."""
        space = UnionDomain(self.config.spec.domain, self.plan.owner)
        return union_cells(space, cliques) <= rules(self.config).model_cap(self.config)

    def oracle(self) -> SecureOracle:
        """The secure product's constraints, as the engine's oracle."""
        union = self.models_union
        return SecureOracle(
            self.plan,
            populations=self.record_sets.pair_populations(),
            union_fits=self._union_fits if union else None,
        )

    def _choose(self, first: Tables, rng: np.random.Generator) -> list[Marginal]:
        choice = choose(first, self.n_hat, self.engine_plan(), self.oracle(), rng)
        self.tree = choice.tree
        return choice.marginals

    def cross_tables(self, releases: Sequence[SecureRelease]) -> dict[Marginal, np.ndarray]:
        """The paper pipeline's one release (every binned cross-party pair): the summed
        shares plus the server's noise, charged to this server's ledger; each table in the
        attribute order of its canonical marginal."""
        if self.plan.select or self._first is not None:
            raise MessageError("cross_tables is the paper pipeline's one step, run once.")
        marginals = self.plan.first_release()
        self._check_releases(SELECT, marginals, releases)
        noise, _ = self._randomness(SELECT, releases)
        with self._atomic():
            self._note_seeded(releases)
            for r in self.plan.releases(SELECT, marginals):
                self.ledger.charge(r)
            self._first = self._tables(SELECT, marginals, releases, noise)
        sizes = self.plan.sizes
        return {m: v.reshape([sizes[a] for a in m]) for m, v in self._first.values.items()}

    def save_state(self, path: str | os.PathLike) -> None:
        """Write what :meth:`synthesize` needs after :meth:`select` (server-private: the
        noisy first release with the server's noise, n_hat, the cliques, the request and the
        parties whose releases said they were seeded)."""
        if self._first is None or self._request is None:
            raise MessageError("run select(first releases) before save_state.")
        keys = list(self._first.values)
        meta = {
            "config_hash": self.config.config_hash(),
            "n_hat": self.n_hat,
            "request": [list(m) for m in self._request.marginals],
            "cliques": [list(c) for c in self.tree.cliques],
            "tables": [list(m) for m in keys],
            "scales": [self._first.scale[m] for m in keys],
            "seeded_parties": list(self._seeded_parties),
            "cuts": {c: list(self.spec[c].cuts or ()) for c, *_ in self.plan.quantile},
        }
        dealt = self.kept_regions()  # partial record sets: the region counts and slots
        if dealt is not None:
            meta["regions"] = dealt
        arrays = {f"t{i}": self._first.values[m] for i, m in enumerate(keys)}
        write_container(path, STATE_KIND, meta, arrays)

    @classmethod
    def load_state(
        cls: type[S],
        config: ProtocolConfig,
        path: str | os.PathLike,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> S:
        """A server ready to :meth:`synthesize`, from :meth:`save_state`'s file."""
        server = cls(config, seed=seed, keypair=keypair)
        plan = server.plan
        released = plan.first_release()
        cells = max(plan.cells(m) for m in released)
        meta, arrays = read_container(path, STATE_KIND, array_bytes=lambda name: 8 * cells)
        if meta.get("config_hash") != config.config_hash():
            raise MessageError(f"{path}: the server state belongs to another run.")
        try:
            keys = [tuple(int(a) for a in m) for m in meta["tables"]]
            first = server._first = Tables(
                {m: arrays[f"t{i}"] for i, m in enumerate(keys)},
                dict(zip(keys, (float(x) for x in meta["scales"]), strict=True)),
            )
            marginals = [tuple(m) for m in meta["request"]]
            server.n_hat = float(meta["n_hat"])
            seeded = meta["seeded_parties"]
            if not isinstance(seeded, list) or not set(seeded) <= set(plan.names):
                raise ValueError("seeded_parties")
            server._seeded_parties = tuple(n for n in plan.names if n in seeded)
            server.spec = server._cut_spec(meta.get("cuts", {}))
            server.tree = JunctionTree.build(
                config.spec.domain,
                [tuple(c) for c in meta["cliques"]],
                heuristic="min_fill",
                max_cells=int(server.options.max_total_cells),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise MessageError(f"{path}: malformed server state ({exc!r}).") from None
        if "regions" in meta:  # partial record sets: the deal's region counts and slots
            server.restore_regions(meta["regions"])
        server._bins = server._binning(first, marginals)  # deterministic: as select chose them
        server._request = plan.check_request(
            marginals, {m: c.maps for m, c in server._bins.items()}
        )
        for r in [*plan.quantile_releases(), *plan.releases(SELECT, released)]:
            server.ledger.charge(r)
        return server
