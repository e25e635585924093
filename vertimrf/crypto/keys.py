"""X25519 keys: a party's key pair and public key, the pairwise key of two
parties, sealed boxes; design notes in docs/design/crypto.md."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from vertimrf.crypto.identity import check_tls_pair, load_certificate, make_tls_identity
from vertimrf.crypto.kdf import KEY_BYTES, NONCE_BYTES, TAG_BYTES, check_key, hkdf
from vertimrf.errors import ChannelError, KeyMaterialError
from vertimrf.io import atomic_write_text, read_json

KEYPAIR_FORMAT = "vertimrf-x25519-keypair/1"
PUBLIC_FORMAT = "vertimrf-x25519-public/1"
SEAL_VERSION = 1

_FINGERPRINT_TAG = b"vertimrf/v1/channel/x25519-fingerprint"
_SEAL_INFO = b"vertimrf/v1/channel/seal-key"
_SEAL_AAD = b"vertimrf/v1/channel/seal-aad"
_PAIR_SALT = b"vertimrf/v1/channel/pairwise-salt"
_PAIR_INFO = b"vertimrf/v1/channel/pairwise-key"
_SEAL_HEADER = 1 + KEY_BYTES + NONCE_BYTES


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise KeyMaterialError(
            f"{where}: the key's name must be a non-empty printable string (the party's "
            f"name); got {name!r}."
        )
    return name


def _write_new(path: str | os.PathLike, data: dict[str, str], what: str) -> None:
    if os.path.lexists(path):
        raise KeyMaterialError(
            f"{path}: refusing to overwrite an existing {what}; move it away or choose "
            "another path."
        )
    # atomic_write_text writes a mkstemp file, so the file has mode 0600 from its first byte.
    atomic_write_text(path, json.dumps(data, indent=1) + "\n")


def _read_fields(
    path: str | os.PathLike,
    fmt: str,
    what: str,
    keys: tuple[str, ...],
    optional: tuple[str, ...] = (),
) -> dict[str, str]:
    data: Any = read_json(path, KeyMaterialError, what)
    if not isinstance(data, dict) or data.get("format") != fmt:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise KeyMaterialError(
            f"{path}: not a {what} (format {fmt!r} expected, found {found!r}); check that you "
            "passed the right file."
        )
    bad = [k for k in keys if not isinstance(data.get(k), str)]
    bad += [k for k in optional if k in data and not isinstance(data[k], str)]
    extra = sorted(set(data) - {"format", *keys, *optional})
    if bad or extra:
        raise KeyMaterialError(
            f"{path}: the {what} is corrupt (missing or non-string: {bad}, unknown: {extra}); "
            "restore it from the original."
        )
    return data


def _hex_key(path: str | os.PathLike, data: dict[str, str], key: str) -> bytes:
    try:
        raw = bytes.fromhex(data[key])
    except ValueError:
        raw = b""
    if len(raw) != KEY_BYTES:
        raise KeyMaterialError(
            f"{path}: the {key!r} field is not a {KEY_BYTES}-byte hex key; the file is "
            "corrupt, restore it from the original."
        )
    return raw


@dataclass(frozen=True)
class PublicKey:
    """A party's X25519 public key (32 raw bytes) under the party's name, and its TLS
    certificate (PEM; None in key files made before the network service)."""

    name: str
    raw: bytes
    certificate: str | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _check_name(self.name, "PublicKey")
        if not isinstance(self.raw, bytes) or len(self.raw) != KEY_BYTES:
            raise KeyMaterialError(
                f"PublicKey {self.name!r}: an X25519 public key is {KEY_BYTES} raw bytes; got "
                f"{self.raw!r:.80}."
            )

    @property
    def fingerprint(self) -> str:
        """8 groups of 4 hex digits, to compare out of band (e.g. ``3f2a 9c01 ...``)."""
        digest = hashlib.sha256(_FINGERPRINT_TAG + self.raw).hexdigest()[:32]
        return " ".join(digest[i : i + 4] for i in range(0, 32, 4))

    def save(self, path: str | os.PathLike) -> None:
        """Write the key as JSON to a new file (atomically; never overwrites)."""
        data = {"format": PUBLIC_FORMAT, "name": self.name, "public": self.raw.hex()}
        if self.certificate is not None:
            data["certificate"] = self.certificate
        _write_new(path, data, "public key file")

    @classmethod
    def load(cls, path: str | os.PathLike) -> PublicKey:
        """Read a file written by :meth:`save`."""
        data = _read_fields(
            path, PUBLIC_FORMAT, "public key file", ("name", "public"), ("certificate",)
        )
        certificate = data.get("certificate")
        if certificate is not None:
            load_certificate(certificate, str(path))
        name = _check_name(data["name"], str(path))
        return cls(name, _hex_key(path, data, "public"), certificate)

    def _x25519(self) -> X25519PublicKey:
        return X25519PublicKey.from_public_bytes(self.raw)


@dataclass(frozen=True, eq=False)
class KeyPair:
    """A party's X25519 key pair under the party's name; the private key is never shown.

    ``tls_key`` and ``tls_certificate`` (PEM) are the role's TLS identity for the network
    service (:mod:`vertimrf.crypto.identity`); None in key files made before it.
    """

    name: str
    private_key: X25519PrivateKey = field(repr=False)
    tls_key: str | None = field(default=None, repr=False)
    tls_certificate: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_name(self.name, "KeyPair")
        if not isinstance(self.private_key, X25519PrivateKey):
            raise KeyMaterialError(
                f"KeyPair {self.name!r} needs an X25519PrivateKey; got "
                f"{type(self.private_key).__name__}. Use KeyPair.generate or KeyPair.load."
            )

    @classmethod
    def generate(cls, name: str, hosts: Iterable[str] = ()) -> KeyPair:
        """A fresh key pair for the party ``name``, from the OS CSPRNG, with a TLS identity
        whose certificate names ``hosts`` (beside localhost and 127.0.0.1)."""
        _check_name(name, "KeyPair")
        tls_key, tls_certificate = make_tls_identity(name, hosts)
        return cls(name, X25519PrivateKey.generate(), tls_key, tls_certificate)

    @classmethod
    def from_private_bytes(cls, name: str, private: bytes) -> KeyPair:
        """The key pair of the party ``name`` whose X25519 private key is the 32 bytes
        ``private`` (no TLS identity): for seeded, in-process experiments only."""
        _check_name(name, "KeyPair")
        if not isinstance(private, bytes) or len(private) != 32:
            raise KeyMaterialError(f"KeyPair {name!r} needs 32 private key bytes.")
        return cls(name, X25519PrivateKey.from_private_bytes(private))

    @property
    def public_bytes(self) -> bytes:
        """The 32 raw bytes of the public key."""
        return self.private_key.public_key().public_bytes_raw()

    def public(self) -> PublicKey:
        """The public half (and the TLS certificate), to give to the server and the peers."""
        return PublicKey(self.name, self.public_bytes, self.tls_certificate)

    def local_secret(self) -> bytes:
        """32 bytes only this key's holder can compute, for its own keyed noise
        (:class:`vertimrf.privacy.samplers.KeyedSampler`); never sent, never the group
        secret."""
        return hkdf(self.private_key.private_bytes_raw(), b"", b"vertimrf/local-secret")

    def save(self, path: str | os.PathLike) -> None:
        """Write the key pair as JSON to a new file of mode 0600 (atomically; never overwrites)."""
        data = {
            "format": KEYPAIR_FORMAT,
            "name": self.name,
            "private": self.private_key.private_bytes_raw().hex(),
            "public": self.public_bytes.hex(),
        }
        if self.tls_key is not None and self.tls_certificate is not None:
            data["tls_key"], data["tls_certificate"] = self.tls_key, self.tls_certificate
        _write_new(path, data, "key pair file")

    @classmethod
    def load(cls, path: str | os.PathLike) -> KeyPair:
        """Read a file written by :meth:`save`, checking that its two halves match."""
        data = _read_fields(
            path,
            KEYPAIR_FORMAT,
            "key pair file",
            ("name", "private", "public"),
            ("tls_key", "tls_certificate"),
        )
        name = _check_name(data["name"], str(path))
        tls_key, tls_certificate = data.get("tls_key"), data.get("tls_certificate")
        if (tls_key is None) != (tls_certificate is None):
            raise KeyMaterialError(
                f"{path}: the TLS identity is half missing; the file is corrupt."
            )
        if tls_key is not None and tls_certificate is not None:
            check_tls_pair(tls_key, tls_certificate, str(path))
        private = X25519PrivateKey.from_private_bytes(_hex_key(path, data, "private"))
        pair = cls(name, private, tls_key, tls_certificate)
        if pair.public_bytes != _hex_key(path, data, "public"):
            raise KeyMaterialError(
                f"{path}: the public key does not belong to the private key; the file is "
                "corrupt, restore it from the original."
            )
        return pair


def _exchange(private_key: X25519PrivateKey, peer: X25519PublicKey) -> bytes:
    try:
        return private_key.exchange(peer)
    except ValueError:
        raise KeyMaterialError(
            "the X25519 exchange gave the all-zero secret: the peer's public key is a "
            "low-order point, not a real key. Ask the peer for its key again and check its "
            "fingerprint."
        ) from None


def seal(
    recipient: PublicKey, plaintext: bytes, aad: bytes, *, randomness: bytes | None = None
) -> bytes:
    """Encrypt ``plaintext`` so that only ``recipient`` can open it, bound to ``aad``.

    Blob: version byte || ephemeral public key || nonce || AES-256-GCM ciphertext.
    ``randomness`` (32 secret bytes that determine the plaintext, so that one value never
    seals two plaintexts) makes the ephemeral key and the nonce, and so the blob,
    reproducible; without it both are fresh from the OS CSPRNG.
    """
    if randomness is None:
        ephemeral = X25519PrivateKey.generate()
        nonce = os.urandom(NONCE_BYTES)
    else:
        r = check_key(randomness, "the sealing randomness")
        ephemeral = X25519PrivateKey.from_private_bytes(hkdf(r, b"", b"vertimrf/seal-ephemeral"))
        nonce = hkdf(r, b"", b"vertimrf/seal-nonce")[:NONCE_BYTES]
    ephemeral_public = ephemeral.public_key().public_bytes_raw()
    secret = _exchange(ephemeral, recipient._x25519())
    key = hkdf(secret, ephemeral_public + recipient.raw, _SEAL_INFO)
    ciphertext = AESGCM(key).encrypt(nonce, plaintext, _SEAL_AAD + aad)
    return bytes([SEAL_VERSION]) + ephemeral_public + nonce + ciphertext


def open_sealed(keypair: KeyPair, blob: bytes, aad: bytes) -> bytes:
    """Open a blob made by :func:`seal` for ``keypair`` with the same ``aad``."""
    hint = (
        f"this deal was not sealed to {keypair.name}'s key, or belongs to another run, or was "
        "altered: check that the server dealt with the public key you gave it and that you use "
        "this run's config"
    )
    if not isinstance(blob, bytes) or len(blob) < _SEAL_HEADER + TAG_BYTES:
        size = len(blob) if isinstance(blob, bytes) else type(blob).__name__
        raise ChannelError(f"the sealed deal is truncated or not bytes ({size}); {hint}.")
    if blob[0] != SEAL_VERSION:
        raise ChannelError(
            f"the sealed deal has version {blob[0]}, this vertimrf reads version "
            f"{SEAL_VERSION}; {hint}, and that every role runs the same vertimrf version."
        )
    ephemeral_public = blob[1 : 1 + KEY_BYTES]
    nonce = blob[1 + KEY_BYTES : _SEAL_HEADER]
    try:
        secret = keypair.private_key.exchange(X25519PublicKey.from_public_bytes(ephemeral_public))
        key = hkdf(secret, ephemeral_public + keypair.public_bytes, _SEAL_INFO)
        return AESGCM(key).decrypt(nonce, blob[_SEAL_HEADER:], _SEAL_AAD + aad)
    except (InvalidTag, ValueError):
        raise ChannelError(f"{hint}.") from None


def pairwise_key(own: KeyPair, peer: PublicKey, context: bytes) -> bytes:
    """The 32-byte key ``own`` and ``peer`` share for ``context`` (e.g. the run's config hash).

    Both sides derive the same key: the public keys enter HKDF in sorted order.
    """
    mine = own.public_bytes
    if peer.raw == mine:
        raise KeyMaterialError(
            f"the peer key {peer.name!r} is {own.name}'s own public key; a pairwise key needs "
            "two different parties. Check which public key files were passed."
        )
    secret = _exchange(own.private_key, peer._x25519())
    first, second = sorted((mine, peer.raw))
    return hkdf(secret, _PAIR_SALT, _PAIR_INFO + context + first + second)


def load_public_keys(paths: Iterable[str | os.PathLike]) -> dict[str, PublicKey]:
    """Public key files by party name; a second key of one name raises KeyMaterialError."""
    keys: dict[str, PublicKey] = {}
    for path in paths:
        key = PublicKey.load(path)
        if key.name in keys:
            raise KeyMaterialError(f"{path}: a second public key of {key.name!r}; give one each.")
        keys[key.name] = key
    return keys
