"""The interface every noise sampler implements (:class:`NoiseSampler`: exact discrete noise,
uniform integers and floats, Bernoulli draws, the exponential mechanism's inputs) and its
argument checks; :mod:`vertimrf.privacy.samplers` has the samplers and why they are exact."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import numpy as np

from vertimrf.errors import ConfigError, PrivacyBudgetError

MAX_NOISE_SCALE = 2.0**40
MAX_HIGH = 1 << 63
INT64_LIMIT = 1 << 63
DIGIT_BITS = 64

Size = int | tuple[int, ...]


# ----------------------------------------------------------------------------- validation


def _is_integer(value: Any) -> bool:
    """Whether ``value`` is a Python or numpy integer (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _shape(size: Any) -> tuple[int, ...]:
    """Validate ``size`` and return it as a shape tuple."""
    dims = (size,) if not isinstance(size, (tuple, list)) else tuple(size)
    for d in dims:
        if not _is_integer(d) or d < 0:
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
    if x > MAX_NOISE_SCALE:
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
            _is_integer(x) or (isinstance(x, float) and math.isfinite(x) and x.is_integer())
            for x in values
        ):
            raise ConfigError(
                "scores must be integers (int64, or Python ints in an object array); release "
                "a real score q as the exactly computed integer round(s q)."
            )
        return int_array([int(x) for x in values])
    if arr.dtype.kind != "i":
        raise ConfigError(f"scores must be integers; got an array of dtype {arr.dtype}.")
    return arr.astype(np.int64)


def int_array(ints: list[int]) -> np.ndarray:
    """``ints`` as int64, or as Python ints (object) when one lies beyond int64."""
    if all(-INT64_LIMIT <= x < INT64_LIMIT for x in ints):
        return np.array(ints, dtype=np.int64)
    out = np.empty(len(ints), dtype=object)
    out[:] = ints
    return out


def exponential_inputs(
    scores: Any, sensitivity: Any, epsilon: Any
) -> tuple[np.ndarray, int, float]:
    """Validate the inputs of :meth:`NoiseSampler.exponential_mechanism`: returns the scores
    (int64, or object ints beyond int64), the sensitivity as an int and epsilon as a float."""
    if not _is_integer(sensitivity) or sensitivity < 1:
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
        if not _is_integer(high) or not 1 <= high <= MAX_HIGH:
            raise ConfigError(f"high must be an integer in [1, 2**63]; got {high!r}.")
        high = int(high)
        shape = _shape(size)
        n = math.prod(shape)
        out = np.zeros(n, dtype=np.int64)
        k = (high - 1).bit_length()  # 0 when high == 1: the only value is 0
        if k == 0 or n == 0:
            return out.reshape(shape)
        shift, bound = np.uint64(DIGIT_BITS - k), np.uint64(high)
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
