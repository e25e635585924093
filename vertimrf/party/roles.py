"""Party: a data holder in any method, behind one constructor;
design notes in docs/design/party.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from vertimrf.crypto.aead import BufferWriter
from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.errors import ConfigError
from vertimrf.party.records.ids import RecordIds
from vertimrf.party.records.open import Input
from vertimrf.party.secure import Blob, SealedBlobs, SecureParty
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.message import PartyMessage
from vertimrf.protocol.secure.commit import commit_bytes, read_admit
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.tokens import tokens_head, tokens_size, write_tokens
from vertimrf.protocol.setup import RunSetup, run_setup

if TYPE_CHECKING:  # imported when a method has a local message (it loads the synthesizers)
    from vertimrf.party.party import LocalParty

R = TypeVar("R", "LocalParty", SecureParty)


class Party:
    """A data holder: its columns (plus a record-ID column), the config and the shared secret.

    Args:
        name: the party's name in ``config.parties``.
        data: a DataFrame with ``id_column`` and the party's columns, or an
            :class:`EncodedTable` of the party's columns with the record IDs in ``ids``;
            for method "secure" (select pipeline) also a table aligned where it is held: a
            :class:`~vertimrf.party.records.file_table.FileTable` (a CSV or Parquet file, memory
            set by a part size) or a :class:`~vertimrf.party.records.dask_table.DaskTable`.
        config: the protocol config every role shares.
        secret: the parties' shared secret (>= 32 random bytes); never sent anywhere.
        keypair: method "secure" only: this party's key pair (``KeyPair.generate``).
        peers: method "secure" only: every other party's public key, by name.
        id_column: the record-ID column of a DataFrame ``data``.
        ids: the record IDs of an :class:`EncodedTable` ``data``.
        seed: the run seed (experiments only); None draws noise from a secure sampler.
        local_secret: a secret only this party holds (default: the key pair's, or fresh).
        progress: show a progress bar on stderr (the local message); None (default): only
            on a terminal.
    """

    def __init__(
        self,
        name: str,
        data: Input,
        config: ProtocolConfig | RunSetup,
        secret: bytes,
        *,
        keypair: KeyPair | None = None,
        peers: Mapping[str, PublicKey] | None = None,
        id_column: str = "id",
        ids: RecordIds | None = None,
        seed: int | None = None,
        local_secret: bytes | None = None,
        progress: bool | None = None,
    ) -> None:
        self.setup = run_setup(config)  # checked once; a setup given is not checked again
        config = self.setup.config
        self._rules = self.setup.method
        if self._rules.secure_product and (keypair is None or peers is None):
            raise ConfigError(
                "method 'secure' needs this party's keypair and its peers' public keys "
                "(keypair=..., peers={name: public key})."
            )
        self.name, self.config = name, config
        self._data: Input | None = data
        self._secret = secret
        self._keypair, self._peers = keypair, peers
        self._id_column, self._ids, self._seed = id_column, ids, seed
        if local_secret is None and keypair is not None:
            local_secret = keypair.local_secret()
        self.local: LocalParty | None = None
        self.secure: SecureParty | None = None
        self._keep: Path | None = None
        if self._rules.local_message:
            from vertimrf.party.party import LocalParty

            self.local = LocalParty(
                name, data, config, secret, id_column=id_column, ids=ids, seed=seed,
                local_secret=local_secret, progress=progress,
            )  # fmt: skip
        elif self._rules.secure_product:  # the secure product starts at once
            self.secure = self._make_secure(None)
            self._data = None  # encoded by now: the input table is not kept alive

    def __repr__(self) -> str:
        return f"Party({self.name!r}, method={self.config.method!r})"

    def keep_aligned(self, folder: str | os.PathLike) -> None:
        """Keep the secure product's aligned records in ``folder`` (this party's private
        state for the run), now or once the secure product is set up, so that a later
        process of the run reads them back instead of aligning the table again
        (:meth:`SecureParty.keep_aligned`); nothing for the methods without it."""
        self._keep = Path(folder)
        if self.secure is not None:
            self.secure.keep_aligned(self._keep)

    def _make_secure(self, bins: Mapping[str, BinMap] | None) -> SecureParty:
        assert self._keypair is not None and self._peers is not None  # checked in __init__
        assert self._data is not None  # dropped only once the secure role is made
        secure = SecureParty(
            self.name,
            self._data,
            self.setup,
            self._secret,
            self._keypair,
            self._peers,
            id_column=self._id_column,
            ids=self._ids,
            seed=self._seed,
            bins=bins,
        )
        if self._keep is not None:
            secure.keep_aligned(self._keep)
        return secure

    def _step(self, role: R | None, step: str, how: str) -> R:
        if role is None:
            raise ConfigError(
                f"{step} is not a step of method {self.config.method!r} (pipeline "
                f"{self.config.pipeline!r}) here: {how}."
            )
        return role

    # ------------------------------------------------------------------ local message
    def release_count(self) -> int:
        """The count party's noisy record count (the paper-pipeline methods)."""
        local = self._step(self.local, "release_count", "the count is in secure_release")
        return int(local.release_count())

    def release(self, noisy_count: int | None = None) -> PartyMessage:
        """The local message (the paper-pipeline methods); ``noisy_count`` is the count
        party's, for every other party."""
        local = self._step(self.local, "release", "run features, secure_release and measure")
        message = local.release(noisy_count)
        if self._rules.secure_product:  # on the local message's bins
            self.secure = self._make_secure(message.bins)
        return message

    def resume_release(self, message: PartyMessage) -> None:
        """The secure paper pipeline in a new process: set up the secure product on the bins
        of this party's own local ``message`` (released by an earlier process), instead of
        releasing again."""
        paper = self._rules.local_message and self._rules.secure_product
        if not paper or message.party != self.name:
            raise ConfigError(
                "resume_release takes this party's own local message, in the secure paper pipeline."
            )
        self.secure = self._make_secure(message.bins)

    def data_digest(self) -> str:
        """SHA-256 of this party's records (their ID fingerprints and codes)."""
        role = self.local if self.local is not None else self.secure
        assert role is not None  # one of the two is made in __init__
        return role.data_digest()

    # ------------------------------------------------------------------ secure product
    def _secure_role(self) -> SecureParty:
        how = (
            "run release first (the secure product uses its bins)"
            if self._rules.secure_product
            else "this method has no secure product"
        )
        return self._step(self.secure, "the secure product", how)

    def commit(self) -> bytes:
        """Method "secure": the commit message to the server, this party's data commitment
        (:meth:`SecureParty.commitment`), which the server's deal is made for."""
        secure = self._secure_role()
        return commit_bytes(self.config.config_hash(), self.name, secure.commitment())

    def tokens(self, admit: bytes) -> bytes:
        """Partial record sets: the tokens message to the server, from the server's admit
        message (:meth:`vertimrf.server.roles.Server.admit`)."""
        size, write = self.token_message(admit)
        out = BufferWriter(size)
        write(out)
        return bytes(out.result())

    def token_message(self, admit: bytes) -> tuple[int, Callable[[Any], None]]:
        """Partial record sets: the length of the tokens message (:meth:`tokens`) and a
        function that writes it to a binary file block by block, so that a table held in a
        file never has its whole token list in memory."""
        config_hash, role = self.config.config_hash(), self._secure_role()
        opened = read_admit(admit, config_hash)
        count, blocks = role.token_list(opened.digest)
        sealing = role.token_seal(opened)
        head, most = tokens_head(config_hash, self.name), role.plan.max_tokens
        return tokens_size(head, most), lambda out: write_tokens(
            out, head, count, most, blocks(), sealing
        )

    def features(self, deal: bytes, slot_map: Any = None) -> SealedBlobs:
        """Method "secure": the masked-feature blob for each peer, from the server's deal
        and, with partial record sets, its slot map (read by blocks; each blob sealed when
        read, so that one is held at a time)."""
        return self._secure_role().features(deal, slot_map)

    def coins(self, release: str) -> SealedBlobs:
        """Method "secure" with cross_noise "coins": the coin blob of ``release`` ("select"
        after the features, "measure" after the groups) for each peer (each sealed when
        read)."""
        return self._secure_role().coins(release)

    def replies(
        self, blobs: Mapping[str, Blob], coins: Mapping[str, Blob] | None = None
    ) -> SealedBlobs:
        """Product "paillier": the masked reply for each peer that encrypted its rows for this
        party, from the peers' feature ``blobs`` (and with coins, their coin blobs; each
        sealed when read)."""
        return self._secure_role().replies(blobs, coins)

    def secure_release(
        self, blobs: Mapping[str, Blob], coins: Mapping[str, Blob] | None = None,
        replies: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:  # fmt: skip
        """Method "secure": the first release (select pipeline: every 2-way marginal, or a
        workload's first release, and at the count party the noisy count; paper pipeline:
        the binned cross pairs); with coins, from the peers' coin blobs too; with product
        "paillier", from the peers' ``replies`` too."""
        return self._secure_role().release(blobs, coins, replies)

    def groups(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> SealedBlobs:
        """The secure select pipeline, round 2: the blob for each peer holding the attribute
        groups the request's cross marginals with it need (each sealed when read)."""
        if not self._rules.selects:
            raise ConfigError("groups is a step of the secure select pipeline only.")
        return self._secure_role().groups(group_deal, request)

    def group_replies(
        self, blobs: Mapping[str, Blob], group_blobs: Mapping[str, Blob],
        coins: Mapping[str, Blob] | None = None,
    ) -> SealedBlobs:  # fmt: skip
        """Product "paillier", round 2: the masked reply for each peer that encrypted its
        groups' rows for this party (with coins, from their coin blobs too; each sealed when
        read)."""
        return self._secure_role().group_replies(blobs, group_blobs, coins)

    def measure(
        self,
        request: Request | Sequence[Marginal],
        blobs: Mapping[str, Blob] | None = None,
        group_blobs: Mapping[str, Blob] | None = None,
        coins: Mapping[str, Blob] | None = None,
        group_replies: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:
        """The secure select pipeline: the re-measurement the server requests (the peers'
        feature ``blobs`` of both rounds where the request measures round-2 groups; with
        coins, the peers' coin blobs of the re-measurement; with product "paillier", the
        peers' round-2 replies)."""
        if not self._rules.selects:
            raise ConfigError("measure is a step of the secure select pipeline only.")
        return self._secure_role().measure(request, blobs, group_blobs, coins, group_replies)

    @property
    def timings(self) -> dict[str, float]:
        """Seconds of each step of the local message (empty for the select pipeline)."""
        return {} if self.local is None else self.local.timings
