"""Paillier encryption on gmpy2 (docs/design/crypto.md): keys on a Blum modulus, randomisers
h_s^e from a fixed-base table (Damgard-Jurik-Nielsen), decryption by CRT."""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import gmpy2

from vertimrf.crypto.kdf import KEY_BYTES
from vertimrf.crypto.prg import expand
from vertimrf.errors import KeyMaterialError

KEY_BITS = 2048  # the modulus n's bits
EXPONENT_BITS = 256  # a randomiser's exponent e (twice the 128-bit security level)
SMUDGE_BITS = 64  # a re-randomiser's extra bits: it hides a sum of up to 2^64 exponents
WINDOW_BITS = 8  # bits a window of the fixed-base table covers
OWNER_WINDOW_BITS = 12  # the same for the key owner's CRT tables (mod p^2 and q^2)
_PUBLIC = b"vertimrf/paillier-public/v1"
_PRIVATE = b"vertimrf/paillier-private/v1"
_RANDOMISER_LABEL = b"paillier-randomiser-exponents"
_KEY_LABEL = b"paillier-key-generation"

RandBits = Callable[[int], int]


def _blum_prime(bits: int, randbits: RandBits) -> gmpy2.mpz:
    """A prime p of exactly ``bits`` bits, its top two set, with p = 3 mod 4."""
    while True:
        candidate = gmpy2.mpz(randbits(bits)) | (gmpy2.mpz(3) << (bits - 2)) | 3
        p = gmpy2.next_prime(candidate - 1)
        if p % 4 == 3 and p.bit_length() == bits:
            return p


def ciphertext_bytes(bits: int) -> int:
    """Bytes of one ciphertext (an element of Z_{n^2}) under a ``bits``-bit modulus n."""
    return (2 * bits + 7) // 8


def encrypt_unchecked(n: gmpy2.mpz, n2: gmpy2.mpz, m: gmpy2.mpz, r: gmpy2.mpz) -> gmpy2.mpz:
    """(1 + m n) r mod n^2 as r + n (m r mod n) mod n^2 (the same value, 1.4x faster), for
    a plaintext already known to lie in [0, n) (:meth:`PublicKey.encrypt` checks it)."""
    return (r + n * (m * r % n)) % n2


def public_key_bytes(bits: int) -> int:
    """Bytes of a public key under a ``bits``-bit modulus (:meth:`PublicKey.to_bytes`)."""
    size = (bits + 7) // 8
    return len(_PUBLIC) + 4 + 3 * size


def _int_bytes(value: int, size: int) -> bytes:
    return int(value).to_bytes(size, "big")


@dataclass(frozen=True)
class PublicKey:
    """n and h_s = h^n mod n^2 for h = -x^2 mod n (the base of every randomiser)."""

    n: gmpy2.mpz
    hs: gmpy2.mpz

    @cached_property
    def n2(self) -> gmpy2.mpz:
        return self.n * self.n

    @property
    def bits(self) -> int:
        return int(self.n.bit_length())

    @property
    def ciphertext_bytes(self) -> int:
        """Bytes of one ciphertext on the wire (:func:`ciphertext_bytes`)."""
        return ciphertext_bytes(self.bits)

    def encrypt(self, m: int, randomiser: gmpy2.mpz) -> gmpy2.mpz:
        """(1 + m n) r mod n^2 for a plaintext 0 <= m < n and a randomiser r from
        :meth:`FixedBase.power` (or 1 for an unrandomised encoding)."""
        if not 0 <= m < self.n:
            raise KeyMaterialError("a Paillier plaintext must lie in [0, n).")
        return encrypt_unchecked(self.n, self.n2, gmpy2.mpz(m), randomiser)

    def to_bytes(self) -> bytes:
        size = (self.bits + 7) // 8
        return (
            _PUBLIC + size.to_bytes(4, "big") + _int_bytes(self.n, size)
            + _int_bytes(self.hs, 2 * size)
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, raw: bytes) -> PublicKey:
        """The key of :meth:`to_bytes`; KeyMaterialError for anything else."""
        size, body = _header(raw, _PUBLIC, "public")
        if size == 0 or len(body) != 3 * size:
            raise _truncated("public")
        n = gmpy2.mpz(int.from_bytes(body[:size], "big"))
        hs = gmpy2.mpz(int.from_bytes(body[size:], "big"))
        if n < 3 or not 0 < hs < n * n or gmpy2.gcd(hs, n) != 1:
            raise KeyMaterialError("a Paillier public key is malformed; make it again.")
        return cls(n, hs)


