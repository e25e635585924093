"""The server's fit, post-processing of both releases: the engine's fit
(:func:`vertimrf.synth.engine.fit.fit_model`) on every measurement (the re-measured ones,
the binned ones as linear queries on their bin sums, and the first release's pairs inside
the cliques, each weighted 1 / its noise scale), warm-started from the first release, and n
rows are sampled.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd

from vertimrf.errors import ConfigError, MessageError, ModelShrunkWarning
from vertimrf.mrf.junction_tree import JunctionTree, model_size, triangulated_cliques
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.protocol.methods import rules
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import MEASURE
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.server.secure.selection import Selection
from vertimrf.server.secure.union_fit import partial_releases
from vertimrf.synth.engine.fit import fit_model, measurements
from vertimrf.synth.engine.tables import Tables
from vertimrf.synth.fitted import absent_decoder, decoder_of
from vertimrf.synth.union import Population, UnionDomain, fit_union, union_cells
from vertimrf.within import Placement, placement

# The union model's iteration cap over the config's (partial record sets: more cells and
# more tables, fitted cold; on Adult at 80% overlap 3x lowered the 3-way TVD by about 2%).
UNION_ITERS = 3


class SecureServer(Selection):
    """The untrusted server of a secure run: deals, relays, sums and synthesizes."""

    def synthesize(
        self,
        releases: Sequence[SecureRelease],
        rows: int | None = None,
        *,
        sample_seed: int | None = None,
    ) -> pd.DataFrame:
        """Step 4: :meth:`fit` on every measurement and sample ``rows`` rows (default n_hat).

        ``sample_seed`` seeds only the sampling of the synthetic rows (post-processing; it
        does not touch the DP noise). By default the sampling uses the seeded run's stream,
        or fresh OS entropy in an unseeded run."""
        if rows is not None and not (isinstance(rows, int | np.integer) and rows >= 0):
            raise ConfigError(f"rows must be a non-negative integer; got {rows!r}.")
        rng = self.fit(releases)
        if sample_seed is not None:
            rng = np.random.default_rng(sample_seed)
        n = round(self.n_hat) if rows is None else int(rows)
        decoder = absent_decoder if self.record_sets.absent else decoder_of
        decode = decoder(self.spec, self.within())
        return decode(self.model.sample(n, rng), rng)

    def fit(self, releases: Sequence[SecureRelease]) -> np.random.Generator:
        """Step 4 without sampling: charge the re-measurement and fit the MRF on every
        measurement (``self.model``). Returns the generator the run's sampling draws from:
        the seeded run's stream, or fresh OS entropy in an unseeded run."""
        if self._first is None or self._request is None:
            raise MessageError("run select(first releases) before synthesize(releases).")
        request = self._request
        self._check_releases(MEASURE, request.marginals, releases, request.bins)
        noise, rng = self._randomness(MEASURE, releases)
        if self.seed is None:
            rng = np.random.default_rng()
        with self._atomic():
            self._note_seeded(releases)
            for r in self.plan.releases(MEASURE, request.marginals, request.bins):
                self.ledger.charge(r)
            for r in self.plan.fine_releases():
                self.ledger.charge(r)
            self._fit_model(releases, self._first, request, noise)
            self.fine = {c: v for r in releases for c, v in r.fine.items()}
        return rng

    def within(self) -> Placement:
        """Where the synthetic numbers lie inside their bins: the plan's placement, by the
        fine histograms of the fitted releases (:mod:`vertimrf.within`)."""
        return placement(self.plan.values, self.fine)

    def _fit_model(
        self,
        releases: Sequence[SecureRelease],
        first_release: Tables,
        request: Request,
        noise: NoiseSampler,
    ) -> None:
        """The fit on both releases (the server's noise drawn once). A fit that runs out of
        memory, or over a cell limit, fits again on the same tables with a smaller model
        (:meth:`_shrunk`): post-processing, no new noise and no new charge; a
        :class:`ModelShrunkWarning` says so. With :attr:`max_model_cells` (``vertimrf
        server refit``), a model over it is shrunk before the fit."""
        second = self._tables(MEASURE, request.marginals, releases, noise, request.bins)
        cliques: list[tuple[int, ...]] = list(self.tree.cliques)
        limit = self.max_model_cells
        if limit is not None and self._model_cells(cliques) > limit:
            cliques = self._shrunk(cliques, limit, f"was over the {limit:,} asked for")
        while True:
            try:
                self._fit_on(first_release, second, request, cliques)
                return
            except MemoryError as exc:  # ModelTooLargeError is one
                cause = "ran out of memory" if type(exc) is MemoryError else "was too large"
                if not any(len(c) > 1 for c in cliques):
                    raise
                cliques = self._shrunk(cliques, self._model_cells(cliques) // 2, cause)

    def _shrunk(
        self, cliques: Sequence[Sequence[int]], target: int, cause: str
    ) -> list[tuple[int, ...]]:
        """Cliques of a model of at most ``target`` cells, or every attribute alone: the
        smallest of ``cliques`` first, each kept while the model fits (the rest left out,
        with the re-measured marginals they held). Noted in :attr:`refits` and warned
        (:class:`ModelShrunkWarning`) with ``cause``."""
        joined = sorted(
            (tuple(c) for c in cliques if len(c) > 1),
            key=lambda c: (self.config.spec.domain.size(c), c),
        )
        kept: list[tuple[int, ...]] = []
        for c in joined:
            if self._model_cells([*kept, c]) <= target:
                kept.append(c)
        was, now = self._model_cells(cliques), self._model_cells(kept)
        self.refits = [
            *self.refits,
            f"the model of {was:,} cells {cause}; the server fitted again from the same "
            f"releases with a model of {now:,} cells (post-processing: no noise drawn and no "
            "budget spent again)",
        ]
        warnings.warn(self.refits[-1], ModelShrunkWarning, stacklevel=3)
        return kept

    def _fit_on(
        self,
        first_release: Tables,
        second: Tables,
        request: Request,
        cliques: Sequence[Sequence[int]],
    ) -> None:
        """The fit of the model over ``cliques`` (the selection's, or smaller ones)."""
        if list(cliques) != list(self.tree.cliques):
            domain = self.config.spec.domain
            size = model_size(domain, triangulated_cliques(domain, cliques))
            self.tree = JunctionTree.build(domain, cliques, max_cells=size.total_cells)
            inside = [set(c) for c in self.tree.cliques]
            second = Tables(
                {m: v for m, v in second.values.items() if any(set(m) <= c for c in inside)},
                second.scale,
            )
        if self.models_union:  # partial record sets: one model over the union
            self._fit_union(first_release, second)
            return
        bins = {m: request.maps(m) for m in request.bins if m in second.values}
        plan = self.engine_plan()
        self.model, self.iterations = fit_model(
            plan, self.tree, self.n_hat, *measurements(first_release, second, self.tree, bins)
        )
        self.n_hat = self.record_sets.rows(self.n_hat, self.config.population)

    def model_cells(self) -> int:
        """The cells of the model the fit builds over the selection's cliques."""
        if self._first is None:
            raise MessageError("run select before asking for the model's cells.")
        return self._model_cells(self.tree.cliques)

    def _model_cells(self, cliques: Sequence[Sequence[int]]) -> int:
        """The cells of the model the fit builds over ``cliques`` (over the union with
        partial record sets), triangulated as it is built."""
        domain = self.config.spec.domain
        data = triangulated_cliques(domain, cliques)
        if self.models_union:
            return union_cells(UnionDomain(domain, self.plan.owner), data)
        return model_size(domain, data).total_cells

    def _fit_union(self, first_release: Tables, second: Tables) -> None:
        """The model over the union of the records (:mod:`vertimrf.synth.union`) on every
        release and the published region counts, conditioned on the config's population;
        ``n_hat`` becomes the population's DP row count."""
        counts, sigma = self.record_sets.regions()
        releases, self.skipped = partial_releases(
            self.plan, self.config.spec.domain, (first_release, second), counts, sigma
        )
        union = fit_union(
            releases,
            iters=UNION_ITERS * self.config.secure_options().iters,
            cliques=self.tree.cliques,
            max_cells=int(rules(self.config).model_cap(self.config)),
        )
        population = cast(Population, self.config.population)
        self.union = union
        self.model = union.population_model(population)
        self.n_hat = float(union.rows(population))
        self.iterations = [int(union.fit.iterations)]

    def report(
        self,
        *,
        seconds: dict[str, float] | None = None,
        message_bytes: dict[str, int] | None = None,
    ) -> ProtocolReport:
        """The run's report: the ledger (the plan's releases) and what was measured, with
        the caller's ``seconds`` per phase and ``message_bytes`` per party, if given."""
        if self._request is None:
            raise MessageError("run select and synthesize before report.")
        names = self.config.spec.names
        marginals = self._request.marginals
        cross = [m for m in marginals if self.plan.kind(m) == "cross"]
        return ProtocolReport(
            epsilon=self.config.epsilon,
            delta=self.config.delta,
            method="secure",
            ledger=self.ledger,
            fm_bound=None,
            seeded_roles=self.seeded_roles,
            n_hat=round(self.n_hat),
            model=str(self.tree.size),
            cross_edges=(),
            cross_measured=tuple(tuple(names[a] for a in m) for m in cross),
            n_local_measurements=len(marginals) - len(cross),
            binned=tuple(tuple(names[a] for a in m) for m in self._bins),
            iterations=tuple(self.iterations),
            viewers=self.plan.viewer_rho(list(self.ledger.releases)),
            regions=self.record_sets.region_names(),
            region_sigma=self.record_sets.region_sigma(),
            refits=tuple(self.refits),
            seconds={} if seconds is None else seconds,
            message_bytes={} if message_bytes is None else message_bytes,
        )
