"""SketchSet: one party's FM sketch values as a message carries them (the paper's method).

Each value is eps'-DP alone, but the set is NOT differentially private: see
:mod:`vertimrf.privacy.fm_gap`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import MessageError
from vertimrf.privacy.fm import FMNoise


@dataclass(frozen=True)
class SketchSet:
    """FM sketch values of one party: ``values[h, offsets[j] + v]`` for key h, attribute j.

    Each value is eps'-DP alone, but the set is NOT DP (a record's hash value enters a sketch
    of every one of its attributes; see :mod:`vertimrf.privacy.fm_gap`). The domain is
    public and the key fingerprint reveals nothing about the keys.
    """

    values: np.ndarray
    domain: Domain
    noise: FMNoise
    key_fingerprint: str

    def __post_init__(self) -> None:
        if self.values.dtype != np.uint8 or self.values.ndim != 2:
            raise MessageError(f"sketch values must be a 2-D uint8 array; got {self.values.dtype}.")
        if self.values.shape[1] != sum(self.domain.sizes):
            raise MessageError(
                f"sketch values have {self.values.shape[1]} columns but the domain has "
                f"{sum(self.domain.sizes)} values."
            )

    @property
    def t(self) -> int:
        """Number of repetitions (hash keys)."""
        return int(self.values.shape[0])
