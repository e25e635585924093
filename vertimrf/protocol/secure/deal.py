"""A deal: one party's correlated randomness from the server, sealed to its key; and a
round-2 deal, for the groups of the request."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vertimrf.container import npz_bytes
from vertimrf.crypto.keys import KeyPair, PublicKey, open_sealed, seal
from vertimrf.errors import ChannelError, MessageError
from vertimrf.protocol.secure.wire import DIGEST_BYTES, SEED_BYTES, unpack


@dataclass(frozen=True)
class CoinDeal:
    """A party's randomness for one release's coins (cross_noise "coins"; empty otherwise):
    the seed of its coin mask toward each peer; where it is the lower party of a pair, the
    seed of the pair's W_C; where it is the higher one, Z_C = diag(C_p C_q^T) - W_C."""

    seeds_c: dict[str, bytes] = field(default_factory=dict)
    seeds_w: dict[str, bytes] = field(default_factory=dict)
    z: dict[str, np.ndarray] = field(default_factory=dict)

    def arrays(self) -> dict[str, np.ndarray]:
        """Its entries in a deal's archive (none when empty: a split deal keeps its bytes)."""
        out = {f"cs/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_c.items()}
        out.update({f"cw/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_w.items()})
        out.update({f"cz/{k}": np.ascontiguousarray(v, np.uint64) for k, v in self.z.items()})
        return out

    @classmethod
    def take(cls, arrays: dict[str, np.ndarray]) -> CoinDeal:
        """The coin entries of a deal's ``arrays``, removed from it (MessageError when a
        seed is not 32 bytes)."""
        parts: dict[str, dict] = {"cs": {}, "cw": {}, "cz": {}}
        for key in [k for k in arrays if k.partition("/")[0] in parts]:
            kind, _, peer = key.partition("/")
            value = arrays.pop(key)
            parts[kind][peer] = value.astype(np.uint64) if kind == "cz" else value.tobytes()
        if any(len(v) != SEED_BYTES for k in ("cs", "cw") for v in parts[k].values()):
            raise MessageError("the deal's coin seeds are not 32 bytes.")
        return cls(parts["cs"], parts["cw"], parts["cz"])


def deal_aad(context: bytes, party: str) -> bytes:
    """Associated data of the deal for ``party`` in the run ``context``."""
    return context + b"/secure-deal/" + party.encode("utf-8")


@dataclass(frozen=True)
class Deal:
    """One party's correlated randomness from the server (secret from everyone else), made
    for the parties' data commitments: ``commit_set`` is the digest of every party's
    commitment (:func:`commit_set_digest`), ``commitment`` this party's own, which it checks
    against the one it sent (a deal made for other data is refused). With partial record
    sets it also opens the party's slot map (a message of its own, :func:`write_slot_map`):
    its key, the SHA-256 of its plaintext, the count of its real slots, and the digest of
    the whole slot assignment."""

    seed_u: bytes
    seeds_w: dict[str, bytes] = field(default_factory=dict)
    z: dict[str, np.ndarray] = field(default_factory=dict)
    commit_set: bytes = b""
    commitment: bytes = b""
    slot_key: bytes = b""  # partial record sets: the key of this party's slot map
    slot_digest: bytes = b""  # partial record sets: SHA-256 of the slot map's plaintext
    slot_count: int = 0  # partial record sets: the party's tokens (its real slots)
    assignment: bytes = b""  # partial record sets: the digest of the whole slot assignment
    coins: CoinDeal = field(default_factory=CoinDeal)  # the first release's coins

    def seal(
        self, recipient: PublicKey, context: bytes, *, randomness: bytes | None = None
    ) -> bytes:
        """The deal encrypted to ``recipient`` for this run (``randomness``: see
        :func:`vertimrf.crypto.keys.seal`)."""
        arrays = {
            "u": np.frombuffer(self.seed_u, np.uint8),
            "t": np.frombuffer(self.commit_set, np.uint8),
            "c": np.frombuffer(self.commitment, np.uint8),
        }
        if self.slot_key:
            arrays["k"] = np.frombuffer(self.slot_key, np.uint8)
            arrays["h"] = np.frombuffer(self.slot_digest, np.uint8)
            arrays["n"] = np.array([self.slot_count], "<u8")
            arrays["a"] = np.frombuffer(self.assignment, np.uint8)
        arrays.update({f"w/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_w.items()})
        arrays.update({f"z/{k}": np.ascontiguousarray(v, np.uint64) for k, v in self.z.items()})
        arrays.update(self.coins.arrays())
        return seal(
            recipient, npz_bytes(arrays), deal_aad(context, recipient.name), randomness=randomness
        )

    @classmethod
    def open(cls, blob: bytes, keypair: KeyPair, context: bytes) -> Deal:
        """Open a deal sealed to ``keypair`` for this run (ChannelError otherwise)."""
        arrays = unpack(open_sealed(keypair, blob, deal_aad(context, keypair.name)), "the deal")
        coins = CoinDeal.take(arrays)
        try:
            seed_u = arrays.pop("u").tobytes()
            commit_set, commitment = arrays.pop("t").tobytes(), arrays.pop("c").tobytes()
            slot = [arrays.pop(k).tobytes() if k in arrays else b"" for k in "kha"]
            count = arrays.pop("n") if "n" in arrays else np.zeros(1, "<u8")
            seeds_w = {k[2:]: v.tobytes() for k, v in arrays.items() if k.startswith("w/")}
            z = {k[2:]: v.astype(np.uint64) for k, v in arrays.items() if k.startswith("z/")}
        except KeyError:
            raise MessageError("the deal has no mask seed or no commitments.") from None
        if len(seed_u) != SEED_BYTES or any(len(s) != SEED_BYTES for s in seeds_w.values()):
            raise MessageError("the deal's seeds are not 32 bytes.")
        if len(commit_set) != DIGEST_BYTES or len(commitment) != DIGEST_BYTES:
            raise MessageError("the deal's commitments are not 32 bytes.")
        if any(slot) and (any(len(v) != DIGEST_BYTES for v in slot) or count.shape != (1,)):
            raise MessageError("the deal's slot map key, digests or count are malformed.")
        key, digest, assignment = slot
        return cls(
            seed_u, seeds_w, z, commit_set, commitment, key, digest, int(count[0]), assignment,
            coins,
        )  # fmt: skip


def group_deal_aad(context: bytes, party: str, request: str) -> bytes:
    """Associated data of the round-2 deal for ``party`` in the run ``context``, made for
    the request of digest ``request`` (it opens with that request only)."""
    return b"/".join((context, b"secure-group-deal", party.encode("utf-8"), request.encode()))


@dataclass(frozen=True)
class GroupDeal:
    """One party's round-2 randomness, for the groups of the request (secret from everyone
    else): the seed of its fresh mask toward each peer; where it is the lower party of a
    pair that grows, the seed of that pair's W (its blocks A and B); where it is the higher
    one, Z_A = U2_p^T [V_q | V2_q] - W_A and Z_B = U_p^T V2_q - W_B."""

    seeds_u: dict[str, bytes] = field(default_factory=dict)
    seeds_w: dict[str, bytes] = field(default_factory=dict)
    z_a: dict[str, np.ndarray] = field(default_factory=dict)
    z_b: dict[str, np.ndarray] = field(default_factory=dict)
    coins: CoinDeal = field(default_factory=CoinDeal)  # the re-measurement's coins

    def seal(
        self,
        recipient: PublicKey,
        context: bytes,
        request: str,
        *,
        randomness: bytes | None = None,
    ) -> bytes:
        """The deal encrypted to ``recipient`` for this run and the request of digest
        ``request``."""
        arrays = {f"u/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_u.items()}
        arrays.update({f"w/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_w.items()})
        for name, z in (("a", self.z_a), ("b", self.z_b)):
            arrays.update({f"{name}/{k}": np.ascontiguousarray(v, np.uint64) for k, v in z.items()})
        arrays.update(self.coins.arrays())
        aad = group_deal_aad(context, recipient.name, request)
        return seal(recipient, npz_bytes(arrays), aad, randomness=randomness)

    @classmethod
    def open(cls, blob: bytes, keypair: KeyPair, context: bytes, request: str) -> GroupDeal:
        """Open a round-2 deal sealed to ``keypair`` for this run and the request of digest
        ``request`` (MessageError when it was made for another request or is not this
        party's)."""
        aad = group_deal_aad(context, keypair.name, request)
        try:
            plain = open_sealed(keypair, blob, aad)
        except ChannelError:
            raise MessageError(
                "the round-2 deal does not open for this request: it was made for another "
                "request, or for another party or run; use the round-2 deal the server made "
                "with this request."
            ) from None
        arrays = unpack(plain, "the round-2 deal")
        coins = CoinDeal.take(arrays)
        parts: dict[str, dict] = {"u": {}, "w": {}, "a": {}, "b": {}}
        for key, value in arrays.items():
            kind, _, peer = key.partition("/")
            if kind not in parts or not peer:
                raise MessageError(f"the round-2 deal holds an unknown entry {key!r}.")
            parts[kind][peer] = value.tobytes() if kind in "uw" else value.astype(np.uint64)
        if any(len(v) != SEED_BYTES for k in "uw" for v in parts[k].values()):
            raise MessageError("the round-2 deal's seeds are not 32 bytes.")
        return cls(parts["u"], parts["w"], parts["a"], parts["b"], coins)
