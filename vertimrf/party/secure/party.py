"""A data holder in a secure run: its session, its step data, and the order of its steps,
each run once; every step is a function of the step's module."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.party.fine import fine_spec, one_way_fine
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.aligned import Aligned
from vertimrf.party.records.ids import RecordIds
from vertimrf.party.records.layout import Owner
from vertimrf.party.records.open import Input, held_table, open_records, value_counts
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.party.secure import features as rounds
from vertimrf.party.secure import release as releases
from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.session import Blob, PartySession, checked_bins, cut_spec
from vertimrf.party.secure.step_data import StepData
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.product import cross_product
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.tokens import TokenSeal
from vertimrf.protocol.setup import RunSetup, secure_setup

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
        config, plan = secure_setup(config)  # a setup's plan, derived once
        index = plan.party_index(name)
        if keypair.name != name:
            raise ConfigError(f"the key pair is {keypair.name!r}'s, not {name!r}'s.")
        missing = sorted(set(plan.names) - {name} - set(peers))
        if missing:
            raise ConfigError(f"party {name!r} needs the public keys of {missing}.")
        # The party's columns in the spec's order, the plan's order of its attributes
        # (the config may list them in another).
        own = set(config.party(name).columns)
        spec = config.spec.subset([c for c in config.spec.names if c in own])
        local, context = keypair.local_secret(), config.run_context()
        ledger = PrivacyLedger(rho=plan.rho + plan.numeric_rho, delta=config.delta)
        owner = Owner(name, index, id_column, TokenKeys(secret, local, context))
        if not all(c.resolved for c in spec.columns):
            spec = cut_spec(data, spec, config, plan, owner, ledger, local, seed)
        bins = bins if plan.select else checked_bins(bins, name, spec, config, plan)
        table = held_table(
            data, spec, owner, id_type=config.id_type, ids=ids, bins=bins, select=plan.select
        )
        records = open_records(table, spec, plan, owner)
        fine = [r.params["column"] for r in plan.fine_releases(name)]
        fines = fine_spec(spec, fine) if fine else None
        self._fine: dict[str, np.ndarray] | None = None if fine else {}  # the exact counts
        self._fine_counts = (
            None if fines is None else value_counts(data, fines, owner, config.id_type)
        )
        if fines is not None and self._fine_counts is None:
            raise ConfigError(
                f"party {name!r}: a table given as codes holds no values to place inside "
                "their bins: give the DataFrame, or set values 'uniform' "
                "(secure_values='uniform')."
            )
        HashKeys.from_secret(secret, 1)  # checks the secret
        keys = {q: pairwise_key(keypair, peers[q], context) for q in plan.names if q != name}
        self.session = s = PartySession(
            name, index, config, plan, spec, cross_product(config.product), keypair, secret,
            local, context, owner, keys, ledger, records, seed, fines,
            np.asarray(plan.offsets[index], np.int64),
        )  # fmt: skip
        self.name, self.index, self.config, self.plan = name, index, config, plan
        self.spec, self.product, self.ledger, self.records = spec, s.product, ledger, records
        self._step = StepData()

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
        """Step 1: :func:`~vertimrf.party.secure.features.features`."""
        return self._once("features", rounds.features, deal, slot_map)

    def release(self, blobs: Mapping[str, Blob]) -> SecureRelease:
        """Step 2: :func:`~vertimrf.party.secure.release.release`."""
        return self._once(SELECT, releases.release, blobs)

    def open_group_deal(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> None:
        """Open the round-2 deal: :func:`~vertimrf.party.secure.features.open_group_deal`."""
        rounds.open_group_deal(self.session, self._step, group_deal, request)

    def groups(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> SealedBlobs:
        """Step 3: :func:`~vertimrf.party.secure.features.groups`."""
        return self._once("groups", rounds.groups, group_deal, request)

    def measure(
        self, request: Request | Sequence[Marginal], blobs: Mapping[str, Blob] | None = None,
        group_blobs: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:  # fmt: skip
        """Step 4: :func:`~vertimrf.party.secure.release.measure`."""
        fine = self.exact_fine
        return self._once(MEASURE, releases.measure, request, blobs, group_blobs, fine)
