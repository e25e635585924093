"""Encrypted channels of the secure protocol: party key pairs, sealed deals, pairwise blobs, PRG.

Each party holds an X25519 key pair and gives its public key to the server and its peers;
fingerprints are compared out of band. The server (dealer) seals each party's deal to that
party's public key; parties exchange blobs through the server under a pairwise key, and expand
seeds and pads with a cryptographic PRG. All primitives come from ``cryptography``.

Security argument, in short: a deal is sealed with an ephemeral X25519 key and AES-256-GCM, so
only the holder of the recipient's private key can open it. A pairwise key is an X25519 secret
the server never learns (it relays public keys only; a swapped key shows in the fingerprints),
passed through HKDF-SHA256 with the run context and both public keys, so it differs per pair
and per run. Every key serves one purpose: a distinct HKDF label derives the subkey of each
use. AES-GCM authenticates the ciphertext together with its associated data (run and purpose),
so a replayed, foreign or altered blob is refused rather than misread. ``expand`` is
AES-256-CTR from nonce zero under a subkey used for that label alone, so no keystream repeats.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import secrets
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from vertimrf.errors import ChannelError, ConfigError, KeyMaterialError
from vertimrf.io import atomic_write_text, read_json
from vertimrf.protocol.identity import check_tls_pair, load_certificate, make_tls_identity

KEYPAIR_FORMAT = "vertimrf-x25519-keypair/1"
PUBLIC_FORMAT = "vertimrf-x25519-public/1"
KEY_BYTES = 32
NONCE_BYTES = 12
SEAL_VERSION = 1

_FINGERPRINT_TAG = b"vertimrf/v1/channel/x25519-fingerprint"
_SEAL_INFO = b"vertimrf/v1/channel/seal-key"
_SEAL_AAD = b"vertimrf/v1/channel/seal-aad"
_PAIR_SALT = b"vertimrf/v1/channel/pairwise-salt"
_PAIR_INFO = b"vertimrf/v1/channel/pairwise-key"
_BLOB_SALT = b"vertimrf/v1/channel/blob-salt"
_BLOB_INFO = b"vertimrf/v1/channel/blob-key"
_BLOB_AAD = b"vertimrf/v1/channel/blob-aad"
_PRG_SALT = b"vertimrf/v1/channel/prg-salt"
_PRG_INFO = b"vertimrf/v1/channel/prg-key"
TAG_BYTES = 16
_SEAL_HEADER = 1 + KEY_BYTES + NONCE_BYTES
_PRG_CHUNK_BYTES = 1 << 20
_AES_BLOCK_BYTES = 16
_NOT_THIS_PEERS = (
    "the blob is not from this peer for this run and purpose (replayed, foreign or altered): "
    "check that both parties use this run's config and each other's public keys (compare "
    "fingerprints)."
)


def _hkdf(ikm: bytes, salt: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=salt, info=info).derive(ikm)


def _check_name(name: object, where: str) -> str:
    if not isinstance(name, str) or not name.strip() or not name.isprintable():
        raise KeyMaterialError(
            f"{where}: the key's name must be a non-empty printable string (the party's "
            f"name); got {name!r}."
        )
    return name


def _check_key(key: object, what: str) -> bytes:
    if not isinstance(key, bytes) or len(key) != KEY_BYTES:
        size = len(key) if isinstance(key, bytes) else type(key).__name__
        raise KeyMaterialError(
            f"{what} must be {KEY_BYTES} bytes (from pairwise_key or new_seed); got {size}."
        )
    return key


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
    service (:mod:`vertimrf.protocol.identity`); None in key files made before it.
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
        return _hkdf(self.private_key.private_bytes_raw(), b"", b"vertimrf/local-secret")

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
        r = _check_key(randomness, "the sealing randomness")
        ephemeral = X25519PrivateKey.from_private_bytes(_hkdf(r, b"", b"vertimrf/seal-ephemeral"))
        nonce = _hkdf(r, b"", b"vertimrf/seal-nonce")[:NONCE_BYTES]
    ephemeral_public = ephemeral.public_key().public_bytes_raw()
    secret = _exchange(ephemeral, recipient._x25519())
    key = _hkdf(secret, ephemeral_public + recipient.raw, _SEAL_INFO)
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
        key = _hkdf(secret, ephemeral_public + keypair.public_bytes, _SEAL_INFO)
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
    return _hkdf(secret, _PAIR_SALT, _PAIR_INFO + context + first + second)


def _buffer(data: object, what: str) -> memoryview:
    """A flat byte view of ``data`` (bytes, bytearray, memoryview, mmap or a C-contiguous
    array), without copying; ChannelError for anything else."""
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise ChannelError(f"{what} is not bytes ({type(data).__name__}).") from None
    if not view.c_contiguous:
        raise ChannelError(f"{what} is not a contiguous buffer.")
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def encrypt(key: bytes, plaintext: bytes, aad: bytes) -> bytes:
    """AES-256-GCM under a subkey of ``key``; blob: random 12-byte nonce || ciphertext."""
    return bytes(encrypt_buffer(key, plaintext, aad))


def encrypt_buffer(
    key: bytes, plaintext: object, aad: bytes, prefix: bytes = b"", *, nonce: bytes | None = None
) -> bytearray:
    """``prefix`` || the blob of :func:`encrypt`, written into one new buffer: the plaintext
    (any contiguous buffer, e.g. a numpy array) is read in place and the ciphertext is not
    copied again, so a multi-GB plaintext costs one output buffer. ``nonce`` (12 bytes) must
    be derived from everything that determines the plaintext, so that one nonce never
    encrypts two plaintexts under one key; by default it is fresh from the OS CSPRNG."""
    data = _buffer(plaintext, "the plaintext")
    pieces = (data[i : i + _PRG_CHUNK_BYTES] for i in range(0, len(data), _PRG_CHUNK_BYTES))
    return encrypt_chunks(key, pieces, len(data), aad, prefix, nonce=nonce)


def _encryptor(key: bytes, nonce: bytes | None, aad: bytes) -> tuple[bytes, Any]:
    """The nonce (fresh unless given) and an AES-256-GCM encryptor of a blob under ``key``
    with ``aad``."""
    subkey = _hkdf(_check_key(key, "an encryption key"), _BLOB_SALT, _BLOB_INFO)
    if nonce is None:
        nonce = os.urandom(NONCE_BYTES)
    elif len(nonce) != NONCE_BYTES:
        raise ChannelError(f"a nonce is {NONCE_BYTES} bytes; got {len(nonce)}.")
    encryptor = Cipher(algorithms.AES(subkey), modes.GCM(nonce)).encryptor()
    encryptor.authenticate_additional_data(_BLOB_AAD + aad)
    return nonce, encryptor


class BufferWriter:
    """A binary file's ``write`` into a new buffer of a known size: what a streamed writer
    (e.g. :func:`encrypt_chunks_to`) makes, whole in memory, in one allocation."""

    def __init__(self, size: int) -> None:
        self._buffer = bytearray(size)
        self._view = memoryview(self._buffer)
        self._written = 0

    def write(self, data: object) -> int:
        piece = _buffer(data, "the data")
        end = self._written + len(piece)
        if end > len(self._buffer):
            raise ChannelError(f"a stream ran past its stated {len(self._buffer)} bytes.")
        self._view[self._written : end] = piece
        self._written = end
        return len(piece)

    def result(self) -> bytearray:
        """The buffer, once exactly its size was written."""
        if self._written != len(self._buffer):
            raise ChannelError(f"a stream wrote {self._written} bytes, not {len(self._buffer)}.")
        return self._buffer


def encrypt_chunks(
    key: bytes,
    chunks: Iterable[object],
    size: int,
    aad: bytes,
    prefix: bytes = b"",
    *,
    nonce: bytes | None = None,
) -> bytearray:
    """:func:`encrypt_buffer` of a plaintext of ``size`` bytes given as consecutive
    ``chunks`` (contiguous buffers): each is encrypted straight into the output, so the
    whole plaintext never exists at once. The same bytes as one buffer of their join."""
    out = BufferWriter(len(prefix) + NONCE_BYTES + size + TAG_BYTES)
    encrypt_chunks_to(out, key, chunks, size, aad, prefix, nonce=nonce)
    return out.result()


def encrypt_chunks_to(
    out: Any,
    key: bytes,
    chunks: Iterable[object],
    size: int,
    aad: bytes,
    prefix: bytes = b"",
    *,
    nonce: bytes | None = None,
) -> None:
    """The bytes of :func:`encrypt_chunks`, written to ``out`` (anything with a binary
    ``write``, e.g. a file) as each chunk is encrypted: the blob never exists whole."""
    nonce, encryptor = _encryptor(key, nonce, aad)
    out.write(prefix)
    out.write(nonce)
    written = 0
    for chunk in chunks:
        data = _buffer(chunk, "the plaintext")
        if written + len(data) > size:
            raise ChannelError(f"the plaintext is longer than its stated {size} bytes.")
        out.write(encryptor.update(data))
        written += len(data)
    if written != size:
        raise ChannelError(f"the plaintext holds {written} bytes, not its stated {size}.")
    out.write(encryptor.finalize())
    out.write(encryptor.tag)


def decrypt(key: bytes, blob: bytes, aad: bytes) -> bytes:
    """Open a blob made by :func:`encrypt` with the same ``key`` and ``aad``."""
    _check_key(key, "a decryption key")
    view = _blob_view(blob)
    out = bytearray(len(view) - NONCE_BYTES - TAG_BYTES)
    decrypt_into(key, view, aad, out)
    return bytes(out)


def _blob_view(blob: object) -> memoryview:
    try:
        view = None if isinstance(blob, str) else _buffer(blob, "the blob")
    except ChannelError:
        view = None
    if view is None or len(view) < NONCE_BYTES + TAG_BYTES:
        size = type(blob).__name__ if view is None else len(view)
        raise ChannelError(
            f"the blob is truncated or not bytes ({size}): ask the peer to send it again."
        )
    return view


def decrypt_into(key: bytes, blob: object, aad: bytes, out: object) -> None:
    """Open a blob made by :func:`encrypt` (any bytes-like, e.g. a memoryview of a mapped
    file; never copied) into ``out``, a writable buffer of the plaintext's size (e.g. a numpy
    array): no intermediate ``bytes``."""
    subkey = _hkdf(_check_key(key, "a decryption key"), _BLOB_SALT, _BLOB_INFO)
    view = _blob_view(blob)
    target = memoryview(out).cast("B")  # type: ignore[arg-type]
    if len(target) != len(view) - NONCE_BYTES - TAG_BYTES:
        raise ChannelError(
            f"the blob holds {len(view) - NONCE_BYTES - TAG_BYTES} plaintext bytes, not the "
            f"{len(target)} expected: ask the peer to send it again."
        )
    try:
        AESGCM(subkey).decrypt_into(view[:NONCE_BYTES], view[NONCE_BYTES:], _BLOB_AAD + aad, target)
    except InvalidTag:
        raise ChannelError(_NOT_THIS_PEERS) from None


def decrypt_chunks(
    key: bytes, blob: object, aad: bytes, chunk_bytes: int, hasher: Any = None
) -> Iterator[memoryview]:
    """The plaintext of a blob made by :func:`encrypt` (any bytes-like, read in place) as
    consecutive pieces of at most ``chunk_bytes``, each valid until the next is read. The
    tag is checked after the last piece: a caller must discard what it made of the pieces
    when the iteration raises ChannelError. ``hasher`` (a hashlib object), if given, is fed
    the blob's bytes in order as they are read."""
    subkey = _hkdf(_check_key(key, "a decryption key"), _BLOB_SALT, _BLOB_INFO)
    view = _blob_view(blob)
    body, tag = view[NONCE_BYTES:-TAG_BYTES], bytes(view[-TAG_BYTES:])
    decryptor = Cipher(
        algorithms.AES(subkey), modes.GCM(bytes(view[:NONCE_BYTES]), tag)
    ).decryptor()
    decryptor.authenticate_additional_data(_BLOB_AAD + aad)
    scratch = memoryview(bytearray(chunk_bytes + _AES_BLOCK_BYTES - 1))
    read = _ReadOnce(body)
    if hasher is not None:
        hasher.update(view[:NONCE_BYTES])
    for start in range(0, len(body), chunk_bytes):
        piece = body[start : start + chunk_bytes]
        if hasher is not None:
            hasher.update(piece)
        n = decryptor.update_into(piece, scratch)
        yield scratch[:n]
        read.done(start + chunk_bytes)
    if hasher is not None:
        hasher.update(tag)
    try:
        decryptor.finalize()
    except InvalidTag:
        raise ChannelError(_NOT_THIS_PEERS) from None


