"""The dealer, the server's one cryptographic step: seeds and deals, each sealed
to its party; design notes in docs/design/server.md."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from hashlib import sha256

import numpy as np

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.crypto.schedule import admit_digest, derive
from vertimrf.errors import MessageError
from vertimrf.product import dealing
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.commit import Admit, commit_set_digest
from vertimrf.protocol.secure.deal import CoinDeal, Deal, GroupDeal
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT, SecurePlan
from vertimrf.protocol.secure.product import Dealing
from vertimrf.protocol.seeds import DEALER, SERVER
from vertimrf.server.secure.record_sets import RecordSets
from vertimrf.server.slots import TokenSource

# The label every deal key derives under, by the dealing role.
DEAL_LABELS = {SERVER: "server-deal", DEALER: "dealer-deal"}


class Dealer:
    """The deals (module doc): :meth:`admit`, :meth:`deal` (round 1) and :meth:`group_deals`
    (round 2), under the dealing role's ``keypair`` (its own secret keys every deal; its
    name, the server or the dealer, the role), ``stream`` (the secret of its slot
    assignment's keyed streams) and the run's ``record_sets``."""

    def __init__(
        self,
        config: ProtocolConfig,
        plan: SecurePlan,
        keypair: KeyPair,
        stream: bytes,
        record_sets: RecordSets,
    ) -> None:
        self.config, self.plan, self.record_sets = config, plan, record_sets
        self.product: Dealing = dealing(config.product)
        self._keypair, self._secret, self._stream = keypair, keypair.local_secret(), stream
        self.role = config.dealer_role  # the server, or an own dealer
        self._label = DEAL_LABELS[self.role]
        self.commit_set: bytes | None = None  # the deal's commitments (see _dealer)
        self.public_keys: dict[str, PublicKey] | None = None

    def _dealer(self, public_keys: Mapping[str, PublicKey]) -> Callable[..., bytes]:
        """The server's deal keys for this run, these parties' keys and their data
        commitments: 32 bytes per label, derived from its own secret (a re-run on the same
        commitments deals the same bytes; a party whose data changed commits anew, and
        every mask changes with it, so no mask is used on two different tables)."""
        missing = sorted(set(self.plan.names) - set(public_keys))
        if missing:
            raise MessageError(f"the {self.role} needs the public keys of {missing} to deal.")
        if self.commit_set is None:
            raise MessageError(f"the {self.role} deals only on every party's data commitment.")
        keys = sha256()
        for name in self.plan.names:
            keys.update(name.encode() + b"\0" + public_keys[name].raw)
        label: tuple[str, ...] = (
            self.config.config_hash(),
            keys.hexdigest(),
            self.commit_set.hex(),
            *self.record_sets.deal_label(),  # partial record sets: bound to the slots too
        )

        def derived(*what: str) -> bytes:
            return derive(self._secret, self._label, *label, *what)

        return derived

    def admit(
        self, commitments: Mapping[str, bytes], public_keys: Mapping[str, PublicKey]
    ) -> Admit:
        """The admit digest, the digest of every party's data ``commitments`` and of every
        role's public key (``public_keys``, the parties', and the server's own), public:
        each party keys its tokens by it, and the deal's masks are bound to it. With the
        server's public key, which each party seals its tokens to."""
        missing = sorted(set(self.plan.names) - set(commitments))
        if missing:
            raise MessageError(f"the {self.role} needs the data commitments of {missing}.")
        unkeyed = sorted(set(self.plan.names) - set(public_keys))
        if unkeyed:
            raise MessageError(
                f"the {self.role} needs the public keys of {unkeyed} to admit: give every party's "
                "public key file."
            )
        keys = {name: public_keys[name].raw for name in self.plan.names}
        keys[self.role] = self._keypair.public_bytes
        commit_set = commit_set_digest(dict(commitments), self.plan.names)
        self.commit_set = admit_digest(commit_set, keys)
        return Admit(self.commit_set, self._keypair.public_bytes)

    def deal(
        self,
        public_keys: Mapping[str, PublicKey],
        commitments: Mapping[str, bytes],
        tokens: Mapping[str, TokenSource | np.ndarray] | None = None,
    ) -> dict[str, bytes]:
        """Step 0: one sealed deal per party, made for every party's data ``commitments``
        (each party's commit message, :func:`~vertimrf.protocol.secure.commit.read_commit`);
        with partial record sets also for every party's ``tokens`` (sorted lists,
        :meth:`~vertimrf.party.secure.SecureParty.tokens`, read by blocks): each party's
        slots are then written to its slot map (a file, :meth:`RecordSets.slot_maps`), which
        its deal opens, and the region counts are published (:attr:`RecordSets.released`)."""
        plan, ctx = self.plan, self.config.run_context()
        commit_set = self.admit(commitments, public_keys).digest
        self.record_sets.assign(tokens, self._stream, ctx, self.config.expected_shared)
        derived = self._dealer(public_keys)
        self.public_keys = dict(public_keys)
        slot_maps = self.record_sets.write_slot_maps(derived, ctx)
        seeds_u = [derived("U", name) for name in plan.names]
        seeds_w = {(p, q): derived("W", plan.names[p], plan.names[q]) for p, q in plan.pairs()}
        z = self.product.deal(plan, seeds_u, seeds_w)
        coins = self._coins(derived, SELECT, Request(tuple(plan.first_release())))
        deals = {}
        for p, name in enumerate(plan.names):
            key, digest, count = slot_maps.get(name, (b"", b"", 0))
            deal = Deal(
                seeds_u[p],
                {plan.names[q]: seeds_w[p, q] for (a, q) in plan.pairs() if a == p},
                {plan.names[a]: z[a, q] for (a, q) in plan.pairs() if q == p and (a, q) in z},
                commit_set,
                bytes(commitments[name]),
                key,
                digest,
                count,
                self.record_sets.assignment(),
                coins[name],
            )
            deals[name] = deal.seal(public_keys[name], ctx, randomness=derived("seal", name))
        return deals

    def kept(self) -> bytes:
        """What a dealer in a new process needs for round 2, as JSON: the commitments'
        digest the deal was made for, and the record sets' kept state (partial: the
        region counts and the slot assignment's digest)."""
        commit_set = None if self.commit_set is None else self.commit_set.hex()
        return json.dumps({"commit_set": commit_set, "sets": self.record_sets.kept()}).encode()

    def restore(self, kept: bytes) -> None:
        """Read back what :meth:`kept` gave (MessageError, one line, when malformed)."""
        try:
            data = json.loads(kept)
            commit_set = bytes.fromhex(data["commit_set"])
        except (ValueError, KeyError, TypeError):
            raise MessageError("the dealer's kept deal state is malformed.") from None
        if data.get("sets") is not None:
            self.record_sets.restore(data["sets"])
        self.commit_set = commit_set

    def group_deals(
        self, request: Request, public_keys: Mapping[str, PublicKey] | None = None
    ) -> dict[str, bytes]:
        """Step 2, after the server's selection: one sealed round-2 deal per party, for the
        groups of ``request`` (fresh masks, bound to the request and to the commitments the
        first deal was made for); ``public_keys`` default to those :meth:`deal` used."""
        if public_keys is None:
            if self.public_keys is None:
                raise MessageError("group_deals needs every party's public key.")
            public_keys = self.public_keys
        plan, ctx, names = self.plan, self.config.run_context(), self.plan.names
        derived = self._dealer(public_keys)
        digest = request.digest()
        layout = plan.layout(request.marginals)
        seeds_u = [derived("U", name) for name in names]
        ends = [(p, q) for p in range(len(names)) for q in range(len(names)) if p != q]
        seeds_u2 = {(p, q): derived("U2", names[p], names[q], digest) for p, q in ends}
        seeds_w2 = {(p, q): derived("W2", names[p], names[q], digest) for p, q in plan.pairs()}
        z = self.product.group_deal(plan, layout, seeds_u, seeds_u2, seeds_w2)
        coins = self._coins(derived, MEASURE, request)
        deals = {}
        for p, name in enumerate(names):
            deal = GroupDeal(
                {names[q]: seeds_u2[p, q] for q in range(len(names)) if q != p},
                {names[q]: seeds_w2[p, q] for (a, q) in z if a == p},
                {names[a]: z[a, q][0] for (a, q) in z if q == p},
                {names[a]: z[a, q][1] for (a, q) in z if q == p},
                coins[name],
            )
            seal = derived("seal2", name, digest)
            deals[name] = deal.seal(public_keys[name], ctx, digest, randomness=seal)
        return deals

    def _coins(
        self, derived: Callable[..., bytes], release: str, request: Request
    ) -> dict[str, CoinDeal]:
        """Each party's coin randomness for ``release`` of ``request`` (cross_noise
        "coins"; empty otherwise): its coin mask seed toward each peer, the pair's W_C seed
        (lower party) or Z_C (higher), all bound to the release and the request."""
        plan, names, digest = self.plan, self.plan.names, request.digest()
        shapes = plan.coin_shapes(release, request.marginals, request.bins)
        out = {name: CoinDeal() for name in names}
        for (p, q), shape in shapes.items():
            seeds = (
                derived("C", names[p], names[q], release, digest),
                derived("C", names[q], names[p], release, digest),
            )
            seed_w = derived("WC", names[p], names[q], release, digest)
            out[names[p]].seeds_c[names[q]], out[names[q]].seeds_c[names[p]] = seeds
            out[names[p]].seeds_w[names[q]] = seed_w
            out[names[q]].z[names[p]] = self.product.coin_deal(seeds, seed_w, shape, plan.word)
        return out
