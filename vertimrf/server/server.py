"""Server: the untrusted coordinator's side of the protocol. It sees only
party messages; design notes in docs/design/server.md."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vertimrf.crypto.keys import KeyPair
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, MessageError
from vertimrf.logs import progress_bar
from vertimrf.mrf.estimation import Measurement, mirror_descent
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER, role_seed
from vertimrf.server.estimates import CrossEstimates
from vertimrf.server.graphcom import GraphComResult, join_graphs
from vertimrf.server.methods import server_method
from vertimrf.server.optmrf import CrossSource
from vertimrf.server.secure import SecureServer
from vertimrf.server.verify import release_rows, verify_arrays, verify_releases
from vertimrf.synth.refine import refine, round_sizes

# OptMRF without cross_marginals fits the reference's int(0.8 d) pairs, in at most this many
# rounds (and at most d // 2).
REFERENCE_CROSS_FRACTION = 0.8
MAX_ROUNDS = 8
PhaseCallback = Callable[[str, float], None]


@dataclass(frozen=True)
class Received:
    """The checked messages in config order, the protocol's ledger and the noisy count."""

    messages: list[PartyMessage]
    ledger: PrivacyLedger
    n_hat: float


@dataclass
class Initial:
    """InitMRF's model, the measurements it starts from, and the cross-party estimates."""

    model: MarkovRandomField
    measurements: list[Measurement]
    n_local: int
    estimates: CrossEstimates
    cross_weight: float


