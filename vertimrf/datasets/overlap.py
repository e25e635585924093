"""Record sets that overlap in part: which rows of one table each party holds, for tests,
benchmarks and ``vertimrf split --overlap``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.errors import ConfigError


def check_overlap(overlap: float) -> float:
    """``overlap`` if it is a fraction from 0 to 1, else a ConfigError (NaN included)."""
    if not 0.0 <= overlap <= 1.0:
        raise ConfigError(
            f"overlap must be a fraction from 0 to 1 (the share of each party's records that "
            f"every party holds); got {overlap}."
        )
    return overlap


def _counts(n_rows: int, n_parties: int, overlap: float) -> tuple[int, int]:
    """``(s, r)``: the rows every party holds and the rows each party holds alone, for a table
    of ``n_rows`` rows split over ``n_parties`` parties with a fraction ``overlap`` of each
    party's records shared: ``s = round(N F / (F + m (1 - F)))`` and
    ``r = floor((N - s) / m)`` (see :func:`split_records`)."""
    check_overlap(overlap)
    if n_rows < 0 or n_parties < 1:
        raise ConfigError(
            f"splitting records needs a table (got {n_rows} rows) and at least one party "
            f"(got {n_parties})."
        )
    shared = round(n_rows * overlap / (overlap + n_parties * (1.0 - overlap)))
    return shared, (n_rows - shared) // n_parties


def split_records(
    n_rows: int, parties: Sequence[str], overlap: float, rng: np.random.Generator
) -> dict[str, np.ndarray]:
    """For each party, the row indices (int64) of the source table that it holds.

    A fraction ``overlap`` (F, 0 <= F <= 1) of EACH party's records is held by every party;
    the rest of a party's records are its own alone, held by no other party. With N rows and
    m parties, ``s = round(N F / (F + m (1 - F)))`` rows are shared and each party holds
    ``r = floor((N - s) / m)`` rows of its own, so every party holds ``s + r`` rows. Both
    sets are drawn at random, without replacement, from ``rng``; the ``N - s - m r`` rows left
    over (fewer than m) are held by no party. Each party's rows come in its own random order.

    F = 1 gives every party every row in the table's order, drawing nothing from ``rng``
    (the split of a table whose parties hold the same records); F = 0 gives disjoint sets.
    """
    names = list(parties)
    if len(set(names)) != len(names):
        raise ConfigError(f"party names must be distinct; got {names}.")
    shared, private = _counts(n_rows, len(names), overlap)
    if overlap == 1.0:
        return {name: np.arange(n_rows, dtype=np.int64) for name in names}
    order = rng.permutation(n_rows).astype(np.int64)
    common = order[:shared]
    out = {}
    for i, name in enumerate(names):
        own = order[shared + i * private : shared + (i + 1) * private]
        out[name] = rng.permutation(np.concatenate([common, own]))
    return out
