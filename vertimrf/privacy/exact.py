"""The exact discrete samplers of Canonne, Kamath and Steinke (NeurIPS 2020, Algorithms 1-3) on
a stream of uniform words, in integer and rational arithmetic only (:class:`ExactSampler`);
:mod:`vertimrf.privacy.samplers` gives them a numpy generator or a keystream."""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from vertimrf.privacy.noise import DIGIT_BITS, INT64_LIMIT, NoiseSampler, int_array

_TABLE_MAX = 64  # exp(-v) < 2**-64 for v >= 45, so every larger v shares the digit 0


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
    table = [0] + [_exp_neg_floor(v, DIGIT_BITS) for v in range(1, _TABLE_MAX + 1)]
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
        self._prefix = (self._prefix << DIGIT_BITS) | int(self._draw(1)[0])
        self._digits += 1

    def below_exp_neg(self, v: int) -> bool:
        """Decide U < exp(-v) exactly (v >= 0 an integer)."""
        if v == 0:
            return True
        while True:
            d = _exp_neg_floor(v, DIGIT_BITS * self._digits)
            # U in [P, P+1) / 2**b and exp(-v) in (d, d+1) / 2**b (irrational), strictly.
            if self._prefix != d:
                return self._prefix < d
            self._extend()

    def below_ratio(self, num: int, den: int) -> bool:
        """Decide U < num/den exactly (num >= 0, den >= 1)."""
        while True:
            d = (num << (DIGIT_BITS * self._digits)) // den
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


class ExactSampler(NoiseSampler):
    """The exact algorithms of Canonne, Kamath and Steinke (2020) on this sampler's bits:
    every random value comes from :meth:`_words` and :meth:`_below`."""

    @abstractmethod
    def _below(self, high: int, m: int, dtype: type) -> np.ndarray:
        """m independent integers uniform on {0, ..., high-1} (1 <= high < 2**63)."""

    # -- exact building blocks, each vectorised over a batch ---------------------------------

    def _bern_ratio(self, num: np.ndarray, den: int) -> np.ndarray:
        """Bernoulli(num[i] / den) for 0 <= num[i] < den (num int64 or object array)."""
        if den < INT64_LIMIT and num.dtype != object:
            return self._below(den, len(num), np.int64) < num
        nums = num.tolist()
        q = [(x << DIGIT_BITS) // den for x in nums]  # first base-2**64 digit, < 2**64
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
        if num.dtype != object and den < INT64_LIMIT:
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
        if (int(v.max()) + 1) * t < INT64_LIMIT:
            x = u + t * v
            y = x // s if s < INT64_LIMIT else np.zeros_like(x)  # x < 2**63 <= s
        else:  # astronomically unlikely; exact in Python integers
            y = (u.astype(object) + v.astype(object) * t) // s
            if int(np.max(y)) >= INT64_LIMIT:
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
        num = int_array([eps.numerator * (top - v) for v in values])
        # The batch size only sets how much randomness is read, never which index is drawn.
        gaps = np.array([float(min(top - v, 1 << 60)) for v in values])
        rate = float(np.mean(np.exp(-float(eps) / (2 * sensitivity) * gaps)))  # >= 1/K
        batch = min(max(16, int(2 / rate)), 1 << 16)
        while True:
            proposals = self._below(k, batch, np.int64)
            accepted = np.flatnonzero(self._bern_exp_neg(num[proposals], den))
            if accepted.size:
                return int(proposals[accepted[0]])
