"""The server's secure steps in order: :class:`SecureServer` builds the session, holds the
step data and the dealer, checks each step's turn and runs the step's function."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.errors import ConfigError, MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import SERVER
from vertimrf.protocol.setup import RunSetup
from vertimrf.server.secure import fit, selection
from vertimrf.server.secure.dealer import Dealer
from vertimrf.server.secure.session import ServerSession, StepData
from vertimrf.server.slots import TokenSource
from vertimrf.synth.fitted import absent_decoder, decoder_of
from vertimrf.within import Placement, placement

T = TypeVar("T")


class SecureServer:
    """The untrusted server of a secure run: deals, relays, sums and synthesizes (module
    doc); ``config``, ``plan``, ``ledger`` and ``record_sets`` are its session's, and its
    ``dealer`` is None when the run's dealer is a role of its own."""

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> None:
        self.session = session = ServerSession.build(config, seed, keypair)
        self.config, self.plan, self.ledger = session.config, session.plan, session.ledger
        self.record_sets = session.record_sets
        self.data = StepData(session.config.spec)
        self.dealer: Dealer | None = None
        if self.config.dealer_role == SERVER:
            self.dealer = Dealer(
                self.config, self.plan, session.keypair, session.stream, self.record_sets
            )

    def _step(self, step: Callable[[StepData], T]) -> T:
        """``step`` on a copy of the step data, kept if it completes: a step that fails
        leaves the server, and its ledger, as they were."""
        data = copy.copy(self.data)
        with self.ledger.transaction():
            out = step(data)
        self.data = data
        return out

    def _dealing(self) -> Dealer:
        """The server's dealer (MessageError when the run's dealer is a role of its own)."""
        if self.dealer is None:
            raise MessageError(
                "this run's dealer is a role of its own (config dealer 'own'): the server "
                "deals nothing; run `vertimrf dealer run`."
            )
        return self.dealer

    @property
    def seeded_roles(self) -> tuple[str, ...]:
        """The roles whose noise came from a seed: the parties whose releases said so (in
        the plan's order), then the server if it is seeded."""
        return self.data.seeded_parties + ((SERVER,) if self.session.seed is not None else ())

    def admit(
        self, commitments: Mapping[str, bytes], public_keys: Mapping[str, PublicKey]
    ) -> Admit:
        """The admit digest (:meth:`Dealer.admit`)."""
        return self._dealing().admit(commitments, public_keys)

    def deal(
        self,
        public_keys: Mapping[str, PublicKey],
        commitments: Mapping[str, bytes],
        tokens: Mapping[str, TokenSource | np.ndarray] | None = None,
    ) -> dict[str, bytes]:
        """Step 0: one sealed deal per party (:meth:`Dealer.deal`)."""
        return self._dealing().deal(public_keys, commitments, tokens)

    def select(self, releases: Sequence[SecureRelease]) -> Request:
        """Step 2 (:func:`~vertimrf.server.secure.selection.select`), once; a failed call
        changes nothing. The commitments the releases name are the dealer's from then on."""
        if self.data.first is not None:
            raise MessageError("this server already ran select; each run selects once.")
        if self.dealer is not None:
            self.data.commit_set = self.dealer.commit_set
        request = self._step(lambda data: selection.select(self.session, data, releases))
        if self.dealer is not None:
            self.dealer.commit_set = self.data.commit_set
        return request

    def group_deals(self, public_keys: Mapping[str, PublicKey] | None = None) -> dict[str, bytes]:
        """Step 2, after select: one sealed round-2 deal per party for the request
        (:meth:`Dealer.group_deals`); ``public_keys`` default to those :meth:`deal` used."""
        if self.data.request is None:
            raise MessageError("run select(first releases) before group_deals.")
        return self._dealing().group_deals(self.data.request, public_keys)

    def cross_tables(self, releases: Sequence[SecureRelease]) -> dict[Marginal, np.ndarray]:
        """The paper pipeline's one step (:func:`.selection.cross_tables`), run once."""
        if self.plan.select or self.data.first is not None:
            raise MessageError("cross_tables is the paper pipeline's one step, run once.")
        return self._step(lambda data: selection.cross_tables(self.session, data, releases))

    def fit(self, releases: Sequence[SecureRelease]) -> np.random.Generator:
        """Step 4 without sampling (:func:`~vertimrf.server.secure.fit.fit`): the model in
        ``data.model``, and the generator the run's sampling draws from."""
        return self._step(lambda data: fit.fit(self.session, data, releases))

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
        data = self.data
        assert data.model is not None  # fitted
        n = round(data.n_hat) if rows is None else int(rows)
        decoder = absent_decoder if self.record_sets.absent else decoder_of
        return decoder(data.spec, self.within())(data.model.sample(n, rng), rng)

    def within(self) -> Placement:
        """Where the synthetic numbers lie inside their bins: the plan's placement, by the
        fine histograms of the fitted releases (:mod:`vertimrf.within`)."""
        return placement(self.plan.values, self.data.fine)

    def model_cells(self) -> int:
        """The cells of the model the fit builds over the selection's cliques."""
        _, _, tree = self.data.selected("asking for the model's cells")
        return fit.model_cells(self.session, tree.cliques)

    def report(
        self,
        *,
        seconds: dict[str, float] | None = None,
        message_bytes: dict[str, int] | None = None,
    ) -> ProtocolReport:
        """The run's report: the ledger (the plan's releases) and what was measured, with
        the caller's ``seconds`` per phase and ``message_bytes`` per party, if given."""
        data, config, plan, ledger = self.data, self.config, self.plan, self.ledger
        if data.request is None or data.tree is None:
            raise MessageError("run select and synthesize before report.")
        names = config.spec.names
        marginals = data.request.marginals
        cross = [m for m in marginals if plan.kind(m) == "cross"]
        return ProtocolReport(
            epsilon=config.epsilon,
            delta=config.delta,
            method="secure",
            ledger=ledger,
            fm_bound=None,
            seeded_roles=self.seeded_roles,
            n_hat=round(data.n_hat),
            model=str(data.tree.size),
            cross_edges=(),
            cross_measured=tuple(tuple(names[a] for a in m) for m in cross),
            n_local_measurements=len(marginals) - len(cross),
            binned=tuple(tuple(names[a] for a in m) for m in data.request.bins),
            iterations=tuple(data.iterations),
            viewers=plan.viewer_rho(list(ledger.releases)),
            regions=self.record_sets.region_names(),
            region_sigma=self.record_sets.region_sigma(),
            refits=tuple(data.refits),
            seconds={} if seconds is None else seconds,
            message_bytes={} if message_bytes is None else message_bytes,
        )

    def save_state(self, path: str | os.PathLike) -> None:
        """Write what :meth:`synthesize` needs after :meth:`select` (:meth:`StepData.save`)."""
        self.data.save(self.session, path)

    @classmethod
    def load_state(
        cls,
        config: ProtocolConfig,
        path: str | os.PathLike,
        *,
        seed: int | None = None,
        keypair: KeyPair | None = None,
    ) -> SecureServer:
        """A server ready to :meth:`synthesize`, from :meth:`save_state`'s file."""
        server = cls(config, seed=seed, keypair=keypair)
        server.data = selection.resume(server.session, path)
        return server
