"""Seeds of a seeded (experimental) run, agreed on by every role;
design notes in docs/design/protocol.md."""

from __future__ import annotations

import hashlib

from vertimrf.errors import ConfigError

SERVER = "server"
DEALER = "dealer"  # the dealer, when it is a role of its own (config dealer="own")


def _digest(seed: int, role: str, what: bytes) -> bytes:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ConfigError(f"a run seed must be an integer >= 0; got {seed!r}.")
    return hashlib.sha256(what + f"/{seed}/".encode() + role.encode("utf-8")).digest()


def role_seed(seed: int, role: str) -> int:
    """The 64-bit seed of ``role`` (a party's name, or ``"server"``) in run ``seed``."""
    return int.from_bytes(_digest(seed, role, b"vertimrf/role-seed")[:8], "little")


def seeded_secret(seed: int) -> bytes:
    """A shared secret made from a run seed, for experiments only (anyone with the seed has it)."""
    return _digest(seed, "parties", b"vertimrf/seeded-secret")


def seeded_coins(seed: int, role: str) -> bytes:
    """A party's secret for its coins in a seeded run (``role``: the party's name), for
    experiments only (anyone with the seed replays them)."""
    return _digest(seed, role, b"vertimrf/seeded-coins")


def seeded_stream(seed: int, role: str) -> bytes:
    """The secret of a dealing ``role``'s keyed streams (slot assignment) in a seeded run,
    for experiments only (anyone with the seed replays them)."""
    return hashlib.sha256(f"vertimrf/seeded-{role}/{seed}".encode()).digest()


def seeded_key(seed: int, role: str) -> bytes:
    """32 bytes of ``role``'s X25519 private key in a seeded run, for experiments only: the
    tokens and deals are keyed by every role's public key, so fresh keys would give a seeded
    run fresh record-set noise."""
    return _digest(seed, role, b"vertimrf/seeded-key")


def seeded_nonce(seed: int) -> str:
    """A run nonce made from a run seed (hex), for experiments only."""
    return _digest(seed, "nonce", b"vertimrf/seeded-nonce")[:16].hex()
