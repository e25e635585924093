"""Channels of the secure protocol: sealed deals, pairwise blobs, the PRG and key files."""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import pytest

from vertimrf.crypto.aead import (
    decrypt,
    decrypt_chunks,
    decrypt_into,
    encrypt,
    encrypt_buffer,
    encrypt_chunks,
)
from vertimrf.crypto.keys import KeyPair, PublicKey, open_sealed, pairwise_key, seal
from vertimrf.crypto.prg import expand, new_seed
from vertimrf.errors import (
    ChannelError,
    ConfigError,
    KeyMaterialError,
    MessageError,
    VertimrfError,
)

RUN = b"run:config-hash-1"
OTHER_RUN = b"run:config-hash-2"
FIXED_KEY = bytes(range(32))
# Pinned so that a change of the fingerprint (which users compare by eye) is seen.
PINNED_FINGERPRINT = "f31a 3031 fc9c 7b03 9184 fdb4 0185 a642"


@pytest.fixture(scope="module")
def alice() -> KeyPair:
    return KeyPair.generate("alice")


@pytest.fixture(scope="module")
def bob() -> KeyPair:
    return KeyPair.generate("bob")


@pytest.fixture(scope="module")
def carol() -> KeyPair:
    return KeyPair.generate("carol")


LONG = np.random.default_rng(0).bytes(100_000)  # fixed: pytest-xdist workers collect alike


def _flipped(blob: bytes, i: int) -> bytes:
    return blob[:i] + bytes([blob[i] ^ 0x80]) + blob[i + 1 :]


def test_channel_error_is_a_message_error():
    assert issubclass(ChannelError, MessageError)
    assert issubclass(ChannelError, VertimrfError)


@pytest.mark.parametrize("plaintext", [b"", b"x", LONG], ids=["empty", "one", "100k"])
def test_seal_round_trip(alice, plaintext):
    blob = seal(alice.public(), plaintext, RUN)
    assert len(blob) == 1 + 32 + 12 + len(plaintext) + 16
    assert open_sealed(alice, blob, RUN) == plaintext


def test_seal_is_randomized(alice):
    assert seal(alice.public(), b"deal", RUN) != seal(alice.public(), b"deal", RUN)


def test_seal_to_one_party_cannot_be_opened_by_another(alice, bob):
    blob = seal(alice.public(), b"deal for alice", RUN)
    with pytest.raises(ChannelError, match="not sealed to bob's key"):
        open_sealed(bob, blob, RUN)


def test_seal_needs_the_same_aad(alice):
    blob = seal(alice.public(), b"deal", RUN)
    for aad in (OTHER_RUN, b"", RUN + b"\x00"):
        with pytest.raises(ChannelError, match="another run"):
            open_sealed(alice, blob, aad)


def test_seal_any_flipped_byte_fails(alice):
    blob = seal(alice.public(), b"a small deal", RUN)
    for i in range(len(blob)):
        with pytest.raises(ChannelError):
            open_sealed(alice, _flipped(blob, i), RUN)


def test_seal_truncated_or_extended_fails(alice):
    blob = seal(alice.public(), b"a small deal", RUN)
    for n in range(len(blob)):
        with pytest.raises(ChannelError):
            open_sealed(alice, blob[:n], RUN)
    with pytest.raises(ChannelError):
        open_sealed(alice, blob + b"\x00", RUN)


def test_seal_unknown_version_says_so(alice):
    blob = seal(alice.public(), b"deal", RUN)
    with pytest.raises(ChannelError, match="version 2"):
        open_sealed(alice, b"\x02" + blob[1:], RUN)


def test_pairwise_key_is_symmetric_and_specific(alice, bob, carol):
    ab = pairwise_key(alice, bob.public(), RUN)
    assert len(ab) == 32
    assert ab == pairwise_key(bob, alice.public(), RUN)
    assert ab != pairwise_key(alice, carol.public(), RUN)
    assert ab != pairwise_key(bob, carol.public(), RUN)
    assert ab != pairwise_key(alice, bob.public(), OTHER_RUN)


def test_pairwise_key_refuses_own_key(alice):
    with pytest.raises(KeyMaterialError, match="own public key"):
        pairwise_key(alice, alice.public(), RUN)
    with pytest.raises(KeyMaterialError, match="own public key"):
        pairwise_key(alice, PublicKey("mallory", alice.public_bytes), RUN)


def test_pairwise_key_refuses_a_low_order_point(alice):
    with pytest.raises(KeyMaterialError, match="low-order point"):
        pairwise_key(alice, PublicKey("mallory", bytes(32)), RUN)


