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
from abc import ABC, abstractmethod
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError

__all__ = [
    "KeyedSampler",
    "NoiseSampler",
    "SecureSampler",
    "SeededSampler",
    "exponential_inputs",
    "noise_sampler",
    "randomness",
]

_MAX_NOISE_SCALE = 2.0**40
_MAX_HIGH = 1 << 63
_INT64_LIMIT = 1 << 63
_DIGIT_BITS = 64
_TABLE_MAX = 64  # exp(-v) < 2**-64 for v >= 45, so every larger v shares the digit 0

Size = int | tuple[int, ...]


# ----------------------------------------------------------------------------- validation


def _shape(size: Any) -> tuple[int, ...]:
    """Validate ``size`` and return it as a shape tuple."""
    dims = (size,) if not isinstance(size, (tuple, list)) else tuple(size)
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 0:
            raise ConfigError(
                f"size must be a non-negative int or a tuple of non-negative ints; got {size!r}."
            )
    return tuple(int(d) for d in dims)


def _noise_param(name: str, value: Any) -> float:
    """Validate a noise scale (positive, finite, at most 2**40) and return it as a float."""
    if isinstance(value, (bool, np.bool_)):
        raise PrivacyBudgetError(f"{name} must be a positive finite number; got {value!r}.")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise PrivacyBudgetError(
            f"{name} must be a positive finite number; got {value!r}."
        ) from None
    if not (x > 0 and math.isfinite(x)):
        raise PrivacyBudgetError(
            f"{name} must be a positive finite number; got {value!r}. Derive it from a "
            "positive privacy share (e.g. scale = sensitivity / epsilon)."
        )
    if x > _MAX_NOISE_SCALE:
        raise PrivacyBudgetError(
            f"{name}={x:.6g} exceeds 2**40: the integer draws would not fit safely in int64. "
            "Raise the privacy share of this release or lower its sensitivity."
        )
    return x


def _integer_scores(scores: Any) -> np.ndarray:
    """A non-empty 1-d array of integers as int64, or as Python ints (object) beyond int64."""
    arr = np.asarray(scores)
    if arr.ndim != 1 or arr.size == 0:
        raise ConfigError(f"scores must be a non-empty 1-d array; got shape {arr.shape}.")
    if arr.dtype == object or arr.dtype.kind in "uf":
        values = arr.tolist()
        if not all(
            (isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)))
            or (isinstance(x, float) and math.isfinite(x) and x.is_integer())
            for x in values
        ):
            raise ConfigError(
                "scores must be integers (int64, or Python ints in an object array); release "
                "a real score q as the exactly computed integer round(s q)."
            )
        ints = [int(x) for x in values]
        if all(-_INT64_LIMIT <= x < _INT64_LIMIT for x in ints):
            return np.array(ints, dtype=np.int64)
        out = np.empty(len(ints), dtype=object)
        out[:] = ints
        return out
    if arr.dtype.kind != "i":
        raise ConfigError(f"scores must be integers; got an array of dtype {arr.dtype}.")
    return arr.astype(np.int64)


def exponential_inputs(
    scores: Any, sensitivity: Any, epsilon: Any
) -> tuple[np.ndarray, int, float]:
    """Validate the inputs of :meth:`NoiseSampler.exponential_mechanism`: returns the scores
    (int64, or object ints beyond int64), the sensitivity as an int and epsilon as a float."""
    if (
        isinstance(sensitivity, (bool, np.bool_))
        or not isinstance(sensitivity, (int, np.integer))
        or sensitivity < 1
    ):
        raise PrivacyBudgetError(
            f"sensitivity must be a positive integer; got {sensitivity!r} (for a real score "
            "of sensitivity Delta released as round(s q), use ceil(s Delta))."
        )
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(
        epsilon, (int, float, np.integer, np.floating)
    ):
        raise PrivacyBudgetError(f"epsilon must be a positive finite number; got {epsilon!r}.")
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise PrivacyBudgetError(f"epsilon must be a positive finite number; got {epsilon!r}.")
    return _integer_scores(scores), int(sensitivity), eps


