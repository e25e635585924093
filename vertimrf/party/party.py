"""LocalParty: one data holder's local message in the paper pipeline (runs where
the data lives); design notes in docs/design/party.md."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from vertimrf.domain import EncodedTable
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.logs import progress_bar
from vertimrf.party.keys import HashKeys
from vertimrf.party.methods import CrossFields, ReleaseInputs, party_method
from vertimrf.party.records.frame import bin_table, own_table, table_digest
from vertimrf.party.records.ids import RecordIds, record_fingerprints
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.mechanisms import discrete_laplace_count, discrete_laplace_histogram
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, randomness
from vertimrf.protocol.bins import BinMap, frequency_bins
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import LocalModel, PartyMessage
from vertimrf.protocol.methods import party_rho, rules
from vertimrf.protocol.seeds import role_seed
from vertimrf.synth.privmrf import PrivMRF

if TYPE_CHECKING:
    from vertimrf.party.records.aligned import HeldTable


class LocalParty:
    """A data holder: its columns (plus a record-ID column), the config and the shared secret.

    Args:
        name: the party's name in ``config.parties``.
        data: a DataFrame with ``id_column`` and the party's columns (any row order), or an
            :class:`EncodedTable` of the party's columns with the record IDs in ``ids``.
        config: the protocol config every role shares.
        secret: the parties' shared secret (>= 32 random bytes); never sent anywhere.
        id_column: the DataFrame's record-ID column (int or str; unique, no missing values).
        ids: the record IDs of an EncodedTable's rows.
        seed: the run seed (experiments only: the noise is then reproducible and not for
            release); the party derives its own from (seed, name).
        local_secret: a secret only this party holds (>= 16 bytes; e.g.
            ``KeyPair.local_secret()`` of its key file; never the group secret). Without a
            seed, each step's noise is drawn by exact samplers from a keystream derived from
            it, the run, the step and this party's data, so a re-run of a step on the same
            inputs gives the same release and spends nothing new. None: a fresh random one
            (this object's releases are then its own, once each).
        progress: show a progress bar on stderr; None (default): only on a terminal.
    """

    def __init__(
        self,
        name: str,
        data: pd.DataFrame | EncodedTable | HeldTable,
        config: ProtocolConfig,
        secret: bytes,
        *,
        id_column: str = "id",
        ids: RecordIds | None = None,
        seed: int | None = None,
        local_secret: bytes | None = None,
        progress: bool | None = None,
    ) -> None:
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        self.method = party_method(config)
        self.options = config.paper_options()
        self.name = name
        self.config = config
        self.columns = config.party(name).columns
        self.spec = config.spec.subset(self.columns)
        self._table, ids = own_table(self.name, self.spec, data, id_column, ids)
        typed = config.id_type if isinstance(data, pd.DataFrame) else ""  # not fingerprints
        self._fingerprints = record_fingerprints(ids, typed, id_column)
        HashKeys.from_secret(secret, 1)  # validates the secret now, not at release time
        self._secret = secret
        self._seed = seed
        self._local = os.urandom(32) if local_secret is None else bytes(local_secret)
        if len(self._local) < 16:
            raise ConfigError("local_secret must hold at least 16 bytes (e.g. a key file's).")
        self._digest: str | None = None
        if seed is not None:  # one stream for the party (experiments)
            self._noise, self._rng = randomness(role_seed(seed, name))
        self.progress = progress
        self.budget = ProtocolBudget.from_config(config)
        self.ledger = PrivacyLedger(rho=party_rho(config, name), delta=config.delta)
        self.timings: dict[str, float] = {}
        self._noisy_count: int | None = None
        self._encoded = False

    def __repr__(self) -> str:
        return f"LocalParty({self.name!r}, columns={list(self.columns)}, rows={self.n_rows})"

    @property
    def n_rows(self) -> int:
        """The party's number of records (stays local)."""
        return len(self._table)

    def release_count(self) -> int:
        """The designated party's noisy record count (discrete Laplace; released once)."""
        if self.name != self.config.count_party:
            raise ConfigError(
                f"party {self.name!r} is not the count party ({self.config.count_party!r})."
            )
        if self._noisy_count is None:
            if self._seed is None:
                self._noise, self._rng = self._randomness("count")
            self._noisy_count = discrete_laplace_count(
                self.n_rows,
                self.budget.count_epsilon,
                noise=self._noise,
                ledger=self.ledger,
                party=self.name,
            )
        return self._noisy_count

    def release(self, noisy_count: int | None = None) -> PartyMessage:
        """Run LocMRF, binning and LocEnc once; return the message for the server.

        Every party uses the count party's one noisy count (for its local model and, in FO,
        for the number of GRR rows): the count party its own, the others pass
        ``noisy_count`` from its message. A second call raises: a party releases once per
        run, and a new run needs a new config (a fresh run nonce).
        """
        if self._encoded:
            raise PrivacyBudgetError(
                f"party {self.name!r} has already made its release for this run; a party "
                "releases once per run. Make a new config (a fresh run nonce) for a new run."
            )
        counted = self._noisy_count
        with self.ledger.transaction():
            try:
                message = self._release(noisy_count)
            except BaseException:
                self._noisy_count = counted  # a failed release leaves no trace
                raise
        self._encoded = True
        return message

    def _release(self, noisy_count: int | None) -> PartyMessage:
        cfg = self.config
        own = self.release_count() if self.name == cfg.count_party else None
        n_hat = own if own is not None else noisy_count
        if n_hat is None:
            raise ConfigError(
                f"party {self.name!r} needs the count party's noisy count; pass "
                f"release(noisy_count=...) from {cfg.count_party!r}'s message."
            )
        if isinstance(n_hat, bool) or not isinstance(n_hat, int | np.integer):
            raise ConfigError(f"noisy_count must be an integer; got {n_hat!r}.")
        if self._seed is None:
            self._noise, self._rng = self._randomness("release", str(int(n_hat)))
        self._keys = self.method.keys(cfg, self._secret)
        steps = ["LocMRF", "binning"] if self.options.local_mrf else ["binning"]
        steps += self.method.steps
        bar = progress_bar(steps, desc=f"{self.name} release", progress=self.progress)
        local: LocalModel | None = None
        cross: CrossFields = {}
        for step in bar:
            bar.set_postfix_str(step)
            start = time.perf_counter()
            if step == "LocMRF":
                local = self._local_model(int(n_hat))
            elif step == "binning":
                bins = self._bins()
                binned = bin_table(self._table, bins)
            else:
                cross = self.method.release(
                    ReleaseInputs(
                        self.name,
                        cfg,
                        binned,
                        self._fingerprints,
                        self._secret,
                        self._keys,
                        self._noise,
                        self.budget,
                        self.ledger,
                        int(n_hat),
                    )
                )
            self.timings[step] = time.perf_counter() - start
        return PartyMessage(
            party=self.name,
            config_hash=cfg.config_hash(),
            columns=self.columns,
            method=cfg.method,
            hash=rules(cfg).message_hash(cfg),
            key_fingerprint=None if self._keys is None else self._keys.fingerprint(),
            releases=self.ledger.releases,
            bins=bins,
            **cross,
            noisy_count=own,
            local=local,
            seeded=self._seed is not None,
        )

    # ------------------------------------------------------------------------ steps
    def _randomness(self, step: str, *label: str) -> tuple[NoiseSampler, np.random.Generator]:
        """The noise and the generator of one step: seeded (experiments), one stream for the
        party; else exact samplers on a keystream from the local secret, the run, the step,
        ``label`` and the data (see the class doc)."""
        if self._seed is not None:
            return self._noise, self._rng
        noise = KeyedSampler(
            self._local,
            "party-noise",
            self.config.config_hash(),
            self.name,
            step,
            *label,
            self.data_digest(),
        )
        return noise, noise.generator()

    def data_digest(self) -> str:
        """SHA-256 of this party's records: their ID fingerprints and codes, in input order
        (computed once)."""
        if self._digest is None:
            self._digest = table_digest(self._table, self._fingerprints)
        return self._digest

    def _local_model(self, n_hat: int) -> LocalModel:
        domain = self.spec.domain
        fit = PrivMRF(
            self.config.epsilon,
            self.config.delta,
            rho=self.budget.rho_locmrf_party,
            ledger=self.ledger,
            party=self.name,
            seed=self._rng,
            noise=self._noise,
            noisy_count=max(1, n_hat),
            selection="privmrf",  # LocMRF is the paper's PrivMRF
            max_clique_cells=self.options.local_max_clique_cells,
            max_total_cells=self.options.local_max_total_cells,
            progress=False,
        ).fit(self._table)
        names = domain.names
        model = fit.model

        def named(attrs: tuple[int, ...]) -> tuple[str, ...]:
            return tuple(names[a] for a in attrs)

        return LocalModel(
            chordal_edges=tuple((names[a], names[b]) for a, b in fit.graph.chordal.edges),
            cliques=tuple(named(c) for c in model.cliques),
            potentials=tuple(model.potentials.table(c).copy() for c in model.cliques),
            measured=tuple(named(m.attrs) for m in fit.measurements),
            weights=tuple(m.weight for m in fit.measurements),
            targets=tuple(model.marginal(m.attrs) for m in fit.measurements),
            total=float(model.total),
        )

    def _bins(self) -> dict[str, BinMap]:
        to_bin = set(self.config.binned_columns())
        out = {}
        for j, c in enumerate(self.columns):
            if c not in to_bin:
                continue
            noisy = discrete_laplace_histogram(
                np.bincount(self._table.codes[:, j], minlength=self.spec[c].size),
                self.budget.binning_epsilon,
                noise=self._noise,
                ledger=self.ledger,
                party=self.name,
                description=f"value counts of {c} (for its bin map)",
            )
            out[c] = BinMap(frequency_bins(noisy, self.options.bins), noisy)
        return out
