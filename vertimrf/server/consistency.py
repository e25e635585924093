"""Consistency enforcement between overlapping marginal tables (the paper's
Section 6.2); design notes in docs/design/server.md."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from vertimrf.errors import ConfigError


def _projection(table: np.ndarray, axis: int) -> np.ndarray:
    other = tuple(i for i in range(table.ndim) if i != axis)
    return table.sum(axis=other)


def enforce_consistency(
    attrs: Sequence[Sequence[Hashable]],
    tables: Sequence[np.ndarray],
    total: float,
    *,
    tol: float = 1e-6,
    max_iter: int = 100,
) -> list[np.ndarray]:
    """Make the tables' shared 1-way projections agree; returns new tables summing to total."""
    if len(attrs) != len(tables):
        raise ConfigError("give one attribute tuple per table.")
    out = []
    for a, t in zip(attrs, tables, strict=True):
        t = np.clip(np.asarray(t, dtype=np.float64), 0.0, None)
        if t.ndim != len(a):
            raise ConfigError(f"table over {tuple(a)} has {t.ndim} axes.")
        s = t.sum()
        out.append(t * (total / s) if s > 0 else np.full(t.shape, total / t.size))
    shared: dict[Hashable, list[tuple[int, int]]] = {}
    for k, a in enumerate(attrs):
        for axis, name in enumerate(a):
            shared.setdefault(name, []).append((k, axis))
    shared = {name: places for name, places in shared.items() if len(places) > 1}
    for _ in range(max_iter):
        change = 0.0
        for places in shared.values():
            avg = np.mean([_projection(out[k], ax) for k, ax in places], axis=0)
            for k, ax in places:
                t = out[k]
                diff = (avg - _projection(t, ax)) / (t.size // t.shape[ax])
                shape = [1] * t.ndim
                shape[ax] = t.shape[ax]
                new = np.clip(t + diff.reshape(shape), 0.0, None)
                s = new.sum()
                new = new * (total / s) if s > 0 else np.full(t.shape, total / t.size)
                change = max(change, float(np.abs(new - t).max()))
                out[k] = new
        if change <= tol * total:
            break
    return out
