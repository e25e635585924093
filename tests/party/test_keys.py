"""Key derivation: HKDF as an independent computation gives it, distinct keys,
fingerprints, and no key material in repr."""

import numpy as np
import pytest

from vertimrf.errors import KeyMaterialError
from vertimrf.party.keys import HashKeys, new_shared_secret

SECRET = bytes(range(1, 33))
OTHER = bytes(range(2, 34))
# Pinned so that a change of derivation (which would break mixed-version parties) is seen.
PINNED_FINGERPRINT_T3 = "e693199e2850f2db9c19860b0fa702bcf5d2d1a09d65407cff3ca30ddb1b84e8"


def test_keys_match_an_independent_hkdf():
    hkdf_mod = pytest.importorskip("cryptography.hazmat.primitives.kdf.hkdf")
    hashes = pytest.importorskip("cryptography.hazmat.primitives.hashes")
    keys = HashKeys.from_secret(SECRET, 5, context=b"run-7")
    for i in range(5):
        info = b"vertimrf/v1/fm-sketch-key" + len(b"run-7").to_bytes(4, "big") + b"run-7"
        info += i.to_bytes(8, "big")
        raw = hkdf_mod.HKDF(
            algorithm=hashes.SHA256(),
            length=16,
            salt=b"vertimrf/v1/hkdf-salt/fm-sketch-keys",
            info=info,
        ).derive(SECRET)
        assert int(keys.k0[i]) == int.from_bytes(raw[:8], "little")
        assert int(keys.k1[i]) == int.from_bytes(raw[8:], "little")


def test_derivation_is_deterministic_and_pinned():
    a = HashKeys.from_secret(SECRET, 100)
    b = HashKeys.from_secret(bytearray(SECRET), 100)
    assert a == b
    np.testing.assert_array_equal(a.k0, b.k0)
    np.testing.assert_array_equal(a.k1, b.k1)
    assert a.fingerprint() == HashKeys.from_secret(SECRET, 100).fingerprint()
    assert HashKeys.from_secret(SECRET, 3).fingerprint() == PINNED_FINGERPRINT_T3


def test_keys_are_per_index_so_prefixes_agree():
    small, large = HashKeys.from_secret(SECRET, 10), HashKeys.from_secret(SECRET, 40)
    np.testing.assert_array_equal(small.k0, large.k0[:10])
    np.testing.assert_array_equal(small.k1, large.k1[:10])
    assert small.fingerprint() != large.fingerprint()


def test_secret_and_context_change_every_key():
    base = HashKeys.from_secret(SECRET, 50)
    for other in (HashKeys.from_secret(OTHER, 50), HashKeys.from_secret(SECRET, 50, context=b"x")):
        assert not np.any(base.k0 == other.k0)
        assert base.fingerprint() != other.fingerprint()
        assert base != other


def test_many_keys_are_distinct_and_read_only():
    keys = HashKeys.from_secret(SECRET, 16_000)
    assert len(keys) == keys.t == 16_000
    pairs = np.stack([keys.k0, keys.k1], axis=1)
    assert np.unique(pairs, axis=0).shape[0] == 16_000
    assert np.unique(keys.k0).size == 16_000
    with pytest.raises(ValueError):
        keys.k0[0] = 1


def test_fingerprint_depends_on_every_key_and_is_domain_separated():
    import hashlib

    keys = HashKeys.from_secret(SECRET, 8)
    fp = keys.fingerprint()
    assert len(fp) == 64 and int(fp, 16) >= 0
    raw = keys.k0.astype("<u8").tobytes() + keys.k1.astype("<u8").tobytes()
    assert fp != hashlib.sha256(raw).hexdigest()
    k1 = keys.k1.copy()
    k1[7] ^= np.uint64(1)
    assert HashKeys(keys.k0, k1).fingerprint() != fp


def test_repr_shows_no_key_material():
    keys = HashKeys.from_secret(SECRET, 4)
    text = repr(keys) + str(keys)
    assert "t=4" in text
    for word in np.concatenate([keys.k0, keys.k1]):
        value = int(word)
        for shown in (str(value), f"{value:x}", f"{value:X}", f"{value:016x}"):
            assert shown not in text
    assert SECRET.hex() not in text
    assert not hasattr(keys, "__dict__")


@pytest.mark.parametrize(
    "secret",
    [bytes(range(31)), b"", "a" * 40, b"\x00" * 32, bytes([1, 2, 3]) * 11, 12345],
)
def test_bad_secrets_are_rejected(secret):
    with pytest.raises(KeyMaterialError):
        HashKeys.from_secret(secret, 10)


@pytest.mark.parametrize("t", [0, -3, 2.0, True, "10"])
def test_bad_key_counts_are_rejected(t):
    with pytest.raises(KeyMaterialError):
        HashKeys.from_secret(SECRET, t)


def test_duplicate_or_malformed_keys_are_rejected():
    with pytest.raises(KeyMaterialError, match="not distinct"):
        HashKeys(np.array([5, 5], dtype=np.uint64), np.array([1, 2], dtype=np.uint64))
    with pytest.raises(KeyMaterialError):
        HashKeys(np.array([5, 6], dtype=np.int64), np.array([1, 2], dtype=np.uint64))
    with pytest.raises(KeyMaterialError):
        HashKeys(np.array([], dtype=np.uint64), np.array([], dtype=np.uint64))


def test_pickle_round_trip_keeps_keys_read_only():
    import pickle

    keys = HashKeys.from_secret(SECRET, 6)
    back = pickle.loads(pickle.dumps(keys))
    assert back == keys and back.fingerprint() == keys.fingerprint()
    assert not back.k0.flags.writeable


def test_new_shared_secret():
    a, b = new_shared_secret(), new_shared_secret(48)
    assert len(a) == 32 and len(b) == 48 and a != b[:32]
    assert HashKeys.from_secret(a, 2).t == 2
    with pytest.raises(KeyMaterialError):
        new_shared_secret(16)