@pytest.mark.parametrize("plaintext", [b"", b"blob", LONG], ids=["empty", "four", "100k"])
def test_encrypt_round_trip(alice, bob, plaintext):
    key = pairwise_key(alice, bob.public(), RUN)
    blob = encrypt(key, plaintext, b"features")
    assert len(blob) == 12 + len(plaintext) + 16
    assert decrypt(pairwise_key(bob, alice.public(), RUN), blob, b"features") == plaintext
    assert encrypt(key, plaintext, b"features") != blob


def test_decrypt_refuses_foreign_replayed_or_altered_blobs(alice, bob, carol):
    key = pairwise_key(alice, bob.public(), RUN)
    blob = encrypt(key, b"masked features", RUN + b"/features")
    message = "not from this peer for this run and purpose"
    with pytest.raises(ChannelError, match=message):  # a third party
        decrypt(pairwise_key(carol, alice.public(), RUN), blob, RUN + b"/features")
    with pytest.raises(ChannelError, match=message):  # replayed into another run
        decrypt(key, blob, OTHER_RUN + b"/features")
    with pytest.raises(ChannelError, match=message):  # replayed for another purpose
        decrypt(key, blob, RUN + b"/pads")
    for i in range(len(blob)):
        with pytest.raises(ChannelError, match=message):
            decrypt(key, _flipped(blob, i), RUN + b"/features")
    for n in range(len(blob)):
        with pytest.raises(ChannelError):
            decrypt(key, blob[:n], RUN + b"/features")


@pytest.mark.parametrize("key", [b"", bytes(31), bytes(33), "00" * 32])
def test_symmetric_functions_refuse_bad_keys(key):
    with pytest.raises(KeyMaterialError, match="32 bytes"):
        encrypt(key, b"x", b"")
    with pytest.raises(KeyMaterialError, match="32 bytes"):
        decrypt(key, bytes(28), b"")
    with pytest.raises(KeyMaterialError, match="32 bytes"):
        expand(key, b"pads", 4)


@pytest.mark.parametrize("n", [0, 1, 3, 131_071, 131_072, 131_073, 300_001])
def test_expand_length_and_prefixes(n):
    words = expand(FIXED_KEY, b"pads", n)
    assert words.shape == (n,)
    assert words.dtype == np.uint64
    np.testing.assert_array_equal(words, expand(FIXED_KEY, b"pads", n))
    np.testing.assert_array_equal(words, expand(FIXED_KEY, b"pads", n + 5)[:n])


def test_expand_differs_per_label_and_key():
    base = expand(FIXED_KEY, b"pads", 1000)
    for other in (
        expand(FIXED_KEY, b"pads2", 1000),
        expand(FIXED_KEY, b"", 1000),
        expand(bytes(range(1, 33)), b"pads", 1000),
    ):
        assert not np.any(base == other)


@pytest.mark.parametrize("start", [0, 1, 2, 3, 131_071, 131_072, 131_073, 250_001])
def test_expand_from_a_start_word_continues_the_same_stream(start):
    full = expand(FIXED_KEY, b"pads", 300_001)
    part = expand(FIXED_KEY, b"pads", 300_001 - start, start=start)
    np.testing.assert_array_equal(part, full[start:])
    np.testing.assert_array_equal(expand(FIXED_KEY, b"pads", 5, start=start), full[start:][:5])
    # block by block, blocks of odd sizes (starting mid AES block), gives the whole stream
    blocks, at = [], 0
    for size in (7, 1, 64_001, 3, 100_000, 135_989):
        blocks.append(expand(FIXED_KEY, b"pads", size, start=at))
        at += size
    np.testing.assert_array_equal(np.concatenate(blocks), full)


@pytest.mark.parametrize("start", [-1, 2.0, True, None])
def test_expand_refuses_bad_starts(start):
    with pytest.raises(ConfigError, match="start word >= 0"):
        expand(FIXED_KEY, b"pads", 3, start=start)


