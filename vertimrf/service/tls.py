"""Mutual TLS with the certificates the config pins (the ``ssl`` module; nothing
hand-rolled); design notes in docs/design/service.md."""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path

from vertimrf.crypto.identity import REMAKE, certificate_fingerprint
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ConfigError, KeyMaterialError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.seeds import SERVER

__all__ = [
    "client_context",
    "fingerprint",
    "party_fingerprints",
    "party_of",
    "role_fingerprints",
    "server_context",
]


def fingerprint(certificate: str | bytes) -> str:
    """The certificate's SHA-256 fingerprint in groups of four hex digits (PEM or DER)."""
    digest = certificate_fingerprint(certificate)
    return " ".join(digest[i : i + 4] for i in range(0, len(digest), 4))


def _tls_identity(keypair: KeyPair) -> tuple[str, str]:
    if keypair.tls_key is None or keypair.tls_certificate is None:
        raise KeyMaterialError(f"{keypair.name!r}'s key file has no TLS identity; {REMAKE}.")
    return keypair.tls_key, keypair.tls_certificate


def _load_identity(context: ssl.SSLContext, keypair: KeyPair) -> None:
    """Load the key pair's certificate and private key into ``context`` through a private
    temporary folder, removed on return."""
    key, cert = _tls_identity(keypair)
    with tempfile.TemporaryDirectory(prefix="vertimrf-tls-") as tmp:
        os.chmod(tmp, 0o700)
        key_path, cert_path = Path(tmp) / "tls.key", Path(tmp) / "tls.crt"
        fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(key)
        cert_path.write_text(cert)
        context.load_cert_chain(cert_path, key_path)


def _pinned(config: ProtocolConfig) -> Mapping[str, str]:
    if config.identities is None:
        raise ConfigError(
            "this config pins no identities, so the network service cannot authenticate the "
            "roles: pin every role's public key file into it (`vertimrf config --pin`)."
        )
    return {n: i.certificate for n, i in config.identities.items()}


def _context(protocol: int, config: ProtocolConfig, keypair: KeyPair) -> ssl.SSLContext:
    _tls_identity(keypair)  # an old key file: say so first
    config.check_keypair(keypair)
    context = ssl.SSLContext(protocol)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED
    _load_identity(context, keypair)
    return context


def server_context(config: ProtocolConfig, keypair: KeyPair) -> ssl.SSLContext:
    """The server's context: its pinned identity; a client must present a party's (or an
    own dealer's) pinned certificate or the server's own."""
    pinned = _pinned(config)
    if keypair.name != SERVER:
        raise KeyMaterialError(f"the server needs the server's key file, not {keypair.name!r}'s.")
    context = _context(ssl.PROTOCOL_TLS_SERVER, config, keypair)
    roles = "".join(pinned.values())  # every party, the server and an own dealer
    context.load_verify_locations(cadata=roles)
    return context


def client_context(config: ProtocolConfig, keypair: KeyPair) -> ssl.SSLContext:
    """A party's context: its pinned identity; the server must present its pinned
    certificate."""
    pinned = _pinned(config)
    context = _context(ssl.PROTOCOL_TLS_CLIENT, config, keypair)
    context.load_verify_locations(cadata=pinned[SERVER])
    return context


def party_fingerprints(config: ProtocolConfig) -> dict[str, str]:
    """Each party's name (and an own dealer's: the roles that upload) by its pinned
    certificate's SHA-256 fingerprint (64 hex digits)."""
    pinned = _pinned(config)
    return {certificate_fingerprint(c): n for n, c in pinned.items() if n != SERVER}


def role_fingerprints(config: ProtocolConfig) -> dict[str, str]:
    """Each role's name (the parties' and the server's) by its pinned certificate's
    SHA-256 fingerprint."""
    return {**party_fingerprints(config), certificate_fingerprint(_pinned(config)[SERVER]): SERVER}


def party_of(fingerprints: Mapping[str, str], peer_der: bytes | None) -> str | None:
    """The party whose pinned certificate is ``peer_der`` (the handshake's), or None."""
    return None if peer_der is None else fingerprints.get(certificate_fingerprint(peer_der))
