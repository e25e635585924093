"""A party's session in a secure run: what it sets up once and every step reads (its name,
plan, spec, keys, ledger, records and randomness), frozen; what the steps make is in
:class:`~vertimrf.party.secure.step_data.StepData`."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.crypto.schedule import derive, mac
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, MessageError
from vertimrf.party.fine import fine_spec, grid_spec, measured_cuts
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.frame import sha256_parts
from vertimrf.party.records.ids import RecordIds
from vertimrf.party.records.layout import Owner, Records
from vertimrf.party.records.open import Input, held_table, open_records, value_counts
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.samplers import KeyedSampler, randomness
from vertimrf.product import cross_product
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.product import CrossProduct
from vertimrf.protocol.secure.tokens import TokenSeal
from vertimrf.protocol.seeds import role_seed
from vertimrf.protocol.setup import RunSetup, secure_setup

# A peer's feature blob: any bytes-like (the command line maps each file read-only).
Blob = bytes | bytearray | memoryview


@dataclass(frozen=True, eq=False)
class PartySession:
    """A data holder's setup in a secure run (module doc): ``local`` is its local secret,
    ``keys`` its pairwise key with each peer, ``seed`` the experiments' seed (None: keyed
    streams), ``fine_spec`` the spec of the columns whose fine histograms it releases."""

    name: str
    index: int
    config: ProtocolConfig
    plan: SecurePlan
    spec: DomainSpec
    product: CrossProduct | None  # None: the backend's parties run steps of their own
    keypair: KeyPair
    secret: bytes
    local: bytes
    context: bytes
    owner: Owner
    keys: Mapping[str, bytes]
    ledger: PrivacyLedger
    records: Records
    seed: int | None
    fine_spec: DomainSpec | None
    offsets: np.ndarray  # each of its singles' first one-hot column

    def cross(self) -> CrossProduct:
        """The run's dealer-assisted backend (ConfigError for one whose parties run steps
        of their own, which never call this)."""
        if self.product is None:
            raise ConfigError(f"product {self.config.product!r} runs its own party steps.")
        return self.product

    def commitment(self) -> bytes:
        """This party's data commitment for this run: HMAC-SHA256 of its data digest under
        a key derived from its local secret (which nobody else holds) and bound to the group
        secret, so the server learns nothing of the data from it, yet a changed table, key
        pair or group secret gives another commitment, and so another admit digest and
        another deal (see :meth:`SecureServer.deal`)."""
        group = hashlib.sha256(b"vertimrf/group-secret" + self.secret).hexdigest()
        config_hash = self.config.config_hash()
        key = derive(self.local, "data-commitment", config_hash, self.name, group)
        return mac(key, self.records.digest().encode())

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
            return derive(self.local, "tokens-seal", *bound, what)

        server = PublicKey(dealer, admit.server)
        return TokenSeal(server, derived("key"), derived("nonce")[:12], derived("seal"))

    def columns(self, r0: int, r1: int) -> np.ndarray:
        """The one-hot columns of this party's singles in padded rows r0:r1 (-1: padding)."""
        return self.records.aligned().columns(r0, r1, self.offsets)


def checked_bins(
    bins: Mapping[str, BinMap] | None, name: str, spec: DomainSpec, config: ProtocolConfig,
    plan: SecurePlan,
) -> Mapping[str, BinMap]:  # fmt: skip
    """The bin maps of exactly this party's binned columns, each with the plan's size."""
    binned = set(config.binned_columns())
    want = sorted(c for c in spec.names if c in binned)
    got = {} if bins is None else dict(bins)
    if sorted(got) != want:
        raise ConfigError(
            f"party {name!r} needs the bin maps of {want} (from its local release); "
            f"got {sorted(got)}."
        )
    for c, m in got.items():
        if m.n_bins != plan.sizes[config.spec.names.index(c)]:
            raise ConfigError(f"the bin map of {c!r} has {m.n_bins} bins, not the plan's.")
    return got


def cut_spec(
    table: Input, spec: DomainSpec, config: ProtocolConfig, plan: SecurePlan, owner: Owner,
    ledger: PrivacyLedger, local: bytes, seed: int | None,
) -> DomainSpec:  # fmt: skip
    """The party's ``spec`` with the DP quantile cuts of its columns cut at quantiles,
    drawn from the counts of its values on their candidate grids (charged before their
    draw), from a keyed stream bound to the run, this party and those counts: every
    process of the run draws the same cuts and encodes its table with them."""
    rhos = plan.quantile_columns(owner.index)
    grid = grid_spec(spec, list(rhos)) if rhos else None
    counts: list[np.ndarray] = []
    if grid is not None:
        count = value_counts(table, grid, owner, config.id_type)
        if count is None:
            raise ConfigError(
                f"party {owner.name!r}: a table given as codes holds no values to cut at "
                "quantiles: give the DataFrame, or the column's cut points (scale 'cuts')."
            )
        counts = count()
    by_column = dict(zip(list(rhos), counts, strict=True))
    if seed is not None:
        noise = randomness(role_seed(seed, f"{owner.name}/quantile"))[0]
    else:
        digest = sha256_parts(*(np.ascontiguousarray(n, "<i8").tobytes() for n in counts))
        bound = (config.config_hash(), owner.name, "quantile", digest)
        noise = KeyedSampler(local, "party-quantile", *bound)
    return measured_cuts(spec, by_column, rhos, noise=noise, ledger=ledger, party=owner.name)


def open_session(
    name: str, data: Input, config: ProtocolConfig | RunSetup, secret: bytes,
    keypair: KeyPair, peers: Mapping[str, PublicKey], *, id_column: str = "id",
    ids: RecordIds | None = None, seed: int | None = None,
    bins: Mapping[str, BinMap] | None = None,
) -> tuple[PartySession, Callable[[], list[np.ndarray]] | None]:  # fmt: skip
    """Party ``name``'s session (arguments as for
    :class:`~vertimrf.party.secure.party.SecureParty`): its spec (cut at DP quantiles where
    the config says so), its records opened in the plan's layout, its keys and ledger; and
    the counts of its fine histograms, to be taken once (None when it releases none)."""
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
    fine_counts = None if fines is None else value_counts(data, fines, owner, config.id_type)
    if fines is not None and fine_counts is None:
        raise ConfigError(
            f"party {name!r}: a table given as codes holds no values to place inside "
            "their bins: give the DataFrame, or set values 'uniform' "
            "(secure_values='uniform')."
        )
    HashKeys.from_secret(secret, 1)  # checks the secret
    keys = {q: pairwise_key(keypair, peers[q], context) for q in plan.names if q != name}
    session = PartySession(
        name, index, config, plan, spec, cross_product(config.product), keypair, secret,
        local, context, owner, keys, ledger, records, seed, fines,
        np.asarray(plan.offsets[index], np.int64),
    )  # fmt: skip
    return session, fine_counts
