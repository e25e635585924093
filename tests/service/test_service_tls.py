"""TLS identities and their pinning: key files carry a TLS identity (old ones still load),
the config pins every role's public key and certificate (in the file and the hash; an
unpinned config hashes as before), and the service's TLS contexts accept only the pinned
certificates."""

from __future__ import annotations

import hashlib
import json
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError, KeyMaterialError
from vertimrf.protocol import from_preset, load_config
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.service.tls import (
    client_context,
    fingerprint,
    party_fingerprints,
    party_of,
    server_context,
)

SPEC = DomainSpec.from_dict({"c0": 6, "c1": 2, "c2": 3})
# The hash of this config on the code before identities existed (computed on that tree).
OLD_HASH = "6052297353996c493587a1804357c81a2a2e583b69084a6f8608de6ae8b5fe1e"


def _config() -> ProtocolConfig:
    """A config as made before identities (and with the shares and model caps then the
    defaults, which a config file states: it keeps its hash under the later defaults)."""
    return from_preset(
        "default", record_sets="equal", epsilon=2.0, delta=1e-5, spec=SPEC,
        parties=[("A", ["c0", "c1"]), ("B", ["c2"])], max_rows=512, run_nonce="ef" * 16,
        secure_shares={"count": 0.001, "select": 0.5, "measure": 0.499},
        secure_max_clique_cells=2e5, secure_max_total_cells=1e6,
    )  # fmt: skip


@pytest.fixture(scope="module")
def keys() -> dict[str, KeyPair]:
    return {n: KeyPair.generate(n, hosts=["svc.example.org"]) for n in ("A", "B", "server")}


@pytest.fixture(scope="module")
def pinned(keys) -> ProtocolConfig:
    return _config().with_identities(k.public() for k in keys.values())


def test_an_unpinned_config_hashes_as_before_and_a_pinned_one_round_trips(tmp_path, pinned):
    old = _config()
    assert old.config_hash() == OLD_HASH and "identities" not in old.to_dict()
    assert pinned.config_hash() != OLD_HASH and pinned.run_nonce == old.run_nonce
    pinned.save(tmp_path / "config.json")
    again = load_config(tmp_path / "config.json")
    assert again.config_hash() == pinned.config_hash()
    assert list(again.identities) == ["A", "B", "server"]
    assert again.public_keys()["B"] == pinned.public_keys()["B"]


def test_pinning_needs_every_role_once_with_a_certificate(keys):
    cfg = _config()
    with pytest.raises(ConfigError, match=r"not every role \['A', 'B', 'server'\]"):
        cfg.with_identities([keys["A"].public(), keys["B"].public()])
    old_key = PublicKey("A", keys["A"].public_bytes)  # a key file made before the service
    with pytest.raises(ConfigError, match="make keys again with `vertimrf keys`"):
        cfg.with_identities([old_key, keys["B"].public(), keys["server"].public()])
    with pytest.raises(ConfigError, match="pins no identities"):
        cfg.public_keys()
    data = _config().to_dict() | {"identities": {"A": {"public": "zz", "certificate": "x"}}}
    with pytest.raises(ConfigError, match="64 lowercase hex"):
        ProtocolConfig.from_dict(data)


def test_a_key_file_holds_a_tls_identity_and_an_old_one_still_loads(tmp_path, keys):
    key = keys["server"]
    cert = x509.load_pem_x509_certificate(key.tls_certificate.encode())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "svc.example.org"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    key.save(tmp_path / "server.key")
    assert KeyPair.load(tmp_path / "server.key").tls_certificate == key.tls_certificate
    data = json.loads((tmp_path / "server.key").read_text())
    data["tls_certificate"] = keys["A"].tls_certificate  # another role's certificate
    (tmp_path / "swapped.key").write_text(json.dumps(data))
    with pytest.raises(KeyMaterialError, match="does not belong to the TLS private key"):
        KeyPair.load(tmp_path / "swapped.key")
    for field in ("tls_key", "tls_certificate"):
        data.pop(field)
    (tmp_path / "old.key").write_text(json.dumps(data))
    old = KeyPair.load(tmp_path / "old.key")
    assert old.tls_key is None and old.public_bytes == key.public_bytes


def test_fingerprints_are_sha256_of_the_certificate(pinned, keys):
    der = x509.load_pem_x509_certificate(keys["A"].tls_certificate.encode()).public_bytes(
        serialization.Encoding.DER
    )
    want = hashlib.sha256(der).hexdigest()
    assert fingerprint(keys["A"].tls_certificate).replace(" ", "") == want
    assert fingerprint(der) == fingerprint(keys["A"].tls_certificate)
    found = party_fingerprints(pinned)
    assert party_of(found, der) == "A" and party_of(found, b"other") is None
    assert party_of(found, None) is None


def test_contexts_refuse_unpinned_or_old_keys(pinned, keys):
    with pytest.raises(KeyMaterialError, match="not the one this config pins"):
        client_context(pinned, KeyPair.generate("A"))
    with pytest.raises(KeyMaterialError, match="server's key file"):
        server_context(pinned, keys["A"])
    with pytest.raises(ConfigError, match="pins no identities"):
        client_context(_config(), keys["A"])
    old = KeyPair("A", keys["A"].private_key)  # a key file made before the service
    with pytest.raises(KeyMaterialError, match="make keys again with `vertimrf keys`"):
        client_context(pinned, old)


def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> str | None:
    """A TLS handshake over a socket pair: the server side's error, or None."""
    left, right = socket.socketpair()
    errors: list[str] = []

    def serve() -> None:
        try:
            with server.wrap_socket(left, server_side=True) as tls:
                tls.recv(1)
        except (ssl.SSLError, OSError) as exc:
            errors.append(type(exc).__name__)

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with client.wrap_socket(right, server_hostname="localhost") as tls:
            tls.sendall(b"x")
            tls.recv(1)
    except (ssl.SSLError, OSError):
        pass
    thread.join(10)
    return errors[0] if errors else None


def test_only_a_pinned_certificate_completes_the_handshake(pinned, keys):
    server = server_context(pinned, keys["server"])
    assert _handshake(server, client_context(pinned, keys["A"])) is None
    stranger = KeyPair.generate("A")  # A's name, a certificate the config does not pin
    config = _config().with_identities([stranger.public(), keys["B"].public(),
                                        keys["server"].public()])  # fmt: skip
    assert _handshake(server, client_context(config, stranger)) is not None
    impostor = KeyPair.generate("server")  # a server the parties did not pin
    fake = _config().with_identities([keys["A"].public(), keys["B"].public(),
                                      impostor.public()])  # fmt: skip
    assert _handshake(server_context(fake, impostor), client_context(pinned, keys["A"]))