class PaperServer:
    """The coordinator: turns party messages into a synthetic table and a privacy report.

    Args:
        config: the protocol config every role shares (it pins every setting, e.g. the
            mirror-descent iterations ``server_iters``).
        progress: show progress bars on stderr; None (default): only on a terminal.
    """

    def __init__(
        self,
        config: ProtocolConfig,
        *,
        progress: bool | None = None,
        keypair: KeyPair | None = None,
    ) -> None:
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        self.config = config
        self.method = server_method(config)
        self.options = config.paper_options()
        self.keypair = keypair  # the secure paper pipeline's noise derives from its secret
        self.progress = progress
        self.domain = config.spec.domain

    # ------------------------------------------------------------------------ phases
    def receive(self, messages: Sequence[PartyMessage]) -> Received:
        """Check the messages and re-derive their releases; charge them to one ledger."""
        cfg = self.config
        by_party: dict[str, PartyMessage] = {}
        for m in messages:
            if not isinstance(m, PartyMessage):
                raise MessageError(f"expected PartyMessage objects; got {type(m).__name__}.")
            if m.party in by_party:
                raise MessageError(f"two messages from party {m.party!r}.")
            m.check(cfg)
            by_party[m.party] = m
        missing = [p.name for p in cfg.parties if p.name not in by_party]
        if missing:
            raise MessageError(f"no message from parties {missing}; every party must send one.")
        ordered = [by_party[p.name] for p in cfg.parties]
        self.method.check_received(ordered)
        rows = release_rows(ordered, cfg.count_party)
        ledger = PrivacyLedger(cfg.epsilon, cfg.delta)
        for m in ordered:
            releases = verify_releases(cfg, m)
            verify_arrays(cfg, m, rows)
            ledger.extend(releases)
        return Received(ordered, ledger, float(rows))

    def candidate_pairs(self, received: Received) -> list[tuple[int, int]]:
        """Attribute pairs the server may add: the cross-party ones (all, without LocMRF)."""
        dom = self.domain
        owner = {c: m.party for m in received.messages for c in m.columns}
        return [
            (i, j)
            for i, j in itertools.combinations(range(len(dom)), 2)
            if not self.options.local_mrf or owner[dom.names[i]] != owner[dom.names[j]]
        ]

    def graphcom(self, received: Received, estimates: CrossEstimates) -> GraphComResult:
        """Join the triangulated local graphs with cross-party edges under the limits."""
        options, dom = self.options, self.domain
        # The triangulated local graphs contain the searched ones, so their edges suffice.
        local_edges = [
            (dom.index(a), dom.index(b))
            for m in received.messages
            if m.local
            for a, b in m.local.chordal_edges
        ]
        return join_graphs(
            dom,
            local_edges,
            self.candidate_pairs(received),
            lambda i, j: estimates.binned((i, j)),
            tau=options.tau,
            max_model_cells=options.max_model_cells,
            edge_fraction=options.cross_edge_fraction,
        )

    def init(
        self, received: Received, joined: GraphComResult, estimates: CrossEstimates
    ) -> Initial:
        """The product of the local models, and the local measurements (targets read off
        the local models); without LocMRF, the cross-party 1-way estimates instead."""
        options, dom = self.options, self.domain
        local_ms, local_pots = self._local_parts(received.messages, received.n_hat)
        model = MarkovRandomField(dom, joined.cliques, total=received.n_hat, max_cells=None)
        if local_pots:
            model.set_potentials(local_pots)
        if local_pots and options.consistency:
            local_model = model.copy()
            estimates = estimates.with_local_marginal(lambda i: local_model.marginal((i,)))
        weight = options.cross_weight * (
            float(np.median([m.weight for m in local_ms])) if local_ms else 1.0
        )
        measurements = list(local_ms)
        if not options.local_mrf:
            measurements += [
                Measurement((i,), estimates.target((i,)), weight) for i in range(len(dom))
            ]
        return Initial(model, measurements, len(local_ms), estimates, weight)

    def optimise(
        self, received: Received, joined: GraphComResult, initial: Initial
    ) -> tuple[list[tuple[int, ...]], list[int]]:
        """OptMRF: rounds adding the cross-party pairs the model fits worst; returns the
        chosen pairs and the mirror-descent iterations of each round."""
        options, d = self.options, len(self.domain)
        candidates = set(self.candidate_pairs(received))
        pool = sorted(
            {p for c in joined.cliques for p in itertools.combinations(c, 2) if p in candidates}
        )
        wanted = (
            int(REFERENCE_CROSS_FRACTION * d)
            if options.cross_marginals is None
            else options.cross_marginals
        )
        k_total = min(wanted, len(pool))
        rounds = round_sizes(k_total, min(d // 2, MAX_ROUNDS)) if k_total else []
        if not rounds and not options.local_mrf:
            rounds = [0]
        source = CrossSource(initial.estimates, pool, initial.cross_weight)
        bar = progress_bar(total=len(rounds), desc="server OptMRF", progress=self.progress)

        def refit(measurements: list[Measurement], last: bool, history: list[int]) -> int:
            iters = options.server_iters * (3 if last else 1)
            return int(mirror_descent(initial.model, measurements, iters=iters).iterations)

        def advance(round_index: int, picked: list[tuple[int, ...]], iters: int) -> None:
            bar.update()

        _, chosen, iterations = refine(
            initial.model,
            initial.measurements,
            rounds,
            source,
            refit,
            on_round=advance,
        )
        bar.close()
        return chosen, iterations

    def sample(
        self, model: MarkovRandomField, rows: int, seed: int | None, sample_seed: int | None = None
    ) -> pd.DataFrame:
        """``rows`` records from the model, decoded to the spec's values; ``sample_seed``
        seeds the sampling alone, else ``seed``, the run seed (the server derives its own
        from it)."""
        if sample_seed is None and seed is not None:
            sample_seed = role_seed(seed, SERVER)
        rng = np.random.default_rng(sample_seed)
        return TableEncoder(self.config.spec).decode(model.sample(rows, rng))

    # ------------------------------------------------------------------------ synthesize
    def synthesize(
        self,
        messages: Sequence[PartyMessage],
        n: int | None = None,
        seed: int | None = None,
        callback: PhaseCallback | None = None,
        secure_releases: Sequence[SecureRelease] | None = None,
        *,
        sample_seed: int | None = None,
    ) -> tuple[pd.DataFrame, ProtocolReport]:
        """Run receive, GraphCom, InitMRF, OptMRF and sampling; return (synthetic frame,
        report). ``callback(phase, seconds)`` is called after each phase. Method "secure"
        (the paper pipeline) takes its cross-party estimates from ``secure_releases``, the
        parties' secure-product releases, and the server adds its noise share to them.

        ``seed`` is the run seed (experiments): it fixes the sampling and, in the secure
        paper pipeline, the server's noise share (else derived from ``keypair``'s secret and
        the releases). ``sample_seed`` fixes the sampling alone. The report's
        ``seeded_roles`` name the roles whose noise came from a seed (then it claims no
        guarantee): the parties whose messages or releases say so, and the server in the
        secure paper pipeline, the one where its seed fixes noise.
        """
        if n is not None and not (isinstance(n, int | np.integer) and n >= 0):
            raise ConfigError(f"n must be a non-negative integer; got {n!r}.")
        model, report = self.fit(messages, seed, callback, secure_releases)
        start = time.perf_counter()
        rows = report.n_hat if n is None else int(n)
        frame = self.sample(model, rows, seed, sample_seed)
        report.seconds["sample"] = time.perf_counter() - start
        if callback is not None:
            callback("sample", report.seconds["sample"])
        return frame, report

    def fit(
        self,
        messages: Sequence[PartyMessage],
        seed: int | None = None,
        callback: PhaseCallback | None = None,
        secure_releases: Sequence[SecureRelease] | None = None,
    ) -> tuple[MarkovRandomField, ProtocolReport]:
        """:meth:`synthesize` without sampling: the fitted global model and the report."""
        cfg, names = self.config, self.domain.names
        seconds: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            seconds[phase] = now - clock
            clock = now
            if callback is not None:
                callback(phase, seconds[phase])

        received = self.receive(messages)
        secure = None
        if self.method.needs_secure_releases:
            secure, estimates = self._secure_estimates(received, secure_releases, seed)
        else:
            estimates = CrossEstimates(received.messages, cfg, received.n_hat)
        lap("receive")
        joined = self.graphcom(received, estimates)
        lap("graphcom")
        initial = self.init(received, joined, estimates)
        lap("initmrf")
        chosen, iterations = self.optimise(received, joined, initial)
        lap("optmrf")
        seeded = {m.party for m in received.messages if m.seeded}
        seeded |= set(() if secure is None else secure.seeded_roles)
        report = ProtocolReport(
            epsilon=cfg.epsilon,
            delta=cfg.delta,
            method=cfg.method,
            ledger=received.ledger,
            fm_bound=self.method.fm_bound(cfg),
            seeded_roles=tuple(r for r in (*(p.name for p in cfg.parties), SERVER) if r in seeded),
            n_hat=round(received.n_hat),
            model=str(initial.model.tree.size),
            cross_edges=tuple((names[a], names[b]) for a, b in joined.added),
            cross_measured=tuple((names[a], names[b]) for a, b in chosen),
            n_local_measurements=initial.n_local,
            iterations=tuple(iterations),
            seconds=seconds,
            viewers={} if secure is None else secure.plan.viewer_rho(received.ledger.releases),
        )
        return initial.model, report

    # ------------------------------------------------------------------------ helpers
    def _secure_estimates(
        self,
        received: Received,
        releases: Sequence[SecureRelease] | None,
        seed: int | None,
    ) -> tuple[SecureServer, CrossEstimates]:
        """The secure product's noisy binned cross tables as the estimates; its releases
        are charged to the protocol's one ledger (which refuses an overspend)."""
        if releases is None:
            raise MessageError(
                "method='secure' with secure_pipeline='paper' needs the parties' secure "
                "releases (secure_releases=...)."
            )
        secure = SecureServer(self.config, seed=seed, keypair=self.keypair)
        tables = secure.cross_tables(releases)
        received.ledger.extend(secure.ledger.releases)
        return secure, CrossEstimates(
            received.messages, self.config, received.n_hat, secure_tables=tables
        )

    def _local_parts(
        self, ordered: Sequence[PartyMessage], n_hat: float
    ) -> tuple[list[Measurement], dict[tuple[int, ...], np.ndarray]]:
        """Local measurements (targets rescaled to n_hat) and potentials."""
        dom = self.domain
        ms, pots = [], {}
        for m in ordered:
            loc = m.local
            if loc is None:
                continue
            scale = n_hat / loc.total if loc.total > 0 else 1.0
            for attrs, table in zip(loc.cliques, loc.potentials, strict=True):
                pots[tuple(dom.index(a) for a in attrs)] = table
            for attrs, w, target in zip(loc.measured, loc.weights, loc.targets, strict=True):
                ms.append(Measurement(tuple(dom.index(a) for a in attrs), target * scale, w))
        return ms, pots
