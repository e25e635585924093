"""Bin maps: public functions of the released value counts, agreed on by parties and server.

A party releases discrete-Laplace counts of EVERY value of an attribute it bins (not only the
observed ones, which would leak which values occur). The bin map (contiguous equal-frequency
bins in code order) and the within-bin value distribution are post-processing of those
counts, so the server can re-derive the map and check it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import ConfigError


@dataclass(frozen=True)
class BinMap:
    """Public bin map of one attribute and its DP value counts."""

    value_to_bin: np.ndarray
    noisy_counts: np.ndarray

    @property
    def n_bins(self) -> int:
        return int(self.value_to_bin.max()) + 1

    @property
    def size(self) -> int:
        return int(self.value_to_bin.shape[0])

    def within_bin(self) -> np.ndarray:
        """U(v | bin(v)) from the noisy counts clipped at 0; uniform in a bin with no mass."""
        c = np.clip(self.noisy_counts, 0.0, None)
        tot = np.bincount(self.value_to_bin, weights=c, minlength=self.n_bins)
        width = np.bincount(self.value_to_bin, minlength=self.n_bins).astype(np.float64)
        bt = tot[self.value_to_bin]
        return np.where(bt > 0, c / np.where(bt > 0, bt, 1.0), 1.0 / width[self.value_to_bin])


def frequency_bins(noisy_counts: np.ndarray, b: int) -> np.ndarray:
    """Contiguous bins (in code order) of about equal noisy mass; exactly min(b, u) bins."""
    counts = np.clip(np.asarray(noisy_counts, dtype=np.float64), 0.0, None)
    u = counts.shape[0]
    if b < 1:
        raise ConfigError(f"the number of bins must be >= 1; got {b}.")
    k = min(b, u)
    cum = np.cumsum(counts)
    total = cum[-1]
    if total > 0:
        # A bin starts at the first value whose mass midpoint reaches the next quantile.
        starts = np.searchsorted(cum - counts / 2, total * np.arange(1, k) / k, side="left")
    else:
        starts = np.round(np.arange(1, k) * u / k).astype(np.int64)
    # Force strictly increasing starts with room for every later bin: each bin gets >= 1 value.
    for j in range(k - 1):
        lo = 1 if j == 0 else starts[j - 1] + 1
        starts[j] = min(max(starts[j], lo), u - (k - 1 - j))
    out = np.zeros(u, dtype=np.int64)
    out[starts] = 1
    return np.cumsum(out)


def bin_axes(table: np.ndarray, maps: Sequence[np.ndarray | None]) -> np.ndarray:
    """The binned table: T_bin(b_1..b_l) = sum of T(v_1..v_l) over the v with bin_i(v_i) = b_i
    (axis i of ``table`` is attribute i; a ``None`` map leaves its axis as it is). Linear,
    so it commutes with additive sharing: on uint64 shares the sums wrap modulo 2^64, and
    the binned shares of two parties add up to the binned exact counts."""
    out = np.asarray(table)
    for axis, m in enumerate(maps):
        if m is None:
            continue
        moved = np.moveaxis(out, axis, 0)
        acc = np.zeros((int(m.max()) + 1, *moved.shape[1:]), dtype=out.dtype)
        np.add.at(acc, m, moved)
        out = np.moveaxis(acc, 0, axis)
    return out
