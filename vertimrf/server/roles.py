"""Server: the coordinator in any method, behind one constructor;
design notes in docs/design/server.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.errors import ConfigError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.report import ProtocolReport
from vertimrf.protocol.secure.commit import admit_bytes, read_commit
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.tokens import TokenList
from vertimrf.protocol.seeds import SERVER
from vertimrf.protocol.setup import RunSetup, run_setup
from vertimrf.server.secure import SecureServer
from vertimrf.server.server import PaperServer


class Server:
    """The coordinator: turns the parties' releases into a synthetic table and a report.

    Args:
        config: the protocol config every role shares.
        keypair: the server's key pair (method "secure": its deal and noise derive from its
            secret; default: a fresh one).
        seed: the run seed (experiments only: the noise is then reproducible and not for
            release).
        progress: show progress bars on stderr; None (default): only on a terminal.
    """

    def __init__(
        self,
        config: ProtocolConfig | RunSetup,
        *,
        keypair: KeyPair | None = None,
        seed: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.setup = run_setup(config)  # checked once; a setup given is not checked again
        config = self.setup.config
        self.config, self.seed = config, seed
        self._rules = self.setup.method
        if keypair is None and self._rules.secure_product:
            keypair = KeyPair.generate(SERVER)
        self._keypair = keypair
        self.paper: PaperServer | None = None
        self.secure: SecureServer | None = None
        if self._rules.local_message:
            self.paper = PaperServer(config, progress=progress, keypair=keypair)
        if self._rules.secure_product:
            self.secure = SecureServer(self.setup, seed=seed, keypair=keypair)

    def __repr__(self) -> str:
        return f"Server(method={self.config.method!r}, pipeline={self.config.pipeline!r})"

    def admit(self, commits: Mapping[str, bytes], public_keys: Mapping[str, PublicKey]) -> bytes:
        """Partial record sets: the admit message, from the parties' commit messages and
        public keys."""
        if self.secure is None:
            raise ConfigError("admit is a step of method 'secure' with partial record sets.")
        self.secure.record_sets.check_admit()
        config_hash = self.config.config_hash()
        commitments = {n: read_commit(data, config_hash, n) for n, data in commits.items()}
        return admit_bytes(config_hash, self.secure.admit(commitments, public_keys))

    def deal(
        self,
        public_keys: Mapping[str, PublicKey],
        commits: Mapping[str, bytes],
        tokens: Mapping[str, bytes | memoryview] | None = None,
    ) -> dict[str, bytes]:
        """Method "secure": one sealed deal per party, from the parties' public keys and
        their commit messages (:meth:`vertimrf.party.roles.Party.commit`), by name; with
        partial record sets also from their tokens messages (:meth:`Party.tokens`, read in
        place by blocks), each party's slot map then in :attr:`slot_maps`."""
        if self.secure is None:
            raise ConfigError(f"deal is a step of method 'secure', not {self.config.method!r}.")
        config_hash = self.config.config_hash()
        commitments = {n: read_commit(data, config_hash, n) for n, data in commits.items()}
        lists = None
        if tokens is not None:
            most = self.secure.plan.max_tokens
            assert self._keypair is not None  # the secure product always has one
            keypair = self._keypair
            lists = {
                n: TokenList(data, config_hash, n, most, keypair) for n, data in tokens.items()
            }
        return self.secure.deal(dict(public_keys), commitments, lists)

    @property
    def slot_maps(self) -> dict[str, Path]:
        """Partial record sets, after :meth:`deal`: each party's slot map (a file, kept
        while this server is), to send with its deal."""
        return {} if self.secure is None else self.secure.record_sets.slot_maps()

    def select(self, releases: Sequence[SecureRelease]) -> Request:
        """The secure select pipeline: the re-measurement request, from the first releases."""
        if not self._rules.selects or self.secure is None:
            raise ConfigError("select is a step of the secure select pipeline only.")
        return self.secure.select(releases)

    def group_deals(self, public_keys: Mapping[str, PublicKey] | None = None) -> dict[str, bytes]:
        """The secure select pipeline, after :meth:`select`: one sealed round-2 deal per
        party, for the request's groups (``public_keys``: default those given to
        :meth:`deal`)."""
        if not self._rules.selects or self.secure is None:
            raise ConfigError("group_deals is a step of the secure select pipeline only.")
        return self.secure.group_deals(public_keys)

    def synthesize(
        self,
        releases: Sequence[PartyMessage] | Sequence[SecureRelease],
        n: int | None = None,
        *,
        secure_releases: Sequence[SecureRelease] | None = None,
        sample_seed: int | None = None,
    ) -> tuple[pd.DataFrame, ProtocolReport]:
        """The synthetic frame (``n`` rows, default the noisy count) and the report.

        ``releases``: the parties' local messages (the paper-pipeline methods; the secure
        paper pipeline adds the parties' ``secure_releases``), or their re-measurements
        (the secure select pipeline, after :meth:`select`). ``sample_seed`` seeds the
        sampling alone."""
        if self.paper is not None:
            messages = [m for m in releases if isinstance(m, PartyMessage)]
            if len(messages) != len(releases):
                raise ConfigError(
                    f"method {self.config.method!r} synthesizes from the parties' local "
                    "messages (PartyMessage objects)."
                )
            return self.paper.synthesize(
                messages,
                n,
                seed=self.seed,
                secure_releases=secure_releases,
                sample_seed=sample_seed,
            )
        assert self.secure is not None
        if secure_releases is not None:
            raise ConfigError("secure_releases are an input of the secure paper pipeline.")
        measured = [r for r in releases if isinstance(r, SecureRelease)]
        if len(measured) != len(releases):
            raise ConfigError(
                "the secure select pipeline synthesizes from the parties' re-measurements "
                "(SecureRelease objects)."
            )
        frame = self.secure.synthesize(measured, n, sample_seed=sample_seed)
        return frame, self.secure.report()
