"""The number of threads the Numba kernels use; design notes in docs/design/core.md."""

from __future__ import annotations

import numbers

from vertimrf.errors import ConfigError

__all__ = ["get_num_threads", "max_threads", "set_num_threads"]


def max_threads() -> int:
    """The size of Numba's threading layer: the most threads :func:`set_num_threads` allows."""
    from numba import config

    # numba.config sets its settings at import time, so their types are unknown to mypy
    return int(config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]


def set_num_threads(n: int) -> None:
    """Run the Numba kernels on ``n`` threads (1 to :func:`max_threads`) from now on.

    >>> set_num_threads(1); get_num_threads()
    1
    >>> set_num_threads(max_threads())
    """
    import numba

    most = max_threads()
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= int(n) <= most:
        raise ConfigError(
            f"the number of threads must be an integer from 1 to {most} (Numba's thread pool, "
            f"set by NUMBA_NUM_THREADS); got {n!r}."
        )
    numba.set_num_threads(int(n))


def get_num_threads() -> int:
    """The number of threads the Numba kernels use now."""
    import numba

    return int(numba.get_num_threads())
