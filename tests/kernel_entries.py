"""The Numba entry point through which the tests reach the vector SipHash (only inlined)."""

import numpy as np
from numba import njit

from vertimrf.kernels.hashing import siphash24_lanes


@njit
def siphash24_shared_message(k0: np.ndarray, k1: np.ndarray, m: int) -> np.ndarray:
    """``siphash(k0[i], k1[i], m)`` for every key ``i``, through :func:`siphash24_lanes` ; the
    encode kernel inlines ``siphash24_lanes``)."""
    out = np.empty(k0.size, np.uint64)
    siphash24_lanes(k0, k1, m, out)
    return out
