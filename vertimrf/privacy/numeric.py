"""A numeric column's DP quantile cuts and fine histogram (docs/design/privacy.md)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from vertimrf.domain import CUTS, QUANTILE, ColumnSpec
from vertimrf.errors import ConfigError
from vertimrf.privacy.ledger import PrivacyLedger, Release, exponential_release, gaussian_release
from vertimrf.privacy.mechanisms import exponential_mechanism
from vertimrf.privacy.samplers import NoiseSampler

__all__ = [
    "CANDIDATES",
    "FINE_CELLS",
    "fine_cells",
    "fine_column",
    "fine_histogram",
    "fine_index",
    "fine_release",
    "grid_column",
    "noisy_fine",
    "quantile_cuts",
    "quantile_cuts_from_counts",
    "quantile_releases",
]

FINE_CELLS = 256  # a column's fine histogram: about this many sub-bins in all
CANDIDATES = 1024  # the quantile cuts' public candidate grid, inside the bounds
QUANTILE_MECHANISM = "quantile_cut"
FINE_MECHANISM = "fine_histogram"


def fine_cells(col: ColumnSpec) -> int:
    """Sub-bins per bin of ``col``'s fine histogram."""
    return max(1, FINE_CELLS // col.bounds[2])


def fine_index(col: ColumnSpec, x: np.ndarray) -> np.ndarray:
    """The fine sub-bin (int64, ``bin * fine_cells + j``) of each value of ``x`` (inside
    the bounds, not NaN) of resolved numeric ``col``."""
    s = fine_cells(col)
    edges = col.edges
    b = col.bin_of(x)
    left, width = edges[b], edges[b + 1] - edges[b]
    safe = np.where(width > 0, width, 1.0)
    j = np.floor((x - left) / safe * s).astype(np.int64)
    return b * s + np.clip(np.where(width > 0, j, 0), 0, s - 1)


def fine_column(col: ColumnSpec) -> ColumnSpec:
    """``col`` (resolved numeric) cut into its fine sub-bins: its codes are
    :func:`fine_index`'s, read as a table reader reads any column (its missing code, if
    any, is the last). Its cut points may tie where a bin is empty (DP quantile cuts that
    tie), so it takes them as measured cuts do."""
    edges, s = col.edges, fine_cells(col)
    steps = np.arange(s) / s
    cuts = np.ravel(edges[:-1, None] + steps * np.diff(edges)[:, None])[1:]
    return dataclasses.replace(col, scale=QUANTILE, bins=cuts.size + 1, cuts=tuple(cuts.tolist()))


def fine_release(column: str, cells: int, rho: float, party: str | None) -> Release:
    """The ledger entry of ``column``'s fine histogram of ``cells`` counts at ``rho``
    (sigma = sqrt(1 / (2 rho)); one record moves one count by 1)."""
    _positive(rho, column)
    return gaussian_release(
        FINE_MECHANISM, 1.0, math.sqrt(1.0 / (2.0 * rho)), party=party,
        description=f"fine histogram of {column!r} ({cells} cells)",
        sampler="discrete_gaussian", column=column, cells=cells,
    )  # fmt: skip


def noisy_fine(
    release: Release, counts: np.ndarray, noise: NoiseSampler, ledger: PrivacyLedger
) -> np.ndarray:
    """``counts`` (the exact fine histogram ``release`` describes) plus discrete Gaussian
    noise at its sigma, ``release`` charged to ``ledger`` before the draw."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.shape != (release.params["cells"],):
        raise ConfigError(
            f"{release.description}: {counts.size} counts, not {release.params['cells']}."
        )
    ledger.charge(release)
    return counts + noise.discrete_gaussian(release.params["sigma"], counts.shape)


def fine_histogram(
    col: ColumnSpec,
    x: np.ndarray,
    *,
    rho: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> tuple[np.ndarray, Release]:
    """The noisy fine histogram (int64, ``bins * fine_cells`` counts) of the non-empty
    values ``x`` of ``col``, charged ``rho`` (sigma = sqrt(1 / (2 rho))) before its draw."""
    x = np.asarray(x, dtype=np.float64)
    cells = col.bounds[2] * fine_cells(col)
    counts = np.bincount(fine_index(col, x[~np.isnan(x)]), minlength=cells)
    release = fine_release(col.name, cells, rho, party)
    return noisy_fine(release, counts, noise, ledger), release


def grid_column(col: ColumnSpec) -> ColumnSpec:
    """``col`` (numeric) cut at every candidate of its quantile grid and just above it, so
    that its codes tell, for each candidate, the values below it, equal to it and above it
    (bins [lower, g1), {g1}, (g1, g2), {g2}, ..., (gK, upper]): all a quantile score reads.
    A table reader counts them (:func:`quantile_cuts_from_counts`)."""
    grid = _grid(col)
    cuts = np.ravel(np.column_stack([grid, np.nextafter(grid, np.inf)]))
    return dataclasses.replace(col, scale=CUTS, bins=cuts.size + 1, cuts=tuple(cuts.tolist()))


def quantile_releases(column: str, bins: int, rho: float, party: str | None) -> list[Release]:
    """The ledger entries of the k-1 quantile cuts of ``column`` (``bins`` = k) at ``rho``
    in all: each one exponential mechanism at eps = sqrt(8 rho / (k-1)) (eps^2 / 8 each),
    its sensitivity OpenDP's for its alpha (which the candidates do not change)."""
    return _cut_releases(column, rho, party, _scorers([0.0], bins))


def _cut_releases(column: str, rho: float, party: str | None, scorers: list) -> list[Release]:
    """:func:`quantile_releases`, with OpenDP's ``scorers`` of each alpha."""
    _positive(rho, column)
    bins = len(scorers) + 1
    eps = math.sqrt(8.0 * rho / (bins - 1))
    return [
        exponential_release(
            QUANTILE_MECHANISM,
            eps,
            party=party,
            description=f"quantile cut {i}/{bins} of {column!r}",
            sensitivity=int(score.map(1)),
            candidates=CANDIDATES,
        )  # fmt: skip
        for i, score in enumerate(scorers, start=1)
    ]


def quantile_cuts_from_counts(
    col: ColumnSpec,
    counts: np.ndarray,
    *,
    rho: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> tuple[ColumnSpec, list[Release]]:
    """``col`` (scale "quantile") with its k-1 DP cuts, from the count of each code of
    :func:`grid_column` (a trailing empty-cell code is ignored): OpenDP's scores of a table
    with the same values below, at and above every candidate, each cut's release charged
    before its draw; and the releases."""
    if col.scale != QUANTILE:
        raise ConfigError(f"column {col.name!r} is not cut at quantiles.")
    grid = _grid(col)
    lower, upper, _ = col.bounds
    between = (grid[:-1] + grid[1:]) / 2
    stand_ins = np.concatenate([[lower], np.ravel(np.column_stack([grid, [*between, upper]]))])
    data = np.repeat(stand_ins, np.asarray(counts, np.int64)[: stand_ins.size]).tolist()
    scorers = _scorers(grid.tolist(), col.bounds[2])
    planned = _cut_releases(col.name, rho, party, scorers)
    cuts = []
    for score, release in zip(scorers, planned, strict=True):
        k, _ = exponential_mechanism(
            -np.asarray(score(data), dtype=np.int64),
            sensitivity=release.params["sensitivity"],
            epsilon=release.params["epsilon"],
            noise=noise,
            ledger=ledger,
            mechanism=QUANTILE_MECHANISM,
            party=party,
            description=release.description,
        )
        cuts.append(float(grid[k]))
    return col.with_cuts(sorted(cuts)), planned


def quantile_cuts(
    col: ColumnSpec,
    x: np.ndarray,
    *,
    rho: float,
    noise: NoiseSampler,
    ledger: PrivacyLedger,
    party: str | None = None,
) -> tuple[ColumnSpec, list[Release]]:
    """``col`` (scale "quantile") with its k-1 DP cuts measured on the non-empty values
    ``x`` (:func:`quantile_cuts_from_counts`); and the releases."""
    x = np.asarray(x, dtype=np.float64)
    grid = grid_column(col)
    counts = np.bincount(grid.bin_of(x[~np.isnan(x)]), minlength=grid.bounds[2])
    return quantile_cuts_from_counts(col, counts, rho=rho, noise=noise, ledger=ledger, party=party)


def _grid(col: ColumnSpec) -> np.ndarray:
    """The quantile cuts' public candidates: CANDIDATES equally spaced inside the bounds."""
    lower, upper, _ = col.bounds
    return np.linspace(lower, upper, CANDIDATES + 2)[1:-1]


def _scorers(grid: list[float], bins: int) -> list:
    """OpenDP's score of the candidates ``grid`` for each alpha i / bins, i = 1..bins-1."""
    import opendp.prelude as dp

    dp.enable_features("contrib")
    domain = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    return [
        dp.t.make_quantile_score_candidates(domain, dp.symmetric_distance(), grid, i / bins)
        for i in range(1, bins)
    ]


def _positive(rho: float, column: str) -> None:
    if not (rho > 0 and math.isfinite(rho)):
        raise ConfigError(f"column {column!r}: a numeric release needs rho > 0; got {rho!r}.")
