"""Server: the untrusted coordinator's side of the protocol. It sees only party messages.

``Server(config).synthesize(messages)`` runs the paper's phases:

* receive: check every message against the config (hash, columns, shapes, key fingerprints),
  re-derive every mechanism's parameters from the config and refuse a message whose declared
  releases or arrays differ (:mod:`vertimrf.server.verify`), and charge the re-derived
  releases to one ledger with the protocol budget, which refuses any overspend;
* GraphCom: cross-party edges from CarEst dependence scores under the clique limit tau;
* InitMRF: the global model starts as the product of the local models (their potentials
  summed into the global cliques, which contain every local clique), and the union of the
  local measurement sets, with targets read off the local models, enters the fit;
* OptMRF: rounds of mirror descent, each adding the cross-party 2-way marginals that the
  model fits worst, with targets from CarEst, HisRec and consistency enforcement;
* sample: n_hat records from the fitted model, decoded to the spec's values.

Everything after "receive" is post-processing of DP releases and costs no budget.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from vertimrf.domain import TableEncoder
from vertimrf.errors import ConfigError, MessageError
from vertimrf.mrf.estimation import Measurement, mirror_descent
from vertimrf.mrf.model import MarkovRandomField
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.report import ProtocolReport, fm_worst_case
from vertimrf.protocol.seeds import SERVER, role_seed
from vertimrf.server.estimates import CrossEstimates
from vertimrf.server.graphcom import join_graphs
from vertimrf.server.verify import release_rows, verify_arrays, verify_releases
from vertimrf.synth.privmrf.refinement import round_sizes


class Server:
    """The coordinator: turns party messages into a synthetic table and a privacy report.

    Args:
        config: the protocol config every role shares (it pins every setting, e.g. the
            mirror-descent iterations ``server_iters``).
        progress: show progress bars.
    """

    def __init__(self, config: ProtocolConfig, *, progress: bool = True) -> None:
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        self.config = config
        self.progress = progress
        self.domain = config.spec.domain

    # ------------------------------------------------------------------------ receive
    def receive(self, messages: Sequence[PartyMessage]) -> tuple[list[PartyMessage], PrivacyLedger]:
        """Check the messages; return them in config order and the protocol's ledger."""
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
        if cfg.method == "fm" and len({m.key_fingerprint for m in ordered}) != 1:
            raise MessageError(
                "the parties' hash-key fingerprints differ: they did not derive their keys from "
                "the same shared secret and t. Re-run every party with the same secret."
            )
        rows = release_rows(ordered, cfg.count_party)
        ledger = PrivacyLedger(cfg.epsilon, cfg.delta)
        for m in ordered:
            releases = verify_releases(cfg, m)
            verify_arrays(cfg, m, rows)
            ledger.extend(releases)
        return ordered, ledger

    # ------------------------------------------------------------------------ synthesize
    def synthesize(
        self,
        messages: Sequence[PartyMessage],
        n: int | None = None,
        seed: int | None = None,
    ) -> tuple[pd.DataFrame, ProtocolReport]:
        """Run GraphCom, InitMRF, OptMRF and sampling; return (synthetic frame, report).

        ``seed`` is the run seed; the server derives its own from it and fixes only the
        sampling with it (the server adds no noise). The report's ``seeded`` flag says
        whether any party's noise came from a seed, which the parties declare.
        """
        if n is not None and not (isinstance(n, int | np.integer) and n >= 0):
            raise ConfigError(f"n must be a non-negative integer; got {n!r}.")
        cfg, dom = self.config, self.domain
        rng = np.random.default_rng(None if seed is None else role_seed(seed, SERVER))
        seconds: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(phase: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            seconds[phase] = now - clock
            clock = now

        ordered, ledger = self.receive(messages)
        n_hat = float(release_rows(ordered, cfg.count_party))
        local_ms, local_pots = self._local_parts(ordered, n_hat)
        owner = {c: m.party for m in ordered for c in m.columns}
        names = dom.names

        est = CrossEstimates(ordered, cfg, n_hat)
        pairs = [
            (i, j)
            for i, j in itertools.combinations(range(len(dom)), 2)
            if not cfg.local_mrf or owner[names[i]] != owner[names[j]]
        ]
        lap("receive")

        # The triangulated local graphs contain the searched ones, so their edges suffice.
        local_edges = [
            (dom.index(a), dom.index(b))
            for m in ordered
            if m.local
            for a, b in m.local.chordal_edges
        ]
        joined = join_graphs(
            dom,
            local_edges,
            pairs,
            lambda i, j: est.binned((names[i], names[j])),
            tau=cfg.tau,
            max_model_cells=cfg.max_model_cells,
            edge_fraction=cfg.cross_edge_fraction,
        )
        lap("graphcom")

        model = MarkovRandomField(dom, joined.cliques, total=n_hat, max_cells=None)
        if local_pots:
            model.set_potentials(local_pots)
        if local_pots and cfg.consistency:
            local_model = model.copy()
            est.local_marginal = lambda a: local_model.marginal((dom.index(a),))
        measurements = list(local_ms)
        w_cross = cfg.cross_weight * (
            float(np.median([m.weight for m in local_ms])) if local_ms else 1.0
        )
        if not cfg.local_mrf:
            measurements += [
                Measurement((i,), est.target((names[i],)), w_cross) for i in range(len(dom))
            ]
        lap("initmrf")

        candidates = set(pairs)
        pool = sorted(
            {p for c in joined.cliques for p in itertools.combinations(c, 2) if p in candidates}
        )
        d = len(dom)
        k_total = min(
            int(0.8 * d) if cfg.cross_marginals is None else cfg.cross_marginals, len(pool)
        )
        rounds = round_sizes(k_total, min(d // 2, 8)) if k_total else []
        chosen: list[tuple[int, int]] = []
        iterations = []
        if not rounds and not cfg.local_mrf:
            rounds = [0]
        bar = tqdm(rounds, desc="server OptMRF", disable=not self.progress, leave=False)
        for r, k in enumerate(bar):
            errs = {
                p: float(np.abs(model.marginal(p) - est.target((names[p[0]], names[p[1]]))).sum())
                for p in pool
                if p not in chosen
            }
            picked = sorted(errs, key=lambda p: (-errs[p], p))[:k]
            chosen += picked
            measurements += [
                Measurement(p, est.target((names[p[0]], names[p[1]])), w_cross) for p in picked
            ]
            last = r == len(rounds) - 1
            fit = mirror_descent(model, measurements, iters=cfg.server_iters * (3 if last else 1))
            iterations.append(int(fit.iterations))
        lap("optmrf")

        rows = round(n_hat) if n is None else int(n)
        codes = model.sample(rows, rng)
        frame = TableEncoder(cfg.spec).decode(codes)
        lap("sample")
        report = ProtocolReport(
            epsilon=cfg.epsilon,
            delta=cfg.delta,
            method=cfg.method,
            ledger=ledger,
            fm_bound=fm_worst_case(cfg) if cfg.method == "fm" else None,
            seeded=any(m.seeded for m in ordered),
            n_hat=n_hat,
            model=str(model.tree.size),
            cross_edges=tuple((names[a], names[b]) for a, b in joined.added),
            cross_measured=tuple((names[a], names[b]) for a, b in chosen),
            n_local_measurements=len(local_ms),
            iterations=tuple(iterations),
            seconds=seconds,
        )
        return frame, report

    # ------------------------------------------------------------------------ helpers
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
