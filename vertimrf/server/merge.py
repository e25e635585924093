"""The server's merged view of the parties' FM sketches, with complement sketches."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, MessageError
from vertimrf.privacy.fm import FMNoise
from vertimrf.protocol.sketchset import SketchSet


class MergedSketches:
    """The server's view: all parties' sketches side by side, with complement sketches.

    ``comp_t[row(a, v), h]`` is the complement sketch of value v of attribute a under key h:
    the max of the sketches of a's other values (computed with the top-2 trick).
    """

    def __init__(self, sketches: Sequence[SketchSet]) -> None:
        if not sketches:
            raise ConfigError("CarEst needs at least one party's sketches.")
        fps = {s.key_fingerprint for s in sketches}
        if len(fps) != 1:
            raise MessageError(
                "parties used different hash keys (key fingerprints differ); they must derive "
                "their keys from the same shared secret and t."
            )
        ts = {s.t for s in sketches}
        noises = {s.noise for s in sketches}
        if len(ts) != 1 or len(noises) != 1:
            raise MessageError(
                f"parties disagree on t {sorted(ts)} or on the sketch noise "
                f"{sorted(map(str, noises))}; "
                "all parties must use the protocol's t, gamma and per-sketch epsilon."
            )
        names = [n for s in sketches for n in s.domain.names]
        sizes = [u for s in sketches for u in s.domain.sizes]
        self.domain = Domain(tuple(names), tuple(sizes))
        self.t = ts.pop()
        self.noise: FMNoise = noises.pop()
        self.gamma = self.noise.gamma
        self.offsets = self.domain.offsets
        values = np.concatenate([s.values for s in sketches], axis=1)
        self.comp_t = np.ascontiguousarray(complement_sketches(values, self.domain).T)
        self.full = np.stack(
            [values[:, o : o + u].max(axis=1) for o, u in zip(self.offsets, sizes, strict=True)]
        )


def complement_sketches(values: np.ndarray, domain: Domain) -> np.ndarray:
    """Complement sketch of every (attribute, value): max over the attribute's other values.

    Top-2 trick per attribute and repetition: the complement of the unique argmax is the
    second largest value, every other complement is the max. No O(u^2) loop.
    """
    out = np.empty_like(values)
    for off, u in zip(domain.offsets, domain.sizes, strict=True):
        block = values[:, off : off + u]
        if u == 1:
            out[:, off] = 0
            continue
        m1 = block.max(axis=1)
        is_max = block == m1[:, None]
        unique = is_max.sum(axis=1) == 1
        m2 = np.where(is_max, np.uint8(0), block).max(axis=1)
        out[:, off : off + u] = np.where(is_max & unique[:, None], m2[:, None], m1[:, None])
    return out
