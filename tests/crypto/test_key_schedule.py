"""The run's one key schedule: every keyed stream of the package is derived by
:mod:`vertimrf.crypto.schedule`. No module outside it (and the primitives that subkey a key
they are given) calls HMAC or HKDF; every named stream is registered and used; the same
inputs give the same key, and any changed input (or a shifted boundary between two inputs)
another one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import vertimrf
from vertimrf.crypto.schedule import STREAMS, admit_digest, derive
from vertimrf.errors import KeyMaterialError

PACKAGE = Path(vertimrf.__file__).parent
# The schedule, and the primitives that take a key from it (or from an X25519 exchange) and
# subkey it for their one use: the AEAD, the PRG, the permutation, the sealed box and the
# pairwise key.
ALLOWED = {
    "crypto/schedule.py",
    "crypto/kdf.py",
    "crypto/aead.py",
    "crypto/prg.py",
    "crypto/prp.py",
    "crypto/keys.py",
}
DERIVING = {"HKDF", "HKDFExpand", "hkdf", "HMAC", "hash_key_words", "record_set_mac_key"}


def _calls(tree: ast.AST) -> list[tuple[int, str]]:
    """Every call of a key derivation in ``tree``: (line, what)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
        if name in DERIVING or (owner == "hmac" and name == "new"):
            found.append((node.lineno, f"{owner}.{name}" if owner else name))
    return found


def test_no_module_derives_a_key_around_the_schedule():
    """Fails on any hmac.new / HKDF / HKDFExpand / hkdf call outside the schedule and the
    primitives (the wrappers of the 64-bit PRF keys and the record-set MAC keys count as
    the schedule's: only party/keys.py and party/records/aligned.py may call them)."""
    wrappers = {
        "party/keys.py": {"hash_key_words"},
        "party/records/aligned.py": {"record_set_mac_key"},
    }
    bypasses = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        for line, what in _calls(ast.parse(path.read_text(), str(path))):
            if what not in wrappers.get(rel, set()):
                bypasses.append(f"{rel}:{line} {what}")
    assert not bypasses, bypasses


def test_the_scan_sees_a_bypass():
    """The scan itself: a module that calls hmac.new or HKDF is caught."""
    code = "import hmac\nhmac.new(k, m, 'sha256')\nHKDF(algorithm=a, length=32, salt=s, info=i)\n"
    assert [w for _, w in _calls(ast.parse(code))] == ["hmac.new", "HKDF"]


def test_every_registered_stream_is_used_and_every_used_one_registered():
    source = "\n".join(p.read_text() for p in PACKAGE.rglob("*.py") if p.name != "schedule.py")
    unused = [s for s in STREAMS if f'"{s}"' not in source]
    assert not unused, unused
    with pytest.raises(KeyMaterialError, match="not a stream"):
        derive(bytes(32), "made-up-stream", "run")


def test_the_same_inputs_give_the_same_key_and_any_change_another():
    secret = bytes(range(32))
    key = derive(secret, "party-noise", "run", "A", "data")
    assert derive(secret, "party-noise", "run", "A", "data") == key
    others = {
        derive(bytes(range(1, 33)), "party-noise", "run", "A", "data"),
        derive(secret, "server-noise", "run", "A", "data"),
        derive(secret, "party-noise", "run2", "A", "data"),
        derive(secret, "party-noise", "run", "B", "data"),
        derive(secret, "party-noise", "run", "A", "data", ""),
        derive(secret, "party-noise", "runA", "", "data"),  # the same bytes, other boundary
    }
    assert key not in others and len(others) == 6


def test_the_admit_digest_changes_with_any_commitment_or_any_roles_key():
    keys = {"A": bytes(32), "B": bytes([1] * 32), "server": bytes([2] * 32)}
    base = admit_digest(bytes(32), keys)
    assert admit_digest(bytes(32), dict(keys)) == base
    assert admit_digest(bytes([9] * 32), keys) != base
    for name in keys:
        changed = dict(keys, **{name: bytes([7] * 32)})
        assert admit_digest(bytes(32), changed) != base, name
