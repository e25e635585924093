"""The parties' group secret, passed to the peers through the server: one party draws it and
seals a copy for each peer under their pairwise key (AES-GCM, bound to sender and receiver),
so the server relays the sealed copies but cannot open them, and each peer knows whom its
copy came from."""

from __future__ import annotations

from collections.abc import Mapping

from vertimrf.crypto.aead import decrypt, encrypt
from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.errors import ChannelError, KeyMaterialError
from vertimrf.party.keys import MIN_SECRET_BYTES, new_shared_secret

GROUP_SECRET_CONTEXT = b"vertimrf/group-secret"
# A sealed secret: the 12-byte nonce, the 32-byte secret and the 16-byte tag, well below this.
MAX_SEALED_BYTES = 1024


def _aad(sender: str, receiver: str) -> bytes:
    """Associated data of the group secret ``sender`` seals for ``receiver``."""
    return f"group-secret/{sender}->{receiver}".encode()


def share_group_secret(
    own: KeyPair, peers: Mapping[str, PublicKey]
) -> tuple[bytes, dict[str, bytes]]:
    """A fresh group secret, and a copy sealed by ``own`` for each of ``peers`` (by name)."""
    if own.name in peers:
        raise KeyMaterialError(
            f"the peers include {own.name!r}'s own public key; list the peers only."
        )
    secret = new_shared_secret()
    sealed = {
        peer: encrypt(pairwise_key(own, key, GROUP_SECRET_CONTEXT), secret, _aad(own.name, peer))
        for peer, key in peers.items()
    }
    return secret, sealed


def open_group_secret(own: KeyPair, sender: PublicKey, sealed: bytes) -> bytes:
    """The group secret ``sender`` sealed for ``own``; ChannelError if it was sealed by
    another sender, for another receiver, or altered."""
    key = pairwise_key(own, sender, GROUP_SECRET_CONTEXT)
    try:
        secret = decrypt(key, sealed, _aad(sender.name, own.name))
    except ChannelError:
        raise ChannelError(
            f"not a group secret sealed by {sender.name!r} for {own.name!r} (another sender or "
            "recipient, or altered); check the sender's public key and compare fingerprints."
        ) from None
    if len(secret) != MIN_SECRET_BYTES:
        raise KeyMaterialError(f"the sealed secret is not {MIN_SECRET_BYTES} bytes.")
    return secret
