"""The stable sorting permutation of record keys (tokens, PRF values, slots), found fast."""

from __future__ import annotations

import numpy as np


def stable_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.argsort(keys, kind="stable")`` and the keys in that order. Keys that are all
    distinct (tokens, PRF values, slots: ties are refused or impossible) have one sorting
    permutation, which introsort finds in about 40% of the stable sort's time; keys with a
    tie take the stable sort."""
    order = np.argsort(keys)
    ordered = keys[order]
    if (ordered[1:] == ordered[:-1]).any():
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
    return order, ordered
