"""A party's own state in a secure run: its setup, its aligned records, the digests of
its inputs, and the private state file between processes.

:meth:`PartyState.save_state` writes what ``measure`` needs, each pair's share (k_p x k_q
words) and the record-set digest, to a private file (the container format, atomic, mode
0600; never sent) bound to the run, the party, its data and its deal, and
:meth:`PartyState.load_state` reads it back, so ``measure`` neither opens the deal again nor
reads the peers' blobs. A state of another run, party, data set or deal is refused.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.crypto.schedule import derive, mac
from vertimrf.domain import DomainSpec
from vertimrf.errors import RUN_CHANGED, ConfigError, MessageError, PrivacyBudgetError
from vertimrf.party.fine import fine_spec, grid_spec, measured_cuts, one_way_fine
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.aligned import Aligned
from vertimrf.party.records.frame import sha256_parts
from vertimrf.party.records.ids import RecordIds
from vertimrf.party.records.layout import Owner, Records
from vertimrf.party.records.open import Input, held_table, open_records, value_counts
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.party.secure.step_data import StepData
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, randomness
from vertimrf.product import cross_product
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.protocol.secure.product import CrossProduct
from vertimrf.protocol.secure.tokens import TokenSeal
from vertimrf.protocol.seeds import role_seed
from vertimrf.protocol.setup import RunSetup, secure_setup

STATE_KIND = "vertimrf-secure-party-state"

# A peer's feature blob: any bytes-like (the command line maps each file read-only).
Blob = bytes | bytearray | memoryview


class PartyState:
    """A data holder's state in a secure run: what every step of
    :class:`~vertimrf.party.secure.SecureParty` reads.

    Args:
        name, data, config, secret, id_column, ids, seed: as for
            :class:`vertimrf.party.party.LocalParty` (``config.method`` must be "secure");
            ``data`` may also be a table aligned where it is held (the select pipeline only):
            a :class:`vertimrf.party.records.file_table.FileTable`, a CSV or Parquet file aligned
            through temporary files, or a :class:`vertimrf.party.records.dask_table.DaskTable`, a
            table on this party's Dask cluster.
        keypair: this party's X25519 key pair (``vertimrf keys``).
        peers: every other party's public key, by name (fingerprints checked out of band).
        bins: the paper pipeline only: the bin maps
            of this party's binned columns, from its own local message
            (:meth:`vertimrf.party.party.LocalParty.release`); its features are the binned codes.
    """

    def __init__(
        self,
        name: str,
        data: Input,
        config: ProtocolConfig | RunSetup,
        secret: bytes,
        keypair: KeyPair,
        peers: Mapping[str, PublicKey],
        *,
        id_column: str = "id",
        ids: RecordIds | None = None,
        seed: int | None = None,
        bins: Mapping[str, BinMap] | None = None,
    ) -> None:
        config, self.plan = secure_setup(config)  # a setup's plan, derived once
        self.product: CrossProduct = cross_product(config.product)
        self.name, self.config = name, config
        self.index = self.plan.party_index(name)
        if keypair.name != name:
            raise ConfigError(f"the key pair is {keypair.name!r}'s, not {name!r}'s.")
        missing = sorted(set(self.plan.names) - {name} - set(peers))
        if missing:
            raise ConfigError(f"party {name!r} needs the public keys of {missing}.")
        # The party's columns in the spec's order, the plan's order of its attributes
        # (the config may list them in another).
        own = set(config.party(name).columns)
        self.spec = config.spec.subset([c for c in config.spec.names if c in own])
        self._seed = seed
        self._local = keypair.local_secret()
        self.ledger = PrivacyLedger(rho=self.plan.rho + self.plan.numeric_rho, delta=config.delta)
        self._secret, self._keypair = secret, keypair
        self._context = config.run_context()
        keys = TokenKeys(secret, self._local, self._context)
        self._owner = Owner(name, self.index, id_column, keys)
        if not all(c.resolved for c in self.spec.columns):
            self.spec = self._cut(data)
        table = held_table(
            data, self.spec, self._owner, id_type=config.id_type, ids=ids,
            bins=bins if self.plan.select else self._check_bins(bins), select=self.plan.select,
        )  # fmt: skip
        self.records: Records = open_records(table, self.spec, self.plan, self._owner)
        fine = [r.params["column"] for r in self.plan.fine_releases(name)]
        self._fine_spec = fine_spec(self.spec, fine) if fine else None
        self._fine: dict[str, np.ndarray] | None = None if fine else {}  # the exact counts
        self._fine_counts: Callable[[], list[np.ndarray]] | None = None
        if self._fine_spec is not None:
            self._fine_counts = value_counts(data, self._fine_spec, self._owner, config.id_type)
            if self._fine_counts is None:
                raise ConfigError(
                    f"party {name!r}: a table given as codes holds no values to place inside "
                    "their bins: give the DataFrame, or set values 'uniform' "
                    "(secure_values='uniform')."
                )
        self._offsets = np.asarray(self.plan.offsets[self.index], np.int64)
        HashKeys.from_secret(secret, 1)
        self._keys = {
            q: pairwise_key(keypair, peers[q], self._context) for q in self.plan.names if q != name
        }
        self._step = StepData()

    def _check_bins(self, bins: Mapping[str, BinMap] | None) -> Mapping[str, BinMap]:
        """The bin maps of exactly this party's binned columns, each with the plan's size."""
        binned = set(self.config.binned_columns())
        want = sorted(c for c in self.spec.names if c in binned)
        got = {} if bins is None else dict(bins)
        if sorted(got) != want:
            raise ConfigError(
                f"party {self.name!r} needs the bin maps of {want} (from its local release); "
                f"got {sorted(got)}."
            )
        for c, m in got.items():
            if m.n_bins != self.plan.sizes[self.config.spec.names.index(c)]:
                raise ConfigError(f"the bin map of {c!r} has {m.n_bins} bins, not the plan's.")
        return got

    def _cut(self, data: Input) -> DomainSpec:
        """This party's spec with the DP quantile cuts of its columns cut at quantiles,
        drawn from the counts of its values on their candidate grids (charged before their
        draw), from a keyed stream bound to the run, this party and those counts: every
        process of the run draws the same cuts and encodes its table with them."""
        rhos = self.plan.quantile_columns(self.index)
        grid = grid_spec(self.spec, list(rhos)) if rhos else None
        counts: list[np.ndarray] = []
        if grid is not None:
            count = value_counts(data, grid, self._owner, self.config.id_type)
            if count is None:
                raise ConfigError(
                    f"party {self.name!r}: a table given as codes holds no values to cut at "
                    "quantiles: give the DataFrame, or the column's cut points (scale 'cuts')."
                )
            counts = count()
        by_column = dict(zip(list(rhos), counts, strict=True))
        if self._seed is not None:
            noise = randomness(role_seed(self._seed, f"{self.name}/quantile"))[0]
        else:
            digest = sha256_parts(*(np.ascontiguousarray(n, "<i8").tobytes() for n in counts))
            bound = (self.config.config_hash(), self.name, "quantile", digest)
            noise = KeyedSampler(self._local, "party-quantile", *bound)
        return measured_cuts(
            self.spec, by_column, rhos, noise=noise, ledger=self.ledger, party=self.name
        )

    def exact_fine(self) -> dict[str, np.ndarray]:
        """The exact fine histograms of this party's columns the plan releases them of
        (:mod:`vertimrf.party.fine`), counted once where the table is held."""
        if self._fine is None:
            assert self._fine_counts is not None and self._fine_spec is not None
            self._fine = one_way_fine(self._fine_spec, self._fine_counts())
            self._fine_counts = None
        return self._fine

    def keep_aligned(self, folder: str | os.PathLike) -> None:
        """Keep this party's records in ``folder`` (its private state for the run), so that
        a later process of the run reads them back instead of aligning the table again
        (:mod:`vertimrf.party.records.layout`)."""
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

    def token_seal(self, admit: Admit) -> TokenSeal:
        """How this party seals its tokens message for ``admit``: to the server's key the
        admit names (MessageError when the config pins another), under a key, nonce and
        sealing randomness of its own secret bound to the run and the admit digest, so no
        peer can recompute the message or its digest."""
        dealer = self.config.dealer_role  # the server, or an own dealer
        pinned = self.config.public_keys().get(dealer) if self.config.identities else None
        if pinned is not None and pinned.raw != admit.server:
            raise MessageError(
                "the admit message names a server key other than the one this run's config "
                "pins: take the admit from this run's server."
            )
        bound = (self.config.config_hash(), self.name, admit.digest, admit.server)

        def derived(what: str) -> bytes:
            return derive(self._local, "tokens-seal", *bound, what)

        server = PublicKey(dealer, admit.server)
        return TokenSeal(server, derived("key"), derived("nonce")[:12], derived("seal"))

    def aligned(self) -> Aligned:
        """This party's records in the common row order (aligned on first use, or laid out
        by the deal; the input table is then dropped). ConfigError when it holds more than
        max_rows records."""
        return self.records.aligned()

    def commitment(self) -> bytes:
        """This party's data commitment for this run: HMAC-SHA256 of its data digest under
        a key derived from its local secret (which nobody else holds) and bound to the group
        secret, so the server learns nothing of the data from it, yet a changed table, key
        pair or group secret gives another commitment, and so another admit digest and
        another deal (see :meth:`SecureServer.deal`)."""
        group = hashlib.sha256(b"vertimrf/group-secret" + self._secret).hexdigest()
        config_hash = self.config.config_hash()
        key = derive(self._local, "data-commitment", config_hash, self.name, group)
        return mac(key, self.data_digest().encode())

    def _inputs(self) -> dict[str, str]:
        """The digests of every input this party's steps have used so far (its data, the
        deal, each peer blob read, the round-2 deal and blobs): what its noise, pads and
        nonces are keyed by."""
        return self._step.inputs

    def _label_key(self, stream: str, *label: str) -> bytes:
        """The key of ``stream`` under this party's local secret, bound to the run, the
        party, ``label``, its data and its deal: a re-run on the same inputs gets the same
        bytes."""
        return derive(self._local, stream, *self._bound(*label))

    def _bound(self, *label: str) -> tuple[str, ...]:
        """The inputs a private stream of this party is bound to: the run, the party,
        ``label``, its data and its deal."""
        config_hash, deal = self.config.config_hash(), self._step.deal_hash
        return (config_hash, self.name, *label, self.data_digest(), deal)

    def _once(self, step: str) -> None:
        self._check_step(step)
        self._step.done.add(step)

    def _check_step(self, step: str) -> None:
        if step in self._step.done:
            raise PrivacyBudgetError(f"party {self.name!r} already ran {step!r}; each runs once.")

    def data_digest(self) -> str:
        """SHA-256 of this party's records: their ID fingerprints and codes, bucket by
        bucket in row order (:mod:`vertimrf.party.records.aligned`; its private state and derived
        keys are bound to it). With partial record sets: their digest in token order
        (:meth:`commitment`'s), the same before and after the deal lays them out (what binds
        the keyed streams to the slots is the deal, which carries them)."""
        return self.records.digest()

    def _state_meta(self, binding: str) -> dict[str, Any]:
        return {
            "party": self.name,
            "config_hash": self.config.config_hash(),
            "data": self.data_digest(),
            "binding": binding,
        }

    def save_state(self, path: str | os.PathLike, *, binding: str = "") -> None:
        """Write what :meth:`measure` needs after :meth:`release`: each pair's share and the
        record-set digest, with the run, the party, a hash of its data and of its deal, and
        the caller's ``binding`` (e.g. a digest of its input files). The file is private (it
        holds shares, never sent), written atomically with mode 0600; no pickle."""
        meta, arrays = self._step.saved(self._state_meta(binding))
        write_container(path, STATE_KIND, meta, arrays)

    def load_state(
        self, path: str | os.PathLike, *, deal: bytes | None = None, binding: str = ""
    ) -> None:
        """Read a state written by :meth:`save_state` in an earlier process, so that
        :meth:`measure` runs from the kept shares. MessageError when the file is malformed,
        oversized, or of another run, party, data set, ``binding`` or (if given) ``deal``."""
        plan, p = self.plan, self.index
        keys = {  # every pair's bound: another party's state is refused by name, below
            plan.pair_name(a, b): 8 * plan.widths[a] * plan.widths[b] for a, b in plan.pairs()
        }

        def bound(name: str) -> int | None:
            return keys.get(name[2:]) if name.startswith("s/") else None

        meta, arrays = read_container(path, STATE_KIND, array_bytes=bound)
        want = self._state_meta(binding)
        what = {
            "party": "another party's",
            "config_hash": "another run's (config hash)",
            "data": "made from another data set's (" + RUN_CHANGED + ")",
            "binding": "made from other input files'",
        }
        for field, label in what.items():
            if not isinstance(meta, dict) or meta.get(field) != want[field]:
                raise MessageError(
                    f"{path}: this secure state is {label}, not {self.name!r}'s in this run "
                    "with this data: pass the state that this party's `release` wrote in this "
                    "run."
                )
        if deal is not None and meta.get("deal") != sha256_parts(bytes(deal)):
            raise MessageError(
                f"{path}: this secure state was made from another deal: pass the state that "
                "`release` wrote with this deal."
            )
        shares = {k[2:]: v for k, v in arrays.items()}
        try:
            digest = bytes.fromhex(meta["digest"])
            done = {str(d) for d in meta["done"]}
            inputs = {str(k): str(v) for k, v in meta["inputs"].items()}
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MessageError(f"{path}: malformed secure state.") from None
        shapes = {
            plan.pair_name(a, b): (plan.widths[a], plan.widths[b])
            for a, b in plan.pairs()
            if p in (a, b)
        }
        if set(shares) != set(shapes) or any(
            v.dtype != np.uint64 or v.shape != shapes[k] for k, v in shares.items()
        ):
            raise MessageError(
                f"{path}: the state's shares do not match this run's pairs and widths."
            )
        if SELECT not in done:
            raise MessageError(f"{path}: the state records no release.")
        step = self._step
        step.shares, step.digest, step.done = shares, digest, done
        step.deal_hash = str(meta.get("deal") or "")
        step.inputs.update(inputs)
