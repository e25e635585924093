"""TLS identities: each role's ECDSA P-256 private key and self-signed X.509
certificate; design notes in docs/design/crypto.md."""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from vertimrf.errors import ConfigError, KeyMaterialError

VALID_DAYS = 3650
DEFAULT_HOSTS = ("localhost", "127.0.0.1")
REMAKE = "make keys again with `vertimrf keys`"


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def make_tls_identity(name: str, hosts: Iterable[str] = ()) -> tuple[str, str]:
    """A fresh ECDSA P-256 private key and a self-signed certificate for the role ``name``
    and the hosts given (plus localhost and 127.0.0.1), both as PEM text."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    names = list(dict.fromkeys([*DEFAULT_HOSTS, *hosts]))
    public = key.public_key()
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(public)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.SubjectAlternativeName([_san(h) for h in names]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
    return key_pem, cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def load_certificate(pem: str, where: str) -> x509.Certificate:
    """The certificate in ``pem``; KeyMaterialError if it is not one."""
    try:
        return x509.load_pem_x509_certificate(pem.encode("ascii"))
    except (ValueError, UnicodeEncodeError):
        raise KeyMaterialError(
            f"{where}: the TLS certificate is not valid PEM; {REMAKE}."
        ) from None


def check_tls_pair(key_pem: str, cert_pem: str, where: str) -> None:
    """KeyMaterialError unless ``key_pem`` is the private key of ``cert_pem``."""
    cert = load_certificate(cert_pem, where)
    try:
        key = serialization.load_pem_private_key(key_pem.encode("ascii"), password=None)
    except (ValueError, TypeError, UnicodeEncodeError):
        raise KeyMaterialError(
            f"{where}: the TLS private key is not valid PEM; {REMAKE}."
        ) from None
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    der = serialization.Encoding.DER
    if key.public_key().public_bytes(der, spki) != cert.public_key().public_bytes(der, spki):
        raise KeyMaterialError(
            f"{where}: the TLS certificate does not belong to the TLS private key; the file is "
            f"corrupt, {REMAKE}."
        )


def certificate_fingerprint(cert: str | bytes) -> str:
    """SHA-256 of the certificate's DER bytes (PEM text or DER bytes given), 64 hex digits;
    what TLS presents and what is compared out of band."""
    der = (
        cert
        if isinstance(cert, bytes)
        else load_certificate(cert, "certificate").public_bytes(serialization.Encoding.DER)
    )
    return hashlib.sha256(der).hexdigest()


@dataclass(frozen=True)
class Identity:
    """One role's pinned identity: its X25519 public key (hex) and TLS certificate (PEM)."""

    public: str
    certificate: str

    def __post_init__(self) -> None:
        try:
            raw = bytes.fromhex(self.public) if isinstance(self.public, str) else b""
        except ValueError:
            raw = b""
        if len(raw) != 32 or self.public != raw.hex():
            raise ConfigError(
                "an identity's public key is 64 lowercase hex digits (an X25519 key); pin the "
                "roles' public key files again."
            )
        if not isinstance(self.certificate, str):
            raise ConfigError("an identity's certificate is PEM text; pin the key files again.")
        try:
            load_certificate(self.certificate, "identity")
        except KeyMaterialError:
            raise ConfigError(
                "an identity's certificate is not valid PEM; pin the roles' public key files again."
            ) from None

    @property
    def fingerprint(self) -> str:
        """The certificate's SHA-256 fingerprint (:func:`certificate_fingerprint`)."""
        return certificate_fingerprint(self.certificate)

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"public": self.public, "certificate": self.certificate}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Identity:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, Mapping) or set(data) != {"public", "certificate"}:
            raise ConfigError(
                'an identity is {"public": hex, "certificate": PEM}; pin the key files again.'
            )
        return cls(data["public"], data["certificate"])
