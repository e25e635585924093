"""A plain numpy junction-tree calibration: the reference the Numba kernels are checked against
(``tests/kernels/test_kernels_bp.py``) and the baseline ``benchmarks/bench_mrf.py`` times them
against.

It runs the same two-pass schedule as the kernels, with numpy broadcasting.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.mrf.cliques import Clique, CliqueLayout
from vertimrf.mrf.inference import logsumexp

__all__ = ["NumpyCalibrator"]


class NumpyCalibrator:
    """Two-pass log-space calibration in plain numpy, on the same schedule as the kernel.

    Hugin form: the downward message over an edge is divided by that edge's upward message
    (with -inf kept as -inf); log Z is read off clique ``zclique``. Built once per tree;
    ``calibrate`` is the timed part.
    """

    def __init__(
        self,
        layout: CliqueLayout,
        message_order: Sequence[tuple[int, int, int]],
        separators: Sequence[Clique],
        zclique: int = 0,
    ) -> None:
        self.layout = layout
        self.zclique = zclique
        self.steps = []
        for src, dst, e in message_order:
            cs, cd = layout.cliques[src], layout.cliques[dst]
            sep = set(separators[e])
            axes = tuple(i for i, a in enumerate(cs) if a not in sep)
            bshape = tuple(layout.shapes[dst][i] if a in sep else 1 for i, a in enumerate(cd))
            self.steps.append((src, dst, e, axes, bshape))

    def calibrate(self, theta: np.ndarray) -> tuple[np.ndarray, float]:
        """Beliefs (flat buffer) and log Z for the flat log-potential buffer ``theta``."""
        lay = self.layout
        beliefs = theta.copy()
        views = [beliefs[lay.slice(i)].reshape(lay.shapes[i]) for i in range(len(lay))]
        up: dict[int, np.ndarray] = {}
        for src, dst, e, axes, bshape in self.steps:
            x = views[src]
            m = np.max(x, axis=axes, keepdims=True)
            m = np.where(m > -np.inf, m, 0.0)
            with np.errstate(divide="ignore"):
                msg = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
            msg = msg.ravel()
            if e in up:
                old = up[e]
                msg = np.where(old > -np.inf, msg - np.where(old > -np.inf, old, 0.0), -np.inf)
            else:
                up[e] = msg
            views[dst] += msg.reshape(bshape)
        return beliefs, float(logsumexp(views[self.zclique]))
