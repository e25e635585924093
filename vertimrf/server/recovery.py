"""Histogram recovery on the server: spread a marginal estimated on bins back over values.

HisRec uses the within-bin value distributions U(v | bin) that the parties' released value
counts give (:class:`~vertimrf.protocol.bins.BinMap`); UniSam, the ablation, spreads each bin
uniformly. Both are post-processing.
"""

from __future__ import annotations

import numpy as np

from vertimrf.protocol.bins import BinMap


def hisrec(binned: np.ndarray, maps: list[BinMap | None]) -> np.ndarray:
    """Spread a marginal estimated on bin domains over the original values.

    T(v_1..v_l) = T_bin(bin(v_1)..bin(v_l)) * prod_i U_i(v_i | bin(v_i)); an attribute with
    ``None`` is not binned. Values whose noisy share is 0 get 0 (not 1 as in the reference).
    """
    out = np.asarray(binned, dtype=np.float64)
    for axis, m in enumerate(maps):
        if m is None:
            continue
        out = np.take(out, m.value_to_bin, axis=axis)
        shape = [1] * out.ndim
        shape[axis] = m.size
        out = out * m.within_bin().reshape(shape)
    return out


def unisam(binned: np.ndarray, maps: list[BinMap | None]) -> np.ndarray:
    """The UniSam ablation: spread each bin cell uniformly over the bin's values."""
    out = np.asarray(binned, dtype=np.float64)
    for axis, m in enumerate(maps):
        if m is None:
            continue
        width = np.bincount(m.value_to_bin, minlength=m.n_bins).astype(np.float64)
        shape = [1] * out.ndim
        shape[axis] = m.size
        out = np.take(out, m.value_to_bin, axis=axis) / width[m.value_to_bin].reshape(shape)
    return out