class _ReadOnce:
    """Where ``view`` lies in a read-only file mapping (mmap), drops the pages already read
    from this process's memory (MADV_DONTNEED: the file's bytes stay in the page cache and a
    later read maps them again), so reading a blob once in blocks does not keep it resident."""

    def __init__(self, view: memoryview) -> None:
        source = view.obj
        self._map = source if isinstance(source, mmap.mmap) and view.readonly else None
        self._offset = self._dropped = 0
        if self._map is not None and len(view):
            base = np.frombuffer(self._map, np.uint8).ctypes.data
            self._offset = np.frombuffer(view, np.uint8).ctypes.data - base

    def done(self, end: int) -> None:
        """Bytes ``[0, end)`` of the view are read."""
        if self._map is None:
            return
        upto = (self._offset + end) // mmap.PAGESIZE * mmap.PAGESIZE
        if upto > self._dropped:
            self._map.madvise(mmap.MADV_DONTNEED, self._dropped, upto - self._dropped)
            self._dropped = upto


def expand(
    key: bytes, label: bytes, n: int, start: int = 0, *, word: type = np.uint64
) -> np.ndarray:
    """``n`` pseudo-random words (``word``: np.uint64 or np.uint32) from ``key`` for
    ``label``: AES-256-CTR keystream.

    The stream's key is HKDF(key, label), unique per label, so the zero nonce never repeats a
    keystream; words are the stream's bytes read little-endian. ``start`` skips to word
    ``start`` of the same stream (the CTR counter starts at its block), so a long stream can
    be expanded block by block: ``expand(k, l, a + b)`` equals ``expand(k, l, a)`` followed by
    ``expand(k, l, b, start=a)``. Time and memory are linear in n.
    """
    for value, what in ((n, "a word count n"), (start, "a start word")):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
            raise ConfigError(f"expand needs {what} >= 0; got {value!r}.")
    if word not in (np.uint64, np.uint32):
        raise ConfigError(f"expand makes np.uint64 or np.uint32 words; got {word!r}.")
    size_of = np.dtype(word).itemsize
    subkey = _hkdf(_check_key(key, "a PRG key"), _PRG_SALT, _PRG_INFO + label)
    block, skip = divmod(int(start) * size_of, _AES_BLOCK_BYTES)
    counter = block.to_bytes(_AES_BLOCK_BYTES, "big")
    encryptor = Cipher(algorithms.AES(subkey), modes.CTR(counter)).encryptor()
    size = int(n) * size_of + skip
    # update_into may ask for block size - 1 spare bytes past the output (older releases do).
    out = np.empty(size + _AES_BLOCK_BYTES - 1, dtype=np.uint8)
    view = out.data
    zeros = memoryview(bytes(min(size, _PRG_CHUNK_BYTES)))
    for begin in range(0, size, _PRG_CHUNK_BYTES):
        stop = min(begin + _PRG_CHUNK_BYTES, size)
        encryptor.update_into(zeros[: stop - begin], view[begin : stop + _AES_BLOCK_BYTES - 1])
    little = "<u8" if size_of == 8 else "<u4"
    return out[skip:size].view(little).astype(word, copy=False)


def new_seed() -> bytes:
    """A fresh 32-byte seed from the OS CSPRNG."""
    return secrets.token_bytes(KEY_BYTES)


def load_public_keys(paths: Iterable[str | os.PathLike]) -> dict[str, PublicKey]:
    """Public key files by party name; a second key of one name raises KeyMaterialError."""
    keys: dict[str, PublicKey] = {}
    for path in paths:
        key = PublicKey.load(path)
        if key.name in keys:
            raise KeyMaterialError(f"{path}: a second public key of {key.name!r}; give one each.")
        keys[key.name] = key
    return keys
