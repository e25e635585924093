"""A table's numeric releases before its fit: DP quantile cuts and fine
histograms; design notes in docs/design/synth.md."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from vertimrf.domain import EQUAL, NUMERIC, QUANTILE, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.numeric import fine_cells, fine_histogram, quantile_cuts
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.within import PLACEMENTS, Placement, placement

__all__ = ["NUMERIC_SHARE", "numeric_releases", "releasing_columns"]

NUMERIC_SHARE = 0.05  # of a fit's rho, when any column releases


def releasing_columns(spec: DomainSpec, values: str) -> list[str]:
    """The columns of ``spec`` that release before the fit when values are placed by
    ``values`` (one of :data:`~vertimrf.within.PLACEMENTS`): those cut at quantiles, and
    for "fine" every numeric one with more than one fine sub-bin per bin."""
    if values not in PLACEMENTS:
        raise ConfigError(f"values must be one of {list(PLACEMENTS)}; got {values!r}.")
    return [
        c.name
        for c in spec.columns
        if c.kind == NUMERIC and (values == "fine" and fine_cells(c) > 1 or c.scale == QUANTILE)
    ]


def numeric_releases(
    frame: pd.DataFrame,
    spec: DomainSpec,
    *,
    values: str,
    rho: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> tuple[DomainSpec, Placement, list[Release]]:
    """``spec`` with its quantile cuts measured on ``frame``, the placement of values inside
    their bins, and the releases, each charged to ``ledger`` before its draw."""
    names = releasing_columns(spec, values)
    if not names:  # the fit's encoding checks every cell
        return spec, placement(values), []
    provisional = DomainSpec(
        [dataclasses.replace(c, scale=EQUAL) if not c.resolved else c for c in spec.columns],
        spec.ignored,
    )
    TableEncoder(provisional).encode(frame[list(spec.names)])  # every cell, before any release
    each = rho / len(names)
    columns = {c.name: c for c in spec.columns}
    counts: dict[str, np.ndarray] = {}
    releases: list[Release] = []
    for name in names:
        col = columns[name]
        x = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64)
        fine = values == "fine" and fine_cells(col) > 1
        share = each / 2 if fine and not col.resolved else each
        if not col.resolved:
            col, cuts = quantile_cuts(col, x, rho=share, noise=noise, ledger=ledger, party=party)
            columns[name] = col
            releases += cuts
        if fine:
            counts[name], release = fine_histogram(
                col, x, rho=share, noise=noise, ledger=ledger, party=party
            )
            releases.append(release)
    resolved = DomainSpec([columns[c.name] for c in spec.columns], spec.ignored)
    return resolved, placement(values, counts), releases