def test_encrypt_buffer_and_decrypt_into_read_and_write_in_place(alice, bob):
    key = pairwise_key(alice, bob.public(), RUN)
    words = np.arange(1000, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    blob = encrypt_buffer(key, words, b"features", prefix=b"D" * 32)
    assert bytes(blob[:32]) == b"D" * 32
    assert decrypt(key, bytes(blob[32:]), b"features") == words.tobytes()
    out = np.empty_like(words)
    decrypt_into(key, memoryview(blob)[32:], b"features", out)
    np.testing.assert_array_equal(out, words)
    with pytest.raises(ChannelError, match="plaintext bytes"):
        decrypt_into(key, memoryview(blob)[32:], b"features", np.empty(999, np.uint64))
    with pytest.raises(ChannelError, match="not from this peer"):
        decrypt_into(key, memoryview(blob)[32:], b"pads", out)


@pytest.mark.parametrize("cuts", [(), (0,), (1, 7), (16, 17, 500), (999,)])
def test_a_plaintext_in_chunks_is_sealed_and_opened_as_one_buffer(alice, bob, cuts):
    """encrypt_chunks of any split equals encrypt_buffer of the whole (same nonce), which
    the one-shot decrypt opens; decrypt_chunks returns the plaintext piece by piece and
    checks the tag after the last piece."""
    key = pairwise_key(alice, bob.public(), RUN)
    data = np.random.default_rng(3).integers(0, 256, 1000, dtype=np.uint8)
    nonce = bytes(12)
    whole = encrypt_buffer(key, data, b"aad", b"P" * 5, nonce=nonce)
    pieces = np.split(data, list(cuts))
    assert encrypt_chunks(key, pieces, data.size, b"aad", b"P" * 5, nonce=nonce) == whole
    assert decrypt(key, bytes(whole[5:]), b"aad") == data.tobytes()
    for chunk in (1, 64, 1000, 4096):
        got = b"".join(bytes(p) for p in decrypt_chunks(key, whole[5:], b"aad", chunk))
        assert got == data.tobytes()
    for bad_aad, blob in ((b"other", whole[5:]), (b"aad", whole[5:-1] + b"x")):
        with pytest.raises(ChannelError, match="not from this peer"):
            list(decrypt_chunks(key, blob, bad_aad, 64))
    with pytest.raises(ChannelError, match="stated 999 bytes"):
        encrypt_chunks(key, pieces, 999, b"aad")
    with pytest.raises(ChannelError, match="not its stated 1001"):
        encrypt_chunks(key, pieces, 1001, b"aad")


def test_a_mapped_blob_read_in_chunks_does_not_stay_resident(alice, bob, tmp_path):
    """decrypt_chunks over a read-only file mapping (as the driver hands a peer's blob, at
    an offset past a prefix) returns the plaintext, and drops the pages it has read: the
    process's resident size grows by far less than the 64 MiB blob (measured: about 4 MiB,
    one chunk and its scratch)."""
    import hashlib
    import mmap

    key = pairwise_key(alice, bob.public(), RUN)
    data = np.random.default_rng(5).integers(0, 256, 64 << 20, dtype=np.uint8)
    want = hashlib.sha256(data).hexdigest()
    path = tmp_path / "blob"
    path.write_bytes(encrypt_buffer(key, data, b"aad", b"digest"))
    del data

    def resident() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * mmap.PAGESIZE

    with open(path, "rb") as fh:
        view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
        before, peak, got = resident(), 0, hashlib.sha256()
        for piece in decrypt_chunks(key, view[6:], b"aad", 1 << 20):
            got.update(piece)
            peak = max(peak, resident())
    assert got.hexdigest() == want
    assert peak - before < 16 << 20


@pytest.mark.parametrize("n", [-1, 2.0, True, "3", None])
def test_expand_refuses_bad_counts(n):
    with pytest.raises(ConfigError, match="n >= 0"):
        expand(FIXED_KEY, b"pads", n)


def test_expand_bytes_are_uniform():
    from scipy.stats import chi2

    # For independent uniform bytes, the counts of the 256 values in 2**20 bytes (4096
    # expected each, so the asymptotic law is accurate) give a chi-square statistic with 255
    # degrees of freedom. We reject only in either tail at p < 1e-6: a keystream
    # indistinguishable from random fails with probability < 2e-6 over the key (here the key
    # is fixed, so the test is deterministic), while a biased stream fails the upper tail and
    # a too-regular one (e.g. a byte counter) the lower tail.
    low, high = chi2.ppf(1e-6, 255), chi2.isf(1e-6, 255)

    def statistic(data: np.ndarray) -> float:
        counts = np.bincount(data, minlength=256)
        expected = data.size / 256
        return float(((counts - expected) ** 2 / expected).sum())

    n_bytes = 1 << 20
    stream = expand(FIXED_KEY, b"uniformity", n_bytes // 8).view(np.uint8)
    assert low < statistic(stream) < high
    counter = (np.arange(n_bytes) % 256).astype(np.uint8)
    assert statistic(counter) < low
    biased = stream.copy()
    biased[: n_bytes // 100] = 0
    assert statistic(biased) > high


def test_new_seed_is_fresh():
    seeds = {new_seed() for _ in range(100)}
    assert len(seeds) == 100
    assert all(len(s) == 32 for s in seeds)


def test_fingerprint_format(alice, bob):
    assert re.fullmatch(r"([0-9a-f]{4} ){7}[0-9a-f]{4}", alice.public().fingerprint)
    assert alice.public().fingerprint != bob.public().fingerprint
    assert PublicKey("p", FIXED_KEY).fingerprint == PINNED_FINGERPRINT
    assert PublicKey("another name", FIXED_KEY).fingerprint == PINNED_FINGERPRINT


def test_keypair_repr_hides_the_private_key(alice):
    private_hex = alice.private_key.private_bytes_raw().hex()
    assert private_hex not in repr(alice)
    assert private_hex not in str(alice)


@pytest.mark.parametrize("name", ["", "   ", "a\nb", 7, None])
def test_names_must_be_printable_strings(name):
    with pytest.raises(KeyMaterialError, match="name"):
        KeyPair.generate(name)
    with pytest.raises(KeyMaterialError, match="name"):
        PublicKey(name, FIXED_KEY)


@pytest.mark.parametrize("raw", [bytes(31), bytes(33), "00" * 32])
def test_public_key_needs_32_raw_bytes(raw):
    with pytest.raises(KeyMaterialError, match="32 raw bytes"):
        PublicKey("p", raw)


def test_keypair_file_round_trip(tmp_path, alice, bob):
    path = tmp_path / "alice.key"
    alice.save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data == {
        "format": "vertimrf-x25519-keypair/1",
        "name": "alice",
        "private": alice.private_key.private_bytes_raw().hex(),
        "public": alice.public_bytes.hex(),
        "tls_key": alice.tls_key,  # the TLS identity of the network service
        "tls_certificate": alice.tls_certificate,
    }
    loaded = KeyPair.load(path)
    assert loaded.name == "alice"
    assert loaded.public() == alice.public()
    assert pairwise_key(loaded, bob.public(), RUN) == pairwise_key(alice, bob.public(), RUN)
    assert open_sealed(loaded, seal(alice.public(), b"deal", RUN), RUN) == b"deal"


def test_public_key_file_round_trip(tmp_path, alice):
    path = tmp_path / "alice.pub"
    alice.public().save(path)
    assert json.loads(path.read_text()) == {
        "format": "vertimrf-x25519-public/1",
        "name": "alice",
        "public": alice.public_bytes.hex(),
        "certificate": alice.tls_certificate,
    }
    assert PublicKey.load(path) == alice.public()
    assert PublicKey.load(path).certificate == alice.tls_certificate


def test_key_files_are_never_overwritten(tmp_path, alice, bob):
    for path, save in (
        (tmp_path / "k.key", lambda p: bob.save(p)),
        (tmp_path / "k.pub", lambda p: bob.public().save(p)),
    ):
        path.write_text("keep me")
        with pytest.raises(KeyMaterialError, match="refusing to overwrite"):
            save(path)
        assert path.read_text() == "keep me"


def test_failed_save_leaves_nothing(tmp_path, alice, monkeypatch):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        alice.save(tmp_path / "alice.key")
    assert list(tmp_path.iterdir()) == []


def _keypair_dict(pair: KeyPair) -> dict:
    return {
        "format": "vertimrf-x25519-keypair/1",
        "name": pair.name,
        "private": pair.private_key.private_bytes_raw().hex(),
        "public": pair.public_bytes.hex(),
    }


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: "{not json", "not valid JSON"),
        (lambda d: [d], "not a key pair file"),
        (lambda d: {**d, "format": "vertimrf-x25519-public/1"}, "not a key pair file"),
        (lambda d: {k: v for k, v in d.items() if k != "format"}, "not a key pair file"),
        (lambda d: {k: v for k, v in d.items() if k != "private"}, "corrupt"),
        (lambda d: {**d, "extra": "1"}, "corrupt"),
        (lambda d: {**d, "private": 5}, "corrupt"),
        (lambda d: {**d, "private": "zz" * 32}, "'private' field is not a 32-byte hex key"),
        (lambda d: {**d, "private": d["private"][:-2]}, "'private' field"),
        (lambda d: {**d, "public": d["public"] + "00"}, "'public' field"),
        (lambda d: {**d, "public": "11" * 32}, "does not belong to the private key"),
        (lambda d: {**d, "name": ""}, "name"),
    ],
)
def test_corrupt_keypair_files_are_refused(tmp_path, alice, change, message):
    path = tmp_path / "alice.key"
    changed = change(_keypair_dict(alice))
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    with pytest.raises(KeyMaterialError, match=message) as info:
        KeyPair.load(path)
    assert str(path) in str(info.value)
    assert isinstance(info.value, VertimrfError)


def test_corrupt_public_key_files_are_refused(tmp_path, alice):
    path = tmp_path / "alice.pub"
    with pytest.raises(KeyMaterialError, match="cannot read"):
        PublicKey.load(path)
    path.write_text(json.dumps(_keypair_dict(alice)))
    with pytest.raises(KeyMaterialError, match="not a public key file"):
        PublicKey.load(path)
    path.write_text(json.dumps({"format": "vertimrf-x25519-public/1", "name": "a", "public": ""}))
    with pytest.raises(KeyMaterialError, match="'public' field"):
        PublicKey.load(path)
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(KeyMaterialError, match="not UTF-8"):
        PublicKey.load(path)
