"""Exact discrete samplers: every released noisy value is drawn here (docs/design/privacy.md)."""

from __future__ import annotations

import functools
import math
import os
import threading
from fractions import Fraction
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.exact import ExactSampler
from vertimrf.privacy.noise import INT64_LIMIT, NoiseSampler, exponential_inputs

__all__ = [
    "KeyedSampler",
    "NoiseSampler",
    "SecureSampler",
    "SeededSampler",
    "exponential_inputs",
    "noise_sampler",
    "randomness",
]


# ------------------------------------------------------------------------------ secure


@functools.lru_cache(maxsize=64)
def _opendp_noise(kind: str, scale: float) -> Any:
    """An OpenDP measurement adding exact integer noise to a vector of i64 zeros."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    if kind == "laplace":
        return dp.m.make_laplace(domain, dp.l1_distance(T="i64"), scale=scale)
    return dp.m.make_gaussian(domain, dp.l2_distance(T="i64"), scale=scale)


@functools.lru_cache(maxsize=64)
def _opendp_noisy_max(scale: float) -> Any:
    """OpenDP's report-noisy-max with Gumbel noise of ``scale`` on i64 scores (zCDP)."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T="i64"))
    return dp.m.make_noisy_max(
        domain, dp.linf_distance(T="i64"), dp.zero_concentrated_divergence(), scale=scale
    )


def _gumbel_scale(sensitivity: int, epsilon: float) -> float:
    """The smallest float >= 2 sensitivity / epsilon: the noise is never below what is charged."""
    exact = Fraction(2 * sensitivity) / Fraction(epsilon)
    scale = float(exact)
    while Fraction(scale) < exact:
        scale = math.nextafter(scale, math.inf)
    return scale


class SecureSampler(NoiseSampler):
    """Cryptographically secure sampler: the one to use for every real release.

    Noise comes from OpenDP; other draws from an AES-256-CTR keystream under a fresh
    ``os.urandom`` key (re-keyed automatically in a forked child).
    """

    seeded = False

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rekey()

    def _rekey(self) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        self._pid = os.getpid()
        cipher = Cipher(algorithms.AES(os.urandom(32)), modes.CTR(os.urandom(16)))
        self._keystream = cipher.encryptor()

    def _words(self, n: int) -> np.ndarray:
        if n == 0:
            return np.zeros(0, dtype=np.uint64)
        with self._lock:
            if os.getpid() != self._pid:
                self._rekey()
            raw = self._keystream.update(bytes(8 * n))
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64)

    def _noise(self, kind: str, scale: float, n: int) -> np.ndarray:
        draws = _opendp_noise(kind, scale)(np.zeros(n, dtype=np.int64))
        return np.asarray(draws, dtype=np.int64)

    def _discrete_laplace(self, scale: float, n: int) -> np.ndarray:
        return self._noise("laplace", scale, n)

    def _discrete_gaussian(self, sigma: float, n: int) -> np.ndarray:
        return self._noise("gaussian", sigma, n)

    def _exponential(self, scores: np.ndarray, sensitivity: int, epsilon: float) -> int:
        """OpenDP's noisy max with Gumbel noise of scale 2 sensitivity / epsilon: exactly the
        exponential mechanism. The scores are shifted by their maximum (which changes no
        probability) and must then fit in int64, as must the sensitivity."""
        top = max(scores.tolist())
        shifted = [int(k) - top for k in scores.tolist()]
        if min(shifted) < -INT64_LIMIT or sensitivity >= INT64_LIMIT:
            raise ConfigError(
                "OpenDP's noisy max takes int64 scores: the score range and the sensitivity "
                "must be below 2**63; use a smaller scale s for round(s q)."
            )
        scale = _gumbel_scale(sensitivity, epsilon)
        measurement = _opendp_noisy_max(scale)
        if measurement.map(sensitivity) > epsilon**2 / 8 * (1 + 1e-9):
            raise PrivacyBudgetError(
                f"OpenDP charges {measurement.map(sensitivity)!r} for this selection, above "
                f"epsilon**2/8 = {epsilon**2 / 8!r}; refusing to draw."
            )
        return int(measurement(shifted))

    def __repr__(self) -> str:
        return "SecureSampler()"


# ------------------------------------------------------------------------------ seeded


class SeededSampler(ExactSampler):
    """Reproducible exact sampler for experiments and tests; never for real releases.

    All randomness comes from ``np.random.default_rng(seed)`` or the given Generator (which is
    then shared, not copied).
    """

    seeded = True

    def __init__(self, seed: int | np.random.Generator) -> None:
        if isinstance(seed, np.random.Generator):
            self._rng = seed
        elif isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
            if seed < 0:
                raise ConfigError(f"seed must be a non-negative int; got {seed!r}.")
            self._rng = np.random.default_rng(int(seed))
        else:
            raise ConfigError(
                f"seed must be a non-negative int or a numpy Generator; got {seed!r}. "
                "Use noise_sampler(None) for the secure sampler."
            )

    def _words(self, n: int) -> np.ndarray:
        return self._rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)

    def _below(self, high: int, m: int, dtype: type) -> np.ndarray:
        return self._rng.integers(0, high, size=m, dtype=dtype)

    def __repr__(self) -> str:
        return "SeededSampler(<Generator>)"


# ------------------------------------------------------------------------------- keyed


class KeyedSampler(ExactSampler):
    """Exact noise from an AES-256-CTR keystream under the key of a ``stream`` of the run's
    key schedule (:func:`vertimrf.crypto.schedule.derive`), from a secret only its holder
    knows and the ``inputs`` of everything the release depends on.

    The same secret and label give the same draws, so a re-run of a step on the same inputs
    writes the same bytes and releases nothing new; without the secret the keystream, and so
    the noise, is unpredictable. Every draw uses the exact algorithms of the seeded sampler
    (Canonne, Kamath and Steinke 2020) on this keystream.
    """

    seeded = False

    def __init__(self, secret: bytes, stream: str, *inputs: bytes | str) -> None:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        from vertimrf.crypto.schedule import derive

        key = derive(secret, stream, *inputs)
        self._keystream = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()

    def _words(self, n: int) -> np.ndarray:
        if n == 0:
            return np.zeros(0, dtype=np.uint64)
        raw = self._keystream.update(bytes(8 * n))
        return np.frombuffer(raw, dtype="<u8").astype(np.uint64)

    def _below(self, high: int, m: int, dtype: type) -> np.ndarray:
        return self.integers(high, m).astype(dtype)

    def generator(self) -> np.random.Generator:
        """A numpy Generator seeded from this keystream (256 bits), for the non-DP
        randomness of the same step (post-processing such as tie-breaking)."""
        words = self._words(4)
        return np.random.default_rng([int(w) for w in words])

    def __repr__(self) -> str:
        return "KeyedSampler(<derived key>)"


def noise_sampler(seed: int | np.random.Generator | None) -> NoiseSampler:
    """None -> :class:`SecureSampler` (for releases); int or Generator -> :class:`SeededSampler`."""
    if seed is None:
        return SecureSampler()
    return SeededSampler(seed)


def randomness(
    seed: int | np.random.Generator | None,
) -> tuple[NoiseSampler, np.random.Generator]:
    """The noise sampler and the Generator for non-DP randomness (e.g. synthetic sampling).

    None -> (SecureSampler(), a Generator seeded from OS entropy); an int -> one
    ``default_rng(seed)`` shared by a SeededSampler and the returned Generator; a Generator ->
    (SeededSampler(seed), seed).
    """
    if seed is None:
        return SecureSampler(), np.random.default_rng()
    sampler = SeededSampler(seed)
    return sampler, sampler._rng
