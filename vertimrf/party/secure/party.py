"""A data holder in a secure run: its session, its step data, and the order of its steps,
each run once; every step is a function of the step's module."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.errors import PrivacyBudgetError
from vertimrf.party.fine import one_way_fine
from vertimrf.party.records.aligned import Aligned
from vertimrf.party.records.ids import RecordIds
from vertimrf.party.records.open import Input
from vertimrf.party.secure import features as rounds
from vertimrf.party.secure import paillier as dealer_free
from vertimrf.party.secure import paillier_coins as dealer_free_coins
from vertimrf.party.secure import release as releases
from vertimrf.party.secure.backends import product_steps
from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.session import Blob, open_session
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.tokens import TokenSeal
from vertimrf.protocol.setup import RunSetup

T = TypeVar("T")


class SecureParty:
    """A data holder in a secure run: commit, features, release, groups, measure; ``name``,
    ``index``, ``config``, ``plan``, ``spec``, ``product``, ``ledger`` and ``records`` are
    its ``session``'s (:class:`~vertimrf.party.secure.session.PartySession`).

    Args:
        name, data, config, secret, id_column, ids, seed: as for
            :class:`vertimrf.party.party.LocalParty` (``config.method`` must be "secure");
            ``data`` may also be a table aligned where it is held (the select pipeline only):
            a :class:`vertimrf.party.records.file_table.FileTable`, a CSV or Parquet file aligned
            through temporary files, or a :class:`vertimrf.party.records.dask_table.DaskTable`, a
            table on this party's Dask cluster.
        keypair: this party's X25519 key pair (``vertimrf keys``).
        peers: every other party's public key, by name (fingerprints checked out of band).
        bins: the paper pipeline only: the bin maps of this party's binned columns, from its
            own local message (:meth:`vertimrf.party.party.LocalParty.release`); its features
            are the binned codes.
    """

    def __init__(
        self, name: str, data: Input, config: ProtocolConfig | RunSetup, secret: bytes,
        keypair: KeyPair, peers: Mapping[str, PublicKey], *, id_column: str = "id",
        ids: RecordIds | None = None, seed: int | None = None,
        bins: Mapping[str, BinMap] | None = None,
    ) -> None:  # fmt: skip
        s, self._fine_counts = open_session(
            name, data, config, secret, keypair, peers, id_column=id_column, ids=ids,
            seed=seed, bins=bins,
        )  # fmt: skip
        self.session = s
        self._fine: dict[str, np.ndarray] | None = None if s.fine_spec is not None else {}
        self.name, self.index, self.config, self.plan = s.name, s.index, s.config, s.plan
        self.spec, self.product, self.ledger, self.records = s.spec, s.product, s.ledger, s.records
        self._step = StepData()
        self._steps = product_steps(s)  # the steps that depend on the product backend

    def _once(self, step: str, run: Callable[..., T], *args: Any) -> T:
        """``run(session, step data, *args)``; PrivacyBudgetError if ``step`` ran already."""
        if step in self._step.done:
            raise PrivacyBudgetError(f"party {self.name!r} already ran {step!r}; each runs once.")
        out = run(self.session, self._step, *args)
        self._step.done.add(step)
        return out

    def exact_fine(self) -> dict[str, np.ndarray]:
        """The exact fine histograms of this party's columns the plan releases them of
        (:mod:`vertimrf.party.fine`), counted once where the table is held."""
        if self._fine is None:
            assert self._fine_counts is not None and self.session.fine_spec is not None
            self._fine = one_way_fine(self.session.fine_spec, self._fine_counts())
            self._fine_counts = None
        return self._fine

    def keep_aligned(self, folder: str | os.PathLike) -> None:
        """Keep this party's records in ``folder`` (its private state for the run) for a
        later process of the run (:mod:`vertimrf.party.records.layout`)."""
        self.records.keep(Path(folder))

    def tokens(self, admit: bytes) -> np.ndarray:
        """Partial record sets: this party's sorted token list for the server (its records'
        tokens and its dummies, :mod:`vertimrf.party.records.tokens`), keyed by the ``admit``
        digest (the server's :meth:`~vertimrf.server.secure.SecureServer.admit`)."""
        _, blocks = self.token_list(admit)
        return np.concatenate([np.empty(0, np.uint64), *blocks()])

    def token_list(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """Partial record sets: the length of this party's token list for ``admit`` and a
        function giving the list (:meth:`tokens`) by sorted blocks
        (:meth:`~vertimrf.party.records.layout.Slots.token_list`)."""
        return self.records.token_list(admit)

    def aligned(self) -> Aligned:
        """This party's records in the common row order (aligned on first use, or laid out
        by the deal). ConfigError when it holds more than max_rows records."""
        return self.records.aligned()

    def token_seal(self, admit: Admit) -> TokenSeal:
        """How this party seals its tokens message (:meth:`PartySession.token_seal`)."""
        return self.session.token_seal(admit)

    def commitment(self) -> bytes:
        """This party's data commitment (:meth:`PartySession.commitment`)."""
        return self.session.commitment()

    def data_digest(self) -> str:
        """SHA-256 of this party's records (ID fingerprints and codes) in row order, or with
        partial record sets in token order, the same before and after the deal lays them
        out; its private state and derived keys are bound to it."""
        return self.records.digest()

    def save_state(self, path: str | os.PathLike, *, binding: str = "") -> None:
        """Write what :meth:`measure` needs to the private file ``path``, bound to the
        caller's ``binding`` too, e.g. a digest of its input files (:meth:`StepData.save`)."""
        self._step.save(path, self.session, binding)

    def load_state(
        self, path: str | os.PathLike, *, deal: bytes | None = None, binding: str = ""
    ) -> None:
        """Read a state written by :meth:`save_state` in an earlier process, so that
        :meth:`measure` runs from the kept shares (:meth:`StepData.load`)."""
        self._step.load(path, self.session, binding, deal)

    def open_deal(self, deal: bytes, slot_map: Any = None) -> None:
        """Open the deal: :func:`~vertimrf.party.secure.features.open_deal`."""
        rounds.open_deal(self.session, self._step, deal, slot_map)

    def features(self, deal: bytes, slot_map: Any = None) -> SealedBlobs:
        """Step 1: :func:`~vertimrf.party.secure.features.features` (product "paillier":
        :func:`~vertimrf.party.secure.paillier.features`)."""
        return self._once("features", self._steps.features, deal, slot_map)

    def coins(self, release: str) -> SealedBlobs:
        """cross_noise "coins": this party's coin blob of ``release`` ("select", after the
        deal is opened; "measure", after the round-2 deal is) for each peer
        (:func:`~vertimrf.party.secure.coins.coin_blobs`)."""
        return self._steps.coin_blobs(self.session, self._step, release)

    def replies(
        self, blobs: Mapping[str, Blob], coins: Mapping[str, Blob] | None = None
    ) -> SealedBlobs:
        """Product "paillier", after step 1: :func:`~vertimrf.party.secure.paillier.replies`,
        with the coin replies from the peers' ``coins`` (cross_noise "coins")."""
        tail = self._coin_reply(SELECT, blobs, coins)
        return self._once("reply", dealer_free.replies, blobs, tail)

    def _coin_reply(
        self, release: str, blobs: Mapping[str, Blob], coins: Mapping[str, Blob] | None
    ) -> Callable[[str], bytes] | None:
        """The coin reply to each peer in ``release`` (None with split noise)."""
        if not self.plan.cross_noise.weight:
            return None

        def tail(peer: str) -> bytes:
            s, d = self.session, self._step
            return dealer_free_coins.coin_reply(s, d, release, peer, blobs[peer], coins)

        return tail

    def release(
        self, blobs: Mapping[str, Blob], coins: Mapping[str, Blob] | None = None,
        replies: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:  # fmt: skip
        """Step 2: :func:`~vertimrf.party.secure.release.release`."""
        return self._once(SELECT, releases.release, blobs, coins, replies)

    def open_group_deal(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> None:
        """Open the round-2 deal: :func:`~vertimrf.party.secure.features.open_group_deal`."""
        rounds.open_group_deal(self.session, self._step, group_deal, request)

    def groups(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> SealedBlobs:
        """Step 3: :func:`~vertimrf.party.secure.features.groups` (product "paillier":
        :func:`~vertimrf.party.secure.paillier.groups`)."""
        return self._once("groups", self._steps.groups, group_deal, request)

    def group_replies(
        self, blobs: Mapping[str, Blob], group_blobs: Mapping[str, Blob],
        coins: Mapping[str, Blob] | None = None,
    ) -> SealedBlobs:  # fmt: skip
        """Product "paillier", after step 3:
        :func:`~vertimrf.party.secure.paillier.group_replies`, with the coin replies from
        the peers' ``coins`` of the re-measurement."""
        tail = self._coin_reply(MEASURE, blobs, coins)
        return self._once("group-reply", dealer_free.group_replies, blobs, group_blobs, tail)

    def measure(
        self, request: Request | Sequence[Marginal], blobs: Mapping[str, Blob] | None = None,
        group_blobs: Mapping[str, Blob] | None = None, coins: Mapping[str, Blob] | None = None,
        group_replies: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:  # fmt: skip
        """Step 4: :func:`~vertimrf.party.secure.release.measure`."""
        fine, args = self.exact_fine, (blobs, group_blobs)
        return self._once(MEASURE, releases.measure, request, *args, fine, coins, group_replies)