# ------------------------------------------------------------ exact digits of exp(-v)


@functools.lru_cache(maxsize=32)
def _inv_e_bounds(n: int) -> tuple[Fraction, Fraction]:
    """Rationals lo < 1/e < hi: consecutive partial sums of sum_k (-1)**k / k!, n >= 2."""
    fact = math.factorial(n)
    p = sum((-1) ** k * (fact // math.factorial(k)) for k in range(n + 1))
    s_n = Fraction(p, fact)
    s_n1 = Fraction(p * (n + 1) + (-1) ** (n + 1), fact * (n + 1))
    return min(s_n, s_n1), max(s_n, s_n1)


@functools.lru_cache(maxsize=4096)
def _exp_neg_floor(v: int, bits: int) -> int:
    """floor(exp(-v) * 2**bits) exactly, for an integer v >= 1.

    The alternating series brackets 1/e strictly, so lo**v < exp(-v) < hi**v; once both
    bounds have the same floor at this precision, that floor is exact.
    """
    if v >= bits:  # exp(-v) <= exp(-bits) < 2**-bits
        return 0
    n = 24
    while True:
        lo, hi = _inv_e_bounds(n)
        f_lo = (lo.numerator**v << bits) // lo.denominator**v
        f_hi = (hi.numerator**v << bits) // hi.denominator**v
        if f_lo == f_hi:
            return f_lo
        n *= 2


@functools.lru_cache(maxsize=1)
def _exp_neg_table() -> np.ndarray:
    """uint64 table T[v] = floor(exp(-v) * 2**64) for v = 1..64 (T[0] is unused)."""
    table = [0] + [_exp_neg_floor(v, _DIGIT_BITS) for v in range(1, _TABLE_MAX + 1)]
    return np.array(table, dtype=np.uint64)


class _LazyUniform:
    """A uniform U in [0, 1) whose base-2**64 digits are drawn on demand.

    Used only to resolve ties (probability 2**-64 per comparison) of the vectorised paths:
    the first digit is the word already drawn, further digits come from ``draw``.
    """

    def __init__(self, first: int, draw: Callable[[int], np.ndarray]) -> None:
        self._prefix = int(first)
        self._digits = 1
        self._draw = draw

    def _extend(self) -> None:
        self._prefix = (self._prefix << _DIGIT_BITS) | int(self._draw(1)[0])
        self._digits += 1

    def below_exp_neg(self, v: int) -> bool:
        """Decide U < exp(-v) exactly (v >= 0 an integer)."""
        if v == 0:
            return True
        while True:
            d = _exp_neg_floor(v, _DIGIT_BITS * self._digits)
            # U in [P, P+1) / 2**b and exp(-v) in (d, d+1) / 2**b (irrational), strictly.
            if self._prefix != d:
                return self._prefix < d
            self._extend()

    def below_ratio(self, num: int, den: int) -> bool:
        """Decide U < num/den exactly (num >= 0, den >= 1)."""
        while True:
            d = (num << (_DIGIT_BITS * self._digits)) // den
            if self._prefix != d:
                return self._prefix < d
            self._extend()


def _collect(n: int, draw: Callable[[int], np.ndarray], rate: float) -> np.ndarray:
    """Fill n values from batches of i.i.d. rejection-sampling candidates.

    ``draw(m)`` runs m candidates and returns the accepted values in order; accepted values
    are i.i.d. from the target, so keeping the first n of them is exact.
    """
    out = np.empty(n, dtype=np.int64)
    filled = tried = got = 0
    while filled < n:
        need = n - filled
        m = int(need / rate * 1.1) + 16
        vals = draw(m)
        tried += m
        got += len(vals)
        take = min(need, len(vals))
        out[filled : filled + take] = vals[:take]
        filled += take
        rate = max(got / tried, 0.05)
    return out


# --------------------------------------------------------------------------- interface


class NoiseSampler(ABC):
    """Source of every random value vertimrf releases (see the module docstring)."""

    seeded: bool = False

    @abstractmethod
    def _words(self, n: int) -> np.ndarray:
        """n independent uniform 64-bit words (uint64)."""

    @abstractmethod
    def _discrete_laplace(self, scale: float, n: int) -> np.ndarray:
        """n discrete Laplace draws (int64) for a validated scale."""

    @abstractmethod
    def _discrete_gaussian(self, sigma: float, n: int) -> np.ndarray:
        """n discrete Gaussian draws (int64) for a validated sigma."""

    def discrete_laplace(self, scale: float, size: Size) -> np.ndarray:
        """i.i.d. int64 draws with P(x) proportional to exp(-|x|/scale), x integer.

        Added to an integer query of L1 sensitivity Delta this is (Delta/scale)-DP.
        """
        return self._draw_noise("scale", scale, size, self._discrete_laplace)

    def discrete_gaussian(self, sigma: float, size: Size) -> np.ndarray:
        """i.i.d. int64 draws with P(x) proportional to exp(-x**2 / (2 sigma**2)), x integer.

        Added to an integer query of L2 sensitivity Delta this is Delta**2/(2 sigma**2)-zCDP.
        """
        return self._draw_noise("sigma", sigma, size, self._discrete_gaussian)

    def exponential_mechanism(self, scores: Any, sensitivity: int, epsilon: float) -> int:
        """The exponential mechanism: index i with probability proportional to
        exp(epsilon * k_i / (2 * sensitivity)), exactly, for integer scores k_i (higher is
        better) that each move by at most ``sensitivity`` when one record changes.

        epsilon-DP, and epsilon**2/8-zCDP (bounded range; see the module docstring).
        """
        return self._exponential(*exponential_inputs(scores, sensitivity, epsilon))

    def _exponential(self, scores: np.ndarray, sensitivity: int, epsilon: float) -> int:
        """The exponential mechanism on validated inputs (see :meth:`exponential_mechanism`)."""
        raise NotImplementedError(f"{type(self).__name__} has no exponential mechanism.")

    @staticmethod
    def _draw_noise(
        name: str, value: float, size: Size, draw: Callable[[float, int], np.ndarray]
    ) -> np.ndarray:
        param = _noise_param(name, value)
        shape = _shape(size)
        n = math.prod(shape)
        if n == 0:
            return np.zeros(shape, dtype=np.int64)
        return draw(param, n).reshape(shape)

    def integers(self, high: int, size: Size) -> np.ndarray:
        """int64 uniform on {0, ..., high-1}, exactly (rejection sampling on random bits)."""
        if (
            isinstance(high, (bool, np.bool_))
            or not isinstance(high, (int, np.integer))
            or not 1 <= high <= _MAX_HIGH
        ):
            raise ConfigError(f"high must be an integer in [1, 2**63]; got {high!r}.")
        high = int(high)
        shape = _shape(size)
        n = math.prod(shape)
        out = np.zeros(n, dtype=np.int64)
        k = (high - 1).bit_length()  # 0 when high == 1: the only value is 0
        if k == 0 or n == 0:
            return out.reshape(shape)
        shift, bound = np.uint64(_DIGIT_BITS - k), np.uint64(high)
        filled = 0
        while filled < n:
            need = n - filled
            m = int(need * (1 << k) / high * 1.05) + 16  # acceptance high / 2**k >= 1/2
            w = self._words(m) >> shift
            w = w[w < bound]
            take = min(need, len(w))
            out[filled : filled + take] = w[:take]
            filled += take
        return out.reshape(shape)

    def bernoulli(self, p: float, size: Size) -> np.ndarray:
        """bool draws with P(True) = floor(p * 2**53) / 2**53 exactly (never above p)."""
        if isinstance(p, (bool, np.bool_)):
            raise ConfigError(f"p must be a probability in [0, 1]; got {p!r}.")
        try:
            pf = float(p)
        except (TypeError, ValueError):
            raise ConfigError(f"p must be a probability in [0, 1]; got {p!r}.") from None
        if not 0.0 <= pf <= 1.0:
            raise ConfigError(f"p must be a probability in [0, 1]; got {p!r}.")
        shape = _shape(size)
        threshold = np.uint64(math.floor(pf * 2.0**53))  # exact: scaling by 2**53
        return (self._words(math.prod(shape)) >> np.uint64(11) < threshold).reshape(shape)

    def random(self, size: Size) -> np.ndarray:
        """float64 uniform on the grid {k / 2**53} of [0, 1) (for non-DP uses)."""
        shape = _shape(size)
        bits = self._words(math.prod(shape)) >> np.uint64(11)
        return (bits.astype(np.float64) * 2.0**-53).reshape(shape)


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
        if min(shifted) < -_INT64_LIMIT or sensitivity >= _INT64_LIMIT:
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


class _ExactSampler(NoiseSampler):
    """The exact algorithms of Canonne, Kamath and Steinke (2020) on this sampler's bits:
    every random value comes from :meth:`_words` and :meth:`_below`."""

    @abstractmethod
    def _below(self, high: int, m: int, dtype: type) -> np.ndarray:
        """m independent integers uniform on {0, ..., high-1} (1 <= high < 2**63)."""

    # -- exact building blocks, each vectorised over a batch ---------------------------------

    def _bern_ratio(self, num: np.ndarray, den: int) -> np.ndarray:
        """Bernoulli(num[i] / den) for 0 <= num[i] < den (num int64 or object array)."""
        if den < _INT64_LIMIT and num.dtype != object:
            return self._below(den, len(num), np.int64) < num
        nums = num.tolist()
        q = [(x << _DIGIT_BITS) // den for x in nums]  # first base-2**64 digit, < 2**64
        w = self._words(len(q))
        qa = np.array(q, dtype=np.uint64)
        res = w < qa
        for i in np.flatnonzero(w == qa):
            res[i] = _LazyUniform(int(w[i]), self._words).below_ratio(nums[i], den)
        return res

    def _bern_exp_neg_frac(self, num: np.ndarray, den: int) -> np.ndarray:
        """Bernoulli(exp(-num[i]/den)) for 0 <= num[i] < den: CKS20 Algorithm 1."""
        res = np.zeros(len(num), dtype=bool)
        active = np.arange(len(num))
        k = 1
        while active.size:
            a = self._bern_ratio(num[active], den * k)
            res[active[~a]] = k % 2 == 1
            active = active[a]
            k += 1
        return res

    def _below_exp_neg(self, k: np.ndarray) -> np.ndarray:
        """One uniform U per entry: is U < exp(-k[i])? (k >= 0 integers; int64 or object).

        Equivalent to k[i] independent Bernoulli(exp(-1)) trials all succeeding.
        """
        kc = np.minimum(k, _TABLE_MAX).astype(np.int64)
        w = self._words(len(kc))
        thr = _exp_neg_table()[kc]
        res = (w < thr) | (kc == 0)
        for i in np.flatnonzero((w == thr) & (kc > 0)):
            res[i] = _LazyUniform(int(w[i]), self._words).below_exp_neg(int(k[i]))
        return res

    def _geometric(self, m: int) -> np.ndarray:
        """m draws of V, P(V >= v) = exp(-v): Bernoulli(exp(-1)) successes before a failure."""
        asc = _exp_neg_table()[1:][::-1]  # floor(exp(-v) 2**64) for v = 64..1, ascending
        w = self._words(m)
        v = len(asc) - np.searchsorted(asc, w, side="right")  # #{v : T[v] > w}
        pos = np.minimum(np.searchsorted(asc, w, side="left"), len(asc) - 1)
        for i in np.flatnonzero(asc[pos] == w):
            u = _LazyUniform(int(w[i]), self._words)
            count = 0
            while u.below_exp_neg(count + 1):
                count += 1
            v[i] = count
        return v.astype(np.int64)

    def _bern_exp_neg(self, num: np.ndarray, den: int) -> np.ndarray:
        """Bernoulli(exp(-num[i]/den)) for num[i] >= 0 (int64 or object array)."""
        if num.dtype != object and den < _INT64_LIMIT:
            whole, frac = np.divmod(num, den)
        else:
            num = num.astype(object)
            whole, frac = num // den, num % den
        res = self._below_exp_neg(whole)
        idx = np.flatnonzero(res)
        res[idx] = self._bern_exp_neg_frac(frac[idx], den)
        return res

    def _laplace_candidates(self, t: int, s: int, m: int) -> np.ndarray:
        """CKS20 Algorithm 2 on m candidates (scale t/s); returns the accepted draws."""
        u = self._below(t, m, np.int64)  # t < 2**53 (scale <= 2**40)
        u = u[self._bern_exp_neg_frac(u, t)]
        v = self._geometric(len(u))
        if not len(u):
            return u
        if (int(v.max()) + 1) * t < _INT64_LIMIT:
            x = u + t * v
            y = x // s if s < _INT64_LIMIT else np.zeros_like(x)  # x < 2**63 <= s
        else:  # astronomically unlikely; exact in Python integers
            y = (u.astype(object) + v.astype(object) * t) // s
            if int(np.max(y)) >= _INT64_LIMIT:
                raise OverflowError("a discrete Laplace draw does not fit in int64.")
            y = y.astype(np.int64)
        b = self._below(2, len(y), np.int8).astype(bool)
        keep = ~(b & (y == 0))
        return np.where(b, -y, y)[keep]

    def _discrete_laplace(self, scale: float, n: int) -> np.ndarray:
        frac = Fraction(scale)
        t, s = frac.numerator, frac.denominator
        return _collect(n, lambda m: self._laplace_candidates(t, s, m), rate=0.5)

    def _discrete_gaussian(self, sigma: float, n: int) -> np.ndarray:
        """CKS20 Algorithm 3: discrete Laplace(t) proposals, t = floor(sigma) + 1."""
        frac = Fraction(sigma)
        a, b = frac.numerator, frac.denominator
        t = a // b + 1
        # gamma = (|y| - sigma**2/t)**2 / (2 sigma**2) = (|y| b**2 t - a**2)**2 / (2 a**2 b**2 t**2)
        big_a, big_b = a * a, b * b * t
        den = 2 * big_a * b * b * t * t

        def draw(m: int) -> np.ndarray:
            y = self._laplace_candidates(t, 1, m)
            if not len(y):
                return y
            ya = np.abs(y)
            if max(int(ya.max()) * big_b, big_a) < 2**31 and den < 2**62:
                num = (ya * big_b - big_a) ** 2  # < 2**62: exact in int64
            else:
                num = (ya.astype(object) * big_b - big_a) ** 2
            return y[self._bern_exp_neg(num, den)]

        return _collect(n, draw, rate=0.4)

    def _exponential(self, scores: np.ndarray, sensitivity: int, epsilon: float) -> int:
        """Rejection sampling with a uniform proposal: propose i uniformly, accept it with
        probability exp(-gamma (k_max - k_i)), gamma = epsilon / (2 sensitivity), exactly
        (``Fraction(epsilon)``). An accepted i has probability proportional to
        exp(gamma k_i), the exponential mechanism; the proposals are batched and the first
        accepted one in order is returned, which keeps the draw exact. The expected number
        of proposals is K / sum_j exp(-gamma (k_max - k_j)), at most K.
        """
        k = len(scores)
        if k == 1:
            return 0
        values = scores.tolist()
        top = max(values)
        eps = Fraction(epsilon)
        den = 2 * sensitivity * eps.denominator
        nums = [eps.numerator * (top - v) for v in values]
        if max(nums) < _INT64_LIMIT:
            num = np.array(nums, dtype=np.int64)
        else:
            num = np.empty(k, dtype=object)
            num[:] = nums
        # The batch size only sets how much randomness is read, never which index is drawn.
        gaps = np.array([float(min(top - v, 1 << 60)) for v in values])
        rate = float(np.mean(np.exp(-float(eps) / (2 * sensitivity) * gaps)))  # >= 1/K
        batch = min(max(16, int(2 / rate)), 1 << 16)
        while True:
            proposals = self._below(k, batch, np.int64)
            accepted = np.flatnonzero(self._bern_exp_neg(num[proposals], den))
            if accepted.size:
                return int(proposals[accepted[0]])


class SeededSampler(_ExactSampler):
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


class KeyedSampler(_ExactSampler):
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
