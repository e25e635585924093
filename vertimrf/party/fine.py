"""A party's exact fine histograms: the counts of its numeric columns' values in the fine
sub-bins of their bins (:func:`~vertimrf.privacy.numeric.fine_column`), read from its table
wherever it is held. :meth:`~vertimrf.party.secure.SecureParty.measure` adds their noise.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec, TableEncoder
from vertimrf.privacy.numeric import fine_column

__all__ = ["fine_spec", "frame_counts", "one_way_fine"]


def fine_spec(spec: DomainSpec, columns: Sequence[str]) -> DomainSpec:
    """The ``columns`` of a party's ``spec`` (numeric) cut into their fine sub-bins, its
    other columns ignored (so its table reads as it is)."""
    others = [c for c in spec.names if c not in columns]
    return DomainSpec([fine_column(spec[c]) for c in columns], [*others, *spec.ignored])


def frame_counts(data: pd.DataFrame, spec: DomainSpec) -> list[np.ndarray]:
    """The count of every code of each column of ``spec`` in ``data`` (int64)."""
    codes = TableEncoder(spec).encode(data[list(spec.names)])
    return [np.bincount(codes[:, j], minlength=c.size) for j, c in enumerate(spec.columns)]


def one_way_fine(spec: DomainSpec, counts: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The exact fine histograms, by column, from the counts of every code of each column of
    the fine ``spec`` (an empty cell's code, the last, left out)."""
    return {
        c.name: np.asarray(n[: c.bounds[2]], dtype=np.int64)
        for c, n in zip(spec.columns, counts, strict=True)
    }
