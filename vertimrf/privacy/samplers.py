"""Exact discrete noise samplers: every noisy value vertimrf releases is drawn here.

Why exact discrete samplers
---------------------------
Textbook Laplace/Gaussian noise drawn in floating point is not the distribution the privacy
proof is about: Mironov (CCS 2012, "On significance of the least significant bits for
differential privacy") showed that the set of doubles a floating-point Laplace sampler can
output depends on the true value, so the low-order bits of a release can reveal it exactly.
vertimrf therefore releases only integers, perturbed by noise from EXACT discrete samplers:
given ideal uniform random bits, the output distribution is exactly the stated one, with no
floating-point rounding anywhere on the path from bits to noise.

The samplers, and who draws with which
--------------------------------------
* :class:`KeyedSampler` draws every unseeded release of the vertical protocol's roles (a party's
  releases, the server's share of the cross noise): the exact algorithms below on an AES-256-CTR
  keystream keyed (HKDF) by a secret only the role holds and a label of every input of the step, so
  a re-run on the same inputs replays the same noise.
* :class:`SecureSampler` (``noise_sampler(None)``) draws the unseeded releases outside the protocol
  (centralized ``PrivMRF``). Discrete Laplace and discrete Gaussian noise come from OpenDP
  (``make_laplace`` / ``make_gaussian`` on ``vector_domain(atom_domain(T="i64"))`` with a zero
  input; OpenDP samples exactly with a cryptographically secure generator and cannot be seeded).
  Exponential-mechanism selections come from OpenDP's ``make_noisy_max`` (exact Gumbel noise).
  Uniform integers, Bernoulli draws and uniform floats come from an AES-256-CTR keystream keyed with
  ``os.urandom(32)`` at construction (re-keyed after a ``fork``).
* :class:`SeededSampler` (``noise_sampler(seed)``, and every role given a seed) is for reproducible
  experiments and tests ONLY: anyone who knows the seed can subtract the noise. All randomness comes
  from a numpy ``Generator``; the noise uses the exact algorithms of Canonne, Kamath and Steinke
  (NeurIPS 2020, "The Discrete Gaussian for Differential Privacy", Algorithms 1-3) in exact
  integer/rational arithmetic (a float scale is converted exactly with ``Fraction(x)``), vectorised
  over a batch of candidates. Two exact shortcuts replace loops of Bernoulli(exp(-1)) trials: a run
  of k successes is one comparison ``U < exp(-k)`` and the geometric count is ``V = max{v : U <
  exp(-v)}`` for one uniform ``U``; the comparison reads the base-2**64 digits of ``U`` lazily
  against digits of ``exp(-v)`` computed with certified bounds from the alternating series of
  ``1/e`` (a tie on a 64-bit digit, probability 2**-64, reads more digits). Rational Bernoulli(n/d)
  draws use ``Generator.integers`` when d < 2**63 and the same lazy digit comparison otherwise.
  The exponential mechanism is rejection sampling on these Bernoulli(exp(-x)) draws.

Privacy charge (integer queries; charge the ledger before drawing)
------------------------------------------------------------------
* ``discrete_laplace(scale=s)`` added to an integer query of L1 sensitivity Delta is
  (Delta/s)-DP (pure), charged as rho = (Delta/s)**2 / 2 in zCDP
  (``PrivacyLedger.charge_pure(..., epsilon=Delta/s)``). Its pmf is proportional to
  exp(-|x|/s); its variance 2 exp(-1/s) / (1 - exp(-1/s))**2 is below 2 s**2.
* ``discrete_gaussian(sigma)`` added to an integer query of L2 sensitivity Delta is
  Delta**2 / (2 sigma**2)-zCDP (Canonne, Kamath and Steinke 2020, Theorem 4, and its
  multivariate version for independent coordinates;
  ``PrivacyLedger.charge_gaussian(..., sensitivity=Delta, sigma=sigma)``). Its variance is
  below sigma**2.
* ``exponential_mechanism(scores, sensitivity=Delta, epsilon=eps)`` on integer scores of
  sensitivity Delta each returns index i with probability proportional to
  exp(eps k_i / (2 Delta)): eps-DP and, having eps-bounded range, eps**2/8-zCDP (Cesar and
  Rogers 2021; ``PrivacyLedger.charge_exponential(..., epsilon=eps)``).
* Scales and sigmas above 2**40 are refused: the draws would no longer fit safely in int64
  (OpenDP saturates at the int64 bounds instead of failing).

Measured cost per value (best of several runs of 10,000 values on a shared 2-core machine;
numpy 2.4, OpenDP 0.16; the OpenDP figures varied by up to 1.5x with the machine's load)
-------------------------------------------------------------------------------------------
=================================  =============  =============
call                               SecureSampler  SeededSampler
=================================  =============  =============
discrete_laplace(scale=10)         6-9 us         0.15-0.2 us
discrete_laplace(scale=0.7)        10-14 us       0.2 us
discrete_gaussian(sigma=30)        10-16 us       0.3 us
discrete_gaussian(sigma=30.3) (*)  12-20 us       1.2-2.6 us
discrete_gaussian(sigma=0.5)       18-29 us       0.2-0.3 us
integers / bernoulli / random      < 0.01 us      < 0.01 us
=================================  =============  =============

(*) a sigma with a 52-bit binary denominator, as produced by calibration, makes the exact
acceptance test of the seeded sampler run on Python big integers (~200 bits).
"""

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