@dataclass(frozen=True)
class PrivateKey:
    """The primes p, q of n (p = q = 3 mod 4) and the public key; decrypts by CRT."""

    p: gmpy2.mpz
    q: gmpy2.mpz
    public: PublicKey

    def decrypt(self, c: gmpy2.mpz) -> gmpy2.mpz:
        """m in [0, n) of a ciphertext c: m = L(c^(p-1) mod p^2) h_p mod p, the same mod q,
        joined by CRT (L(u) = (u - 1) / p)."""
        p, q, (hp, hq, q_inv) = self.p, self.q, self._crt
        mp = (gmpy2.powmod(c, p - 1, p * p) - 1) // p * hp % p
        mq = (gmpy2.powmod(c, q - 1, q * q) - 1) // q * hq % q
        return mq + q * ((mp - mq) * q_inv % p)

    @cached_property
    def _crt(self) -> tuple[gmpy2.mpz, gmpy2.mpz, gmpy2.mpz]:
        """h_p, h_q (h = L(g^(prime-1) mod prime^2)^-1 for g = n + 1) and q^-1 mod p."""

        def h(prime: gmpy2.mpz) -> gmpy2.mpz:
            g = gmpy2.powmod(self.public.n + 1, prime - 1, prime * prime)
            return gmpy2.invert((g - 1) // prime, prime)

        return h(self.p), h(self.q), gmpy2.invert(self.q, self.p)

    def to_bytes(self) -> bytes:
        half = (self.public.bits // 2 + 7) // 8
        pub = self.public.to_bytes()
        return (
            _PRIVATE + half.to_bytes(4, "big") + _int_bytes(self.p, half)
            + _int_bytes(self.q, half) + pub
        )  # fmt: skip

    @classmethod
    def from_bytes(cls, raw: bytes) -> PrivateKey:
        """The key of :meth:`to_bytes`, checked against its public part."""
        half, body = _header(raw, _PRIVATE, "private")
        if half == 0 or len(body) <= 2 * half:
            raise _truncated("private")
        p = gmpy2.mpz(int.from_bytes(body[:half], "big"))
        q = gmpy2.mpz(int.from_bytes(body[half : 2 * half], "big"))
        public = PublicKey.from_bytes(body[2 * half :])
        if p * q != public.n or p % 4 != 3 or q % 4 != 3:
            raise KeyMaterialError("a Paillier private key does not match its public key.")
        return cls(p, q, public)


def _header(raw: bytes, magic: bytes, what: str) -> tuple[int, bytes]:
    """The size field after ``magic`` and the bytes after it; KeyMaterialError for a wrong
    magic or version."""
    if not isinstance(raw, bytes) or not raw.startswith(magic) or len(raw) < len(magic) + 4:
        raise KeyMaterialError(
            f"not a vertimrf Paillier {what} key of this version; make it again with vertimrf keys."
        )
    size = int.from_bytes(raw[len(magic) : len(magic) + 4], "big")
    return size, raw[len(magic) + 4 :]


def _truncated(what: str) -> KeyMaterialError:
    return KeyMaterialError(f"a Paillier {what} key is truncated; make it again.")


def generate(bits: int = KEY_BITS, randbits: RandBits = secrets.randbits) -> PrivateKey:
    """A key of a ``bits``-bit Blum modulus n = pq (p = q = 3 mod 4, each of bits / 2 bits)
    and h_s = (-x^2)^n mod n^2 for a random x; ``randbits``: the random source (the OS's by
    default)."""
    if bits < 256 or bits % 2:
        raise KeyMaterialError(
            f"a Paillier modulus needs an even number >= 256 of bits; got {bits}."
        )
    while True:
        p, q = _blum_prime(bits // 2, randbits), _blum_prime(bits // 2, randbits)
        n = p * q
        if p != q and n.bit_length() == bits:
            break
    while True:
        x = gmpy2.mpz(randbits(bits)) % n
        if x > 1 and gmpy2.gcd(x, n) == 1:
            break
    h = (-x * x) % n
    return PrivateKey(p, q, PublicKey(n, gmpy2.powmod(h, n, n * n)))


def stream_bits(key: bytes) -> RandBits:
    """A ``randbits`` for :func:`generate` that reads the AES-CTR stream of ``key`` (32
    bytes, from the run's key schedule) word after word: the same key makes the same key
    pair."""
    if len(key) != KEY_BYTES:
        raise KeyMaterialError(f"a key-generation stream needs a {KEY_BYTES}-byte key.")
    at = 0

    def randbits(bits: int) -> int:
        nonlocal at
        words = -(-bits // 64)
        raw = expand(key, _KEY_LABEL, words, at).astype("<u8").tobytes()
        at += words
        return int.from_bytes(raw, "little") & ((1 << bits) - 1)

    return randbits


class FixedBase:
    """Powers of one base mod ``modulus`` from a table of windows: table[j][d] =
    base^(d 2^(w j)), so base^e is one product a window of e (e < 2^exponent_bits)."""

    def __init__(
        self, base: gmpy2.mpz, modulus: gmpy2.mpz, exponent_bits: int = EXPONENT_BITS + SMUDGE_BITS,
        window: int = WINDOW_BITS,
    ) -> None:  # fmt: skip
        self.modulus, self.window = modulus, window
        self.exponent_bits = exponent_bits
        self.table: list[list[gmpy2.mpz]] = []
        step = gmpy2.mpz(base) % modulus
        for _ in range(math.ceil(exponent_bits / window)):
            row = [gmpy2.mpz(1)]
            for _ in range((1 << window) - 1):
                row.append(row[-1] * step % modulus)
            self.table.append(row)
            step = row[-1] * step % modulus

    def power(self, e: int) -> gmpy2.mpz:
        """base^e mod modulus for 0 <= e < 2^exponent_bits."""
        if not 0 <= e < 1 << self.exponent_bits:
            raise KeyMaterialError("a fixed-base exponent is out of the table's range.")
        acc, mask, mod = gmpy2.mpz(1), (1 << self.window) - 1, self.modulus
        for row in self.table:
            digit = e & mask
            if digit:
                acc = acc * row[digit] % mod
            e >>= self.window
        return acc


class OwnerTable:
    """The key owner's randomisers h_s^e (e < 2^EXPONENT_BITS) by CRT: fixed-base tables
    mod p^2 and mod q^2 (products of half the size, windows of OWNER_WINDOW_BITS), joined.
    The same values as :class:`FixedBase` of h_s mod n^2, about 1.7x faster; about 50 MB
    at 2048 bits."""

    def __init__(self, private: PrivateKey) -> None:
        hs, p2, q2 = private.public.hs, private.p * private.p, private.q * private.q
        self._p = FixedBase(hs % p2, p2, EXPONENT_BITS, OWNER_WINDOW_BITS)
        self._q = FixedBase(hs % q2, q2, EXPONENT_BITS, OWNER_WINDOW_BITS)
        self._p2, self._q2, self._q2_inv = p2, q2, gmpy2.invert(q2, p2)

    def power(self, e: int) -> gmpy2.mpz:
        """h_s^e mod n^2 for 0 <= e < 2^EXPONENT_BITS."""
        xp, xq = self._p.power(e), self._q.power(e)
        return xq + self._q2 * ((xp - xq) * self._q2_inv % self._p2)


Powers = FixedBase | OwnerTable


def randomiser_table(key: PublicKey | PrivateKey) -> Powers:
    """Every randomiser under a key: the fixed-base table of h_s mod n^2 from a public key
    (a peer re-randomising), or the owner's CRT tables from a private key (its ciphertexts'
    own randomisers, whose exponents have EXPONENT_BITS)."""
    if isinstance(key, PrivateKey):
        return OwnerTable(key)
    return FixedBase(key.hs, key.n2)


def exponents(key: bytes, start: int, count: int, bits: int = EXPONENT_BITS) -> list[int]:
    """Randomiser exponents start:start + count of the stream keyed ``key`` (32 bytes, from
    the run's key schedule), uniform below 2^bits: the same key gives the same ones."""
    if len(key) != KEY_BYTES:
        raise KeyMaterialError(f"a randomiser stream needs a {KEY_BYTES}-byte key.")
    per = -(-bits // 64)
    words = expand(key, _RANDOMISER_LABEL, count * per, start * per).reshape(count, per)
    raw, size, top = words.astype("<u8").tobytes(), per * 8, (1 << bits) - 1
    return [int.from_bytes(raw[i * size : (i + 1) * size], "little") & top for i in range(count)]


def randomisers(
    table: Powers, key: bytes, start: int, count: int, bits: int = EXPONENT_BITS
) -> list[gmpy2.mpz]:
    """h_s^e for the exponents start:start + count of :func:`exponents` (``key``, ``bits``).

    A ciphertext's own randomiser has EXPONENT_BITS. A reply that multiplies many of a
    peer's ciphertexts is re-randomised with ``bits`` = EXPONENT_BITS + log2(terms) + kappa,
    so that the sum of exponents the key's owner could know is hidden within 2^-kappa."""
    return [table.power(e) for e in exponents(key, start, count, bits)]


def ciphertexts_to_bytes(public: PublicKey, cts: Sequence[gmpy2.mpz]) -> bytes:
    """Ciphertexts as fixed-width big-endian integers, one after another."""
    size = public.ciphertext_bytes
    return b"".join(_int_bytes(c, size) for c in cts)


def ciphertexts_from_bytes(public: PublicKey, raw: bytes) -> list[gmpy2.mpz]:
    """The ciphertexts of :func:`ciphertexts_to_bytes`; KeyMaterialError for a length that is
    not a whole number of them or a value outside Z_{n^2}."""
    size = public.ciphertext_bytes
    if len(raw) % size:
        raise KeyMaterialError(
            f"Paillier ciphertexts come {size} bytes each; got {len(raw)}: the message is cut; "
            "have its sender send it again."
        )
    n2 = public.n2
    out = [gmpy2.mpz(int.from_bytes(raw[i : i + size], "big")) for i in range(0, len(raw), size)]
    if any(not 0 < c < n2 for c in out):
        raise KeyMaterialError(
            "a Paillier ciphertext lies outside Z_(n^2): the message is corrupt or made under "
            "another key; have its sender send it again."
        )
    return out
