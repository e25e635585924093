"""The counts of a party's DP quantile cuts and fine histograms (docs/design/party.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.numeric import fine_column, grid_column, quantile_cuts_from_counts
from vertimrf.privacy.samplers import NoiseSampler

__all__ = [
    "column_counts",
    "fine_spec",
    "frame_counts",
    "grid_spec",
    "measured_cuts",
    "one_way_fine",
]


def grid_spec(spec: DomainSpec, columns: Sequence[str]) -> DomainSpec:
    """The ``columns`` of a party's ``spec`` (cut at quantiles) cut at their candidate
    grids, its other columns ignored."""
    others = [c for c in spec.names if c not in columns]
    return DomainSpec([grid_column(spec[c]) for c in columns], [*others, *spec.ignored])


def measured_cuts(
    spec: DomainSpec,
    counts: Mapping[str, np.ndarray],
    rhos: Mapping[str, float],
    *,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str,
) -> DomainSpec:
    """``spec`` with the DP quantile cuts of each column of ``rhos`` drawn from its grid
    ``counts`` (each cut charged before its draw); a column of one bin takes none."""
    out = []
    for col in spec.columns:
        if col.name in rhos:
            col, _ = quantile_cuts_from_counts(
                col, counts[col.name], rho=rhos[col.name], noise=noise, ledger=ledger,
                party=party,
            )  # fmt: skip
        elif not col.resolved:
            col = col.with_cuts(())
        out.append(col)
    return DomainSpec(out, spec.ignored)


def fine_spec(spec: DomainSpec, columns: Sequence[str]) -> DomainSpec:
    """The ``columns`` of a party's ``spec`` (numeric) cut into their fine sub-bins, its
    other columns ignored (so its table reads as it is)."""
    others = [c for c in spec.names if c not in columns]
    return DomainSpec([fine_column(spec[c]) for c in columns], [*others, *spec.ignored])


def column_counts(codes: np.ndarray, spec: DomainSpec) -> list[np.ndarray]:
    """The count of every code of each column of ``spec`` in ``codes`` (n x d, int64)."""
    return [np.bincount(codes[:, j], minlength=c.size) for j, c in enumerate(spec.columns)]


def frame_counts(data: pd.DataFrame, spec: DomainSpec) -> list[np.ndarray]:
    """The count of every code of each column of ``spec`` in ``data`` (int64)."""
    return column_counts(TableEncoder(spec).encode(data[list(spec.names)]), spec)


def one_way_fine(spec: DomainSpec, counts: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The exact fine histograms, by column, from the counts of every code of each column of
    the fine ``spec`` (an empty cell's code, the last, left out)."""
    return {
        c.name: np.asarray(n[: c.bounds[2]], dtype=np.int64)
        for c, n in zip(spec.columns, counts, strict=True)
    }
