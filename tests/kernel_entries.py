"""Numba entry points through which the tests reach kernels the package only inlines."""

import numpy as np
from numba import njit

from vertimrf.kernels.hashing import siphash24_lanes, xxh64_u64


@njit
def siphash24_shared_message(k0: np.ndarray, k1: np.ndarray, m: int) -> np.ndarray:
    """``siphash(k0[i], k1[i], m)`` for every key ``i``, through :func:`siphash24_lanes` ; the
    encode kernel inlines ``siphash24_lanes``)."""
    out = np.empty(k0.size, np.uint64)
    siphash24_lanes(k0, k1, m, out)
    return out


@njit
def xxh64_array(seeds: np.ndarray, messages: np.ndarray) -> np.ndarray:
    """Element-wise xxHash64: ``out[i] = xxh64(seeds[i], messages[i])``."""
    out = np.empty(messages.size, np.uint64)
    for i in range(messages.size):
        out[i] = xxh64_u64(seeds[i], messages[i])
    return out
