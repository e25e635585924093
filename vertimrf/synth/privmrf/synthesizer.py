"""PrivMRF (Cai et al., VLDB 2021): the centralized DP synthesizer, end to end
(analysis 2); design notes in docs/design/synth.md."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vertimrf.codec import SpecLike, TableCodec, TableLike, as_table, resolve_codec
from vertimrf.domain import Domain, DomainSpec, warn_small_table
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.io import refuse_existing
from vertimrf.mrf.cliques import histogram
from vertimrf.mrf.estimation import Measurement, mirror_descent, theoretic_loss
from vertimrf.mrf.junction_tree import JunctionTree
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import NoiseSampler, randomness
from vertimrf.synth.dtypes import column_dtypes, typed
from vertimrf.synth.fitted import (
    Decoder,
    check_rows,
    decoder_for,
    decoder_of,
    generator,
    marginal_series,
)
from vertimrf.synth.numeric import numeric_releases
from vertimrf.synth.privmrf import budget_split as bud
from vertimrf.synth.privmrf.fit_report import AttributeGraph, PrivMRFReport, attribute_graph
from vertimrf.synth.privmrf.graph_search import GraphSearchResult, greedy_graph_search
from vertimrf.synth.privmrf.histograms import CliqueTables
from vertimrf.synth.privmrf.initial_set import initial_marginals
from vertimrf.synth.privmrf.noise import FitNoise
from vertimrf.synth.privmrf.options import SELECTIONS, AIMOptions, EngineOptions, PrivMRFOptions
from vertimrf.synth.privmrf.refinement import CandidatePool, candidate_pool
from vertimrf.synth.privmrf.scores import noisy_tvd_scores
from vertimrf.synth.privmrf.source import GaussianSource, Marginal
from vertimrf.synth.privmrf.store import FitState, load_fit, save_fit
from vertimrf.synth.privmrf.usefulness import graph_phase_max_cells, refinement_max_cells
from vertimrf.synth.refine import refine, round_sizes
from vertimrf.within import Midpoint, Placement

if TYPE_CHECKING:
    from vertimrf.synth.engine.run import LocalFit

_log = logging.getLogger(__name__)


@dataclass
class _Shares:
    """The rho each kind of release gets in this fit (unused shares moved to measurements)."""

    count: float
    scores: float
    measurements: float
    error_queries: float


class PrivMRF:
    """Differentially private synthesizer: ``PrivMRF(epsilon, delta).fit(df, spec).sample()``.

    A fitted PrivMRF draws any number of rows (:meth:`sample`) and reads its marginals
    (:meth:`marginal`) at no privacy cost, and saves to a file (:meth:`save`,
    :meth:`PrivMRF.load`). Samples of a fit on a frame with a DomainSpec take the frame's
    dtypes (:mod:`vertimrf.synth.dtypes`). ``report`` is the fit's :class:`PrivMRFReport`,
    a :class:`~vertimrf.privacy.FitReport` as a :class:`~vertimrf.VerticalModel`'s is.

    Args:
        epsilon: the privacy budget this fit spends, with ``delta``.
        delta: the budget's delta (public; never derived from the data).
        seed: seed for all noise and sampling; None (default) draws DP noise from a
            cryptographically secure sampler. Fixed seeds are for tests and benchmarks only:
            the noise is then reproducible and the report says it is not for release.
        noise: draw the DP noise from this sampler instead (e.g. a party's own).
        ledger: charge the releases to this ledger (e.g. one shared by the parties of a
            vertical protocol) instead of a new one.
        party: the party name recorded with each release.
        noisy_count: an already released noisy record count to use as n_hat; the count is
            then not released again and its share goes to the measurements.
        rho: spend exactly this zCDP budget instead of the conversion of (epsilon, delta),
            e.g. a party's share of a protocol budget; (epsilon, delta) then only label the
            report.
        selection: "engine" (default): the select-measure-fit engine of method "secure"
            (:mod:`vertimrf.synth.engine`) with exact local counts, its budget split by
            ``engine`` (:class:`EngineOptions`); it releases its own count (no
            ``noisy_count``). Or "privmrf": the paper's PrivMRF (its selection, scores and
            refinement rounds), kept for reproduction.
            Or "aim": the aim-like preset (:mod:`vertimrf.synth.engine.aim`), AIM's
            rounds, workload and annealing on this library's MRF, set by ``aim``
            (:class:`AIMOptions`); it reads its count off the 1-way marginals.
        engine: the engine's options (default ``EngineOptions()``), with ``selection="engine"``.
        aim: the aim-like preset's options (default ``AIMOptions()``), with ``selection="aim"``.
        **options: see :class:`PrivMRFOptions`.
    """

    def __init__(
        self,
        epsilon: float,
        delta: float,
        *,
        seed: int | np.random.Generator | None = None,
        noise: NoiseSampler | None = None,
        ledger: PrivacyLedger | None = None,
        party: str | None = None,
        noisy_count: float | None = None,
        rho: float | None = None,
        selection: str = "engine",
        engine: EngineOptions | None = None,
        aim: AIMOptions | None = None,
        **options: Any,
    ) -> None:
        self.options = PrivMRFOptions.from_kwargs(options)
        if selection not in SELECTIONS:
            raise ConfigError(f"selection must be one of {SELECTIONS}; got {selection!r}.")
        if engine is not None and selection != "engine":
            raise ConfigError("engine options apply to selection='engine' only.")
        caps = sorted({"max_clique_cells", "max_total_cells"} & set(options))
        if selection == "engine" and caps:
            raise ConfigError(
                f"with selection='engine' (the default) the model caps are EngineOptions' "
                f"({', '.join(caps)}); pass them as engine=EngineOptions(...), or pass "
                "selection='privmrf' for the paper's PrivMRF."
            )
        if aim is not None and selection != "aim":
            raise ConfigError("aim options apply to selection='aim' only.")
        if selection in ("engine", "aim") and noisy_count is not None:
            raise ConfigError(
                f"selection={selection!r} releases its own count; drop noisy_count, or pass "
                "selection='privmrf' (the paper's PrivMRF) to use it."
            )
        self.selection = selection
        self.engine = EngineOptions() if engine is None else engine
        self.aim = AIMOptions() if aim is None else aim
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        if rho is not None and not (rho > 0 and math.isfinite(rho)):
            raise ConfigError(f"rho must be a positive number; got {rho!r}.")
        self.rho_budget = (
            bud.total_rho(self.epsilon, self.delta, gdp_accounting=self.options.gdp_accounting)
            if rho is None
            else float(rho)
        )
        if noisy_count is not None and not (noisy_count > 0 and math.isfinite(noisy_count)):
            raise ConfigError(f"noisy_count must be a positive count; got {noisy_count!r}.")
        self.noisy_count = noisy_count
        self.party = party
        self._external_ledger = ledger
        self.ledger = ledger
        if noise is None:
            self._noise, self._rng = randomness(seed)
        else:
            self._noise, self._rng = noise, np.random.default_rng(seed)
        self._fitted: dict[str, Any] | None = None
        self._report: PrivMRFReport | None = None
        self._fit_rho = self.rho_budget  # less what a fit's numeric releases spend

    # ----------------------------------------------------------------------------- fitting
    def fit(self, data: TableLike, spec: SpecLike | None = None) -> PrivMRF:
        """Fit on ``data``: an :class:`EncodedTable`, or a frame whose columns ``spec``
        describes (a Domain for integer-coded frames, a DomainSpec, or a TableEncoder);
        returns self."""
        start = time.perf_counter()
        noise = FitNoise(self._ledger(), self._noise, self.party)
        spec, within = self._numeric(data, spec, noise)
        table, codec = as_table(data, spec)
        codes = np.ascontiguousarray(table.codes, dtype=np.int64)
        warn_small_table(len(codes))
        opts, domain = self.options, codec.domain
        decoder = decoder_for(data, spec)
        dtypes = (
            column_dtypes(data, decoder)
            if isinstance(data, pd.DataFrame) and isinstance(decoder, DomainSpec)
            else {}
        )
        decoding = _decoding(codec, decoder, dtypes, within)
        if self.selection != "privmrf":
            return self._fit_engine(codes, codec, noise, decoding, start)
        shares = self._shares(len(domain))
        self._say(
            f"fit: d={len(domain)}, model caps {opts.max_clique_cells:g} / "
            f"{opts.max_total_cells:g} cells"
        )
        n_hat = self._count(codes, shares, noise)
        tvd = self._scores(codes, domain.sizes, shares, n_hat, noise)
        found, tree = self._structure(tvd, domain)
        init, rounds, source = self._plan(codes, tree, n_hat, tvd, shares, noise)
        measurements = source.measure_set(init, "initial marginal set")
        model = MarkovRandomField(domain, tree, total=n_hat)
        first = self._estimate(model, measurements, opts.convergence_ratio, 0)
        self._say(f"initial set: {len(init)} marginals, {first} iterations")
        measurements, _, iterations = refine(
            model,
            measurements,
            rounds,
            source,
            lambda ms, last, history: self._refit(model, ms, last, history),
            iterations=[first],
            on_round=lambda r, chosen, it: self._say(
                f"round {r + 1}/{len(rounds)}: +{len(chosen)} marginals, {it} iterations"
            ),
        )
        from vertimrf.synth.engine.run import LocalFit  # imported here: see _fit_engine

        fitted = LocalFit(
            model, found, tree, n_hat, tuple(measurements), source.sigma, tuple(iterations)
        )
        return self._finish(fitted, codec, noise, decoding, start)

    def _numeric(
        self, data: object, spec: SpecLike | None, noise: FitNoise
    ) -> tuple[SpecLike | None, Placement]:
        """The numeric releases of a fit of a frame with a DomainSpec
        (:func:`~vertimrf.synth.numeric.numeric_releases`, at ``numeric_share`` of the
        budget when a column releases): the spec with its quantile cuts, and the placement
        of values inside their bins. Other fits place values at the midpoint."""
        self._fit_rho = self.rho_budget
        values = self.options.values
        if not (isinstance(data, pd.DataFrame) and isinstance(spec, DomainSpec)):
            return spec, Midpoint()
        rho = self.options.numeric_share * self.rho_budget
        spec, within, releases = numeric_releases(
            data, spec, values=values, rho=rho, noise=noise.sampler, ledger=noise.ledger,
            party=self.party,
        )  # fmt: skip
        if releases:
            noise.charged.extend(releases)
            self._fit_rho = self.rho_budget - rho
            self._say(f"numeric releases: {len(releases)} at rho {rho:.3g}")
        return spec, within

    def _fit_engine(
        self,
        codes: np.ndarray,
        codec: TableCodec,
        noise: FitNoise,
        decoding: dict[str, Any],
        start: float,
    ) -> PrivMRF:
        """:meth:`fit` by the engine with the local oracle (``selection="engine"`` or
        ``"aim"``)."""
        # Imported here: the engine reads PrivMRF's modules, whose package imports this one.
        from vertimrf.synth.engine.aim import fit_aim
        from vertimrf.synth.engine.run import fit_local

        domain = codec.domain
        self._say(f"fit by the engine ({self.selection}): d={len(domain)}")
        if self.selection == "aim":
            fit, rounds = fit_aim(
                codes, domain, self._fit_rho, self.aim, self.options, noise, self._say
            )
            self._say(f"{len(rounds)} rounds")
        else:
            fit = fit_local(
                codes, domain, self._fit_rho, self.engine, self.options, noise, self._rng
            )
        return self._finish(fit, codec, noise, decoding, start)

    def _finish(
        self,
        fit: LocalFit,
        codec: TableCodec,
        noise: FitNoise,
        decoding: dict[str, Any],
        start: float,
    ) -> PrivMRF:
        """Keep the fitted ``fit`` (by either selection) with its decoding, and its report;
        returns self."""
        self._fitted = {
            "model": fit.model,
            "n_hat": fit.n_hat,
            "measurements": fit.measurements,
            "graph": attribute_graph(
                len(codec.domain), fit.graph.edges, fit.graph.chordal_edges, fit.graph.cliques
            ),
            **decoding,
        }
        self._report = PrivMRFReport.build(
            epsilon=self.epsilon,
            delta=self.delta,
            gdp_accounting=self.options.gdp_accounting,
            rho_budget=self.rho_budget,
            releases=tuple(noise.charged),
            model_size=fit.tree.size,
            cliques=tuple(fit.tree.cliques),
            n_measurements=len(fit.measurements),
            measurement_sigma=fit.sigma,
            iterations=fit.iterations,
            fit_seconds=time.perf_counter() - start,
            seeded=self._noise.seeded,
        )
        self._say(f"done in {self._report.fit_seconds:.2f} s")
        return self

    def _count(self, codes: np.ndarray, shares: _Shares, noise: FitNoise) -> float:
        """1. The noisy record count n_hat (or the one given). Fix of the reference bug
        (analysis section 8, item 10): its share is part of the budget (taken from the
        scores' 10%), not spent on top of it."""
        if self.noisy_count is not None:
            return float(self.noisy_count)
        sigma_n = bud.sigma_for_share(shares.count, 1, bud.COUNT_SENSITIVITY)
        noise.charge("privmrf.count", bud.COUNT_SENSITIVITY, sigma_n, 1, "noisy record count")
        return max(1.0, float(noise.gaussian(np.array([codes.shape[0]]), sigma_n)[0]))

    def _scores(
        self,
        codes: np.ndarray,
        sizes: Sequence[int],
        shares: _Shares,
        n_hat: float,
        noise: FitNoise,
    ) -> np.ndarray:
        """2. Noisy pairwise R-scores (all pairs, one discrete Gaussian release each)."""
        d = len(sizes)
        n_pairs = d * (d - 1) // 2
        if not n_pairs:
            return np.zeros((d, d))
        sigma_r = bud.sigma_for_share(shares.scores, n_pairs, bud.R_SCORE_SENSITIVITY)
        return noisy_tvd_scores(codes, sizes, sigma_r, n_hat, noise)

    def _structure(self, tvd: np.ndarray, domain: Domain) -> tuple[GraphSearchResult, JunctionTree]:
        """3. Graph search under the size caps and the junction tree."""
        opts = self.options
        found = greedy_graph_search(
            tvd,
            domain.sizes,
            max_clique_cells=opts.max_clique_cells,
            max_total_cells=opts.max_total_cells,
            size_penalty=opts.size_penalty,
            rng=self._rng,
        )
        tree = JunctionTree.build(
            domain, found.cliques, heuristic="min_fill", max_cells=int(opts.max_total_cells)
        )
        self._say(f"graph: {len(found.edges)} edges; model {tree.size}")
        return found, tree

    def _plan(
        self,
        codes: np.ndarray,
        tree: JunctionTree,
        n_hat: float,
        tvd: np.ndarray,
        shares: _Shares,
        noise: FitNoise,
    ) -> tuple[list[Marginal], list[int], GaussianSource]:
        """4-5. The initial marginal set (graph-phase usefulness with the planned noise), the
        refinement rounds, and one noise level for every measured marginal."""
        opts, sizes, d = self.options, tree.domain.sizes, len(tree.domain)
        planned = d + opts.refine_fraction * d
        sigma_est = math.sqrt(planned / (2.0 * shares.measurements))
        init = initial_marginals(
            tree.cliques, sizes, graph_phase_max_cells(n_hat, sigma_est, opts.theta), tvd, self._rng
        )
        k_total = int(opts.refine_fraction * d)
        sigma = bud.sigma_for_share(shares.measurements, len(init) + k_total, 1.0)
        k_total = min(k_total, len(self._pool(tree, sizes, n_hat, sigma, init)))
        n_rounds = min(d // 2, opts.max_rounds) if shares.error_queries > 0 else 0
        rounds = round_sizes(k_total, n_rounds) if k_total and n_rounds else []
        if not rounds:
            shares.measurements += shares.error_queries
            shares.error_queries = 0.0
            k_total = 0
        # Unlike the reference, a smaller pool lowers the noise of ALL measurements (it is
        # fixed before any marginal is measured), so the measurement share is spent exactly.
        sigma = bud.sigma_for_share(shares.measurements, len(init) + k_total, 1.0)
        # Every marginal measured or queried lies inside a clique: count each clique once.
        source = GaussianSource(
            noise=noise,
            data=CliqueTables({c: histogram(codes, c, sizes) for c in tree.cliques}),
            pool=self._pool(tree, sizes, n_hat, sigma, init),
            sigma=sigma,
            query_rho=shares.error_queries / len(rounds) if rounds else 0.0,
            max_queries=opts.max_queries,
            rng=self._rng,
        )
        return init, rounds, source

    def _refit(
        self,
        model: MarkovRandomField,
        measurements: list[Measurement],
        last: bool,
        history: list[int],
    ) -> int:
        """6. Re-estimation after a refinement round. Fix of the reference bug (analysis
        section 8, item 20): the last round's minimum iterations average over all previous
        fits (the initial one included), so a single refinement round does not divide by
        zero."""
        opts = self.options
        min_iters = 3 * sum(history) // len(history) if last else 0
        ratio = opts.final_convergence_ratio if last else opts.convergence_ratio
        return self._estimate(model, measurements, ratio, min_iters)

    def _ledger(self) -> PrivacyLedger:
        """The ledger of this fit: the given one, or a new one for this fit's budget."""
        if self._external_ledger is not None:
            self.ledger = self._external_ledger
        elif self.options.gdp_accounting:
            # The GDP budget x/2 exceeds the zCDP conversion's rho for the same (epsilon,
            # delta), so the ledger carries no budget; the report gives the exact GDP epsilon.
            self.ledger = PrivacyLedger()
        else:
            self.ledger = PrivacyLedger(self.epsilon, self.delta)
        if self.ledger.remaining_rho < self.rho_budget * (1 - 1e-12):
            raise PrivacyBudgetError(
                f"the ledger has rho {self.ledger.remaining_rho:.6g} left but this fit needs "
                f"{self.rho_budget:.6g} (epsilon={self.epsilon}, delta={self.delta}); lower "
                "epsilon or give a ledger with more budget."
            )
        return self.ledger

    def _shares(self, d: int) -> _Shares:
        split = self.options.split
        rho = self._fit_rho
        shares = _Shares(
            rho * split.count,
            rho * split.scores,
            rho * split.measurements,
            rho * split.error_queries,
        )
        if self.noisy_count is not None:
            shares.measurements += shares.count
            shares.count = 0.0
        elif shares.count <= 0:
            raise ConfigError(
                "the budget split gives the noisy count no share; give it a positive share "
                "or pass noisy_count (an already released count)."
            )
        if d < 2:
            shares.measurements += shares.scores
            shares.scores = 0.0
        return shares

    def _pool(
        self,
        tree: JunctionTree,
        sizes: Sequence[int],
        n_hat: float,
        sigma: float,
        init: list[tuple[int, ...]],
    ) -> CandidatePool:
        limit = refinement_max_cells(n_hat, sigma, self.options.theta)
        return candidate_pool(
            tree.cliques, sizes, limit, self.options.max_measure_arity, exclude=init
        )

    def _estimate(
        self,
        model: MarkovRandomField,
        measurements: list[Measurement],
        ratio: float,
        min_iters: int,
    ) -> int:
        """Mirror descent (warm-started from the model's potentials); returns iterations."""
        opts = self.options
        result = mirror_descent(
            model,
            measurements,
            iters=opts.iters,
            tol=opts.tol,
            target_loss=ratio * theoretic_loss(measurements, model.domain),
            min_iters=min(min_iters, opts.iters),
            check_every=opts.check_every,
        )
        return int(result.iterations)

    def _say(self, message: str) -> None:
        if self.options.progress:
            _log.info(message)

    # ----------------------------------------------------------------------------- outputs
    def _state(self, key: str) -> Any:
        if self._fitted is None:
            raise ConfigError("this PrivMRF is not fitted; call fit(df, spec) first.")
        return self._fitted[key]

    @property
    def n_hat(self) -> float:
        """The noisy record count (the default number of synthetic rows)."""
        return float(self._state("n_hat"))

    @property
    def graph(self) -> AttributeGraph:
        """The attribute graph before and after triangulation, with its maximal cliques."""
        return self._state("graph")

    @property
    def measurements(self) -> tuple[Measurement, ...]:
        """The measured marginal set S with the noisy targets (weight = 1 / sigma)."""
        return self._state("measurements")

    @property
    def model(self) -> MarkovRandomField:
        """The fitted MarkovRandomField (marginals scaled to n_hat)."""
        return self._state("model")

    @property
    def codec(self) -> TableCodec:
        """How frames map to codes and back for this fit."""
        return self._state("codec")

    def sample(
        self,
        n: int | None = None,
        seed: int | np.random.Generator | None = None,
        *,
        rng: np.random.Generator | None = None,
    ) -> pd.DataFrame:
        """``n`` synthetic rows (default: round(n_hat)), decoded like the training frame.

        ``seed`` (or ``rng``, a Generator) fixes the draw; without either, the synthesizer's
        own generator is used. Sampling costs no privacy budget.
        """
        if seed is not None and rng is not None:
            raise ConfigError("give seed or rng to sample(), not both.")
        n = round(self.n_hat) if n is None else check_rows(n)
        g = generator(rng if seed is None else seed, self._rng)
        return self._state("decode")(self.model.sample(n, g), g)

    def marginal(self, columns: Sequence[str]) -> pd.Series:
        """The model's distribution over ``columns`` (probabilities summing to 1) as a Series
        indexed, in C order over the columns as given, by the values a sample holds: one
        column gives an Index, several a MultiIndex."""
        return marginal_series(self.model, self._state("decode"), columns)

    @property
    def dtypes(self) -> dict[str, str]:
        """The pandas dtype of each column a sample casts, by name (the fitted frame's)."""
        return dict(self._state("dtypes"))

    def save(self, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
        """Write the fit (model, columns, dtypes, measurements, graph, options, report) to
        ``path`` in the library's checksummed container (atomically); returns the path. An
        existing file is refused unless ``overwrite``. A fit on a custom encoder cannot be
        saved (fit with a DomainSpec or Domain)."""
        decoder: Decoder | None = self._state("decoder")
        if decoder is None:
            raise ConfigError(
                "this PrivMRF was fitted with a custom encoder, which cannot be saved; fit "
                "with a DomainSpec, TableEncoder or Domain to save it."
            )
        state = FitState(
            self.epsilon,
            self.delta,
            self.options,
            decoder,
            self.model,
            self.n_hat,
            self.measurements,
            self.graph,
            self.report,
            self.dtypes,
            self._state("within"),
        )
        refuse_existing(path, overwrite)
        save_fit(state, path)
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_cells: int | None = None) -> PrivMRF:
        """The fitted PrivMRF :meth:`save` wrote (sampling from OS entropy unless seeded). A
        tampered or truncated file, one of another format version, or a model over
        ``max_cells`` cells raises :class:`~vertimrf.errors.MessageError`."""
        state = load_fit(path, max_cells)
        options = {f.name: getattr(state.options, f.name) for f in fields(state.options)}
        # the saved options are PrivMRFOptions (model caps included), which only
        # selection="privmrf" takes; a loaded fit samples, it selects nothing
        fit = cls(state.epsilon, state.delta, selection="privmrf", **options)
        fit.rho_budget = state.report.rho_budget
        fit._fitted = {
            "model": state.model,
            "n_hat": state.n_hat,
            "measurements": state.measurements,
            "graph": state.graph,
            **_decoding(resolve_codec(state.decoder), state.decoder, state.dtypes, state.within),
        }
        fit._report = state.report
        return fit

    @property
    def report(self) -> PrivMRFReport:
        """The privacy and model report of the fit (``str()`` it for a readable table)."""
        self._state("model")
        if self._report is None:
            raise ConfigError("this PrivMRF is not fitted; call fit(df, spec) first.")
        return self._report


def _decoding(
    codec: TableCodec, decoder: Decoder | None, dtypes: dict[str, str], within: Placement
) -> dict[str, Any]:
    """How a fit decodes: its codec, its storable decoder, the dtypes its samples take, the
    placement of numeric values in their bins, and the decoding that casts them."""
    decode = (
        typed(decoder_of(decoder, within), decoder, dtypes)
        if isinstance(decoder, DomainSpec)
        else lambda codes, rng=None: codec.decode(codes)
    )
    return dict(codec=codec, decoder=decoder, dtypes=dtypes, decode=decode, within=within)
