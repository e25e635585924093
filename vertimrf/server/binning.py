"""Binning in the select pipeline: which re-measured 2-way marginals to
measure on bins; design notes in docs/design/server.md."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vertimrf.protocol.bins import BinMap, bin_axes, frequency_bins
from vertimrf.protocol.secure.marginals import BinMaps
from vertimrf.server.recovery import hisrec


@dataclass(frozen=True)
class BinChoice:
    """A binned re-measurement: its maps and the estimated squared errors (L2, in counts^2)
    of its HisRec recovery and of a full-domain re-measurement."""

    maps: BinMaps
    error: float
    full_error: float


def bin_maps(ones: Sequence[np.ndarray], m: tuple[int, ...], b: int) -> BinMaps:
    """Equal-frequency bins (contiguous in code order) of at most ``b`` per attribute of ``m``
    with more than ``b`` values (the others ``None``), from the pooled 1-way counts."""
    return tuple(
        tuple(int(x) for x in frequency_bins(ones[a], b)) if ones[a].size > b else None for a in m
    )


def recover(binned: np.ndarray, maps: BinMaps, ones: Sequence[np.ndarray], m: tuple) -> np.ndarray:
    """HisRec of a binned table of ``m`` (shaped) over the full domain, with each value's
    share of its bin from the pooled 1-way counts ``ones``."""
    return hisrec(binned, _bin_maps(maps, ones, m))


def _bin_maps(maps: BinMaps, ones: Sequence[np.ndarray], m: tuple) -> list[BinMap | None]:
    return [
        None if b is None else BinMap(np.asarray(b, np.int64), ones[a])
        for a, b in zip(m, maps, strict=True)
    ]


def binned_error(
    first: np.ndarray,
    first_scale: float,
    sigma: float,
    maps: BinMaps,
    ones: Sequence[np.ndarray],
    ones_var: Sequence[float],
    m: tuple,
) -> tuple[float, float]:
    """The estimated squared error of re-measuring ``m`` on ``maps`` at noise scale
    ``sigma`` and recovering it by HisRec, and the estimate's standard deviation (module
    docstring). ``ones_var[a]`` is the variance of each pooled 1-way count of attribute a."""
    bms = _bin_maps(maps, ones, m)
    binned = bin_axes(first, [None if bm is None else bm.value_to_bin for bm in bms])
    residual = first - hisrec(binned, bms)
    spread = np.maximum(binned, 0.0)  # each cell's bin count, to be spread by the shares
    axes, block = [], np.ones(first.shape)
    for axis, bm in enumerate(bms):
        shape = [1] * first.ndim
        shape[axis] = first.shape[axis]
        if bm is None:
            axes.append((np.ones(shape), None))
            continue
        spread = np.take(spread, bm.value_to_bin, axis=axis)
        width = np.bincount(bm.value_to_bin, minlength=bm.n_bins)[bm.value_to_bin]
        share = bm.within_bin()
        mass = np.bincount(bm.value_to_bin, np.clip(bm.noisy_counts, 0.0, None), bm.n_bins)
        mass = mass[bm.value_to_bin]
        # Var of a value's share c_v / C of its bin from the counts' noise (first order).
        share_var = ones_var[m[axis]] * ((1 - share) ** 2 + share**2 * (width - 1))
        share_var = share_var / np.maximum(mass, 1.0) ** 2
        axes.append((share.reshape(shape), share_var.reshape(shape)))
        block = block * width.reshape(shape)
    weight = np.prod(np.broadcast_arrays(*(w for w, _ in axes)), axis=0)
    shares = 0.0  # HisRec's error from the noisy shares: the other axes' shares held fixed
    for i, (_, var_i) in enumerate(axes):
        if var_i is not None:
            others = np.prod(
                np.broadcast_arrays(*(w for j, (w, _) in enumerate(axes) if j != i)), 0
            )
            shares += float((spread**2 * others**2 * var_i).sum())
    var = first_scale**2 * np.maximum(0.0, 1.0 - 2.0 * weight + weight**2 * block)
    excess = np.maximum(0.0, residual**2 - var)  # each cell's squared bias, estimated
    bias2 = max(0.0, float((residual**2).sum() - var.sum()))
    noise = sigma**2 * float((weight**2).sum())
    error = noise + bias2 + shares
    return error, math.sqrt(float((2.0 * var**2 + 4.0 * excess * var).sum()))


MARGIN = 3.0  # standard deviations of the estimate by which binning must win


def choose_bins(
    first: np.ndarray,
    first_scale: float,
    sigma: float,
    ones: Sequence[np.ndarray],
    ones_var: Sequence[float],
    m: tuple,
) -> BinChoice | None:
    """The bins with the lowest estimated squared error for re-measuring the 2-way marginal
    ``m`` at noise scale ``sigma`` per cell, or None unless it beats the full domain by
    MARGIN standard deviations of its estimate. ``first`` is ``m``'s first release (shaped), with
    noise scale ``first_scale``; ``ones`` the pooled 1-way counts, ``ones_var`` their
    variances."""
    full = first.size * sigma**2
    best = None
    b = 2
    while b < max(first.shape):
        maps = bin_maps(ones, m, b)
        error, spread = binned_error(first, first_scale, sigma, maps, ones, ones_var, m)
        if error + MARGIN * spread < full and (best is None or error < best.error):
            best = BinChoice(maps, error, full)
        b *= 2
    return best
