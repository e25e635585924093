"""The run's one key schedule: every keyed stream derives here (docs/design/crypto.md)."""

from __future__ import annotations

import hashlib
import hmac

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF, HKDFExpand

from vertimrf.errors import KeyMaterialError

__all__ = [
    "STREAMS",
    "admit_digest",
    "derive",
    "hash_key_words",
    "mac",
    "record_set_mac_key",
]

_SALT = b"vertimrf/keyed-noise"  # the schedule's HKDF salt (unchanged since the first release)
_SIP_SALT = b"vertimrf/v1/hkdf-salt/fm-sketch-keys"
_SIP_INFO = b"vertimrf/v1/fm-sketch-key"
_RECORD_SET_SALT = b"vertimrf/secure-record-set"

# Every stream :func:`derive` keys, and who holds its secret. The 64-bit PRFs (the row order,
# the order tokens, the FM sketches' and method fo's keys) take their SipHash keys from
# :func:`hash_key_words`, the MACs of record sets theirs from :func:`record_set_mac_key`.
STREAMS: dict[str, str] = {
    "record-token": "group",  # a record's token sent to the server (bound to the admit digest)
    "region-dummies": "group",  # d_T and the tokens of a region of several parties
    "own-dummies": "own",  # d_T and the tokens of the party's own region {p}
    "data-commitment": "own",  # the commitment's MAC key (bound to the group secret too)
    "tokens-seal": "own",  # the key, nonce and sealing randomness of the tokens message
    "party-noise": "own",  # a party's DP noise
    "party-quantile": "own",  # a party's DP quantile cuts (before it encodes its table)
    "feature-nonce": "own",  # the nonce of a party's feature blob
    "group-nonce": "own",  # the nonce of a party's round-2 blob
    "coin-bits": "own",  # a party's coins toward a peer in one release (cross_noise "coins")
    "coin-nonce": "own",  # the nonce of a party's coin blob
    "server-noise": "own",  # the server's share of the cross noise
    "server-deal": "own",  # the server's masks, seeds, slot-map keys and deal sealing
    "dealer-deal": "own",  # the same, dealt by a dealer of its own (config dealer="own")
    "region-counts": "own",  # the server's noise on the region counts
    "slots": "own",  # the key of the slots' permutation
    "slot-assignment": "own",  # the digest of the slot assignment
    "paillier-key": "own",  # an encrypter's Paillier key pair for one run and pair
    "paillier-randomisers": "own",  # the randomisers of an encrypter's Paillier ciphertexts
    "paillier-masks": "own",  # an aggregator's slot masks and re-randomisers of its reply
    "reply-nonce": "own",  # the nonce of an aggregator's reply (product "paillier")
    "group-reply-nonce": "own",  # the nonce of its round-2 reply
}


def _encoded(parts: tuple[bytes | str, ...]) -> bytes:
    """The parts length-prefixed (8 bytes little-endian each), so no two lists collide."""
    raw = (p.encode("utf-8") if isinstance(p, str) else bytes(p) for p in parts)
    return b"".join(len(b).to_bytes(8, "little") + b for b in raw)


def _secret(secret: object) -> bytes:
    if not isinstance(secret, bytes | bytearray) or len(secret) < 16:
        raise KeyMaterialError("a keyed stream needs a secret of at least 16 bytes.")
    return bytes(secret)


def derive(secret: bytes, stream: str, *inputs: bytes | str) -> bytes:
    """The 32-byte key of ``stream`` under ``secret``, bound to the step's ``inputs``
    (HKDF-SHA256); KeyMaterialError for a stream not in :data:`STREAMS`."""
    if stream not in STREAMS:
        raise KeyMaterialError(f"{stream!r} is not a stream of the key schedule.")
    info = _encoded((stream, *inputs))
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=_SALT, info=info).derive(_secret(secret))


def mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of ``data`` under a ``key`` from :func:`derive`."""
    return hmac.new(_secret(key), data, hashlib.sha256).digest()


def hash_key_words(secret: bytes, count: int, context: bytes) -> bytes:
    """``count`` 16-byte SipHash keys, concatenated, from ``secret`` for ``context`` (HKDF
    extract with the sketch-keys salt, then one expand per key: the FM method's, and every
    keyed 64-bit PRF's, :class:`vertimrf.party.keys.HashKeys`)."""
    prk = hmac.new(_SIP_SALT, _secret(secret), hashlib.sha256).digest()
    prefix = _SIP_INFO + len(context).to_bytes(4, "big") + context
    return b"".join(
        HKDFExpand(algorithm=hashes.SHA256(), length=16, info=prefix + i.to_bytes(8, "big")).derive(
            prk
        )
        for i in range(count)
    )


def record_set_mac_key(secret: bytes, context: bytes) -> bytes:
    """The MAC key of a record-set digest (equal record sets), from the group secret and the
    run (HKDF extract with the record-set salt, then expand)."""
    prk = hmac.new(_RECORD_SET_SALT, _secret(secret), hashlib.sha256).digest()
    return HKDFExpand(algorithm=hashes.SHA256(), length=32, info=context).derive(prk)


def admit_digest(commit_set: bytes, public_keys: dict[str, bytes]) -> bytes:
    """The admit digest: the digest of every party's commitments (``commit_set``) and of
    every role's public key (``public_keys``, raw, by name; the server's included), so that
    a new key pair at any role, like a changed table, gives every later stream fresh keys."""
    h = hashlib.sha256(b"vertimrf/admit")
    h.update(commit_set)
    for name in sorted(public_keys):
        h.update(_encoded((name, public_keys[name])))
    return h.digest()
