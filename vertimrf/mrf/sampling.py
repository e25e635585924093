"""Junction-tree forward sampling (the Python side; the per-row work is in
kernels/sample.py); design notes in docs/design/mrf.md."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.kernels import sample as ks
from vertimrf.mrf.cliques import ProjectionMap, c_strides
from vertimrf.mrf.junction_tree import CalibratedModel

SAMPLE_CHUNK = 65_536
"""Rows per chunk (public and fixed: the rows a seed gives depend on it)."""


@dataclass(frozen=True)
class _CliqueDraw:
    """What drawing one clique's new attributes needs, the same for every chunk."""

    probs: np.ndarray  # the clique's marginal table
    sep: tuple[int, ...]  # the separator with its parent (empty at the root)
    sep_shape: tuple[int, ...]
    pm: ProjectionMap  # clique -> separator
    rest_codes: np.ndarray  # every combination of the new attributes, one per row
    new: np.ndarray  # the new attributes' columns


def forward_sample(model: CalibratedModel, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records from ``model`` as an (n, d) int64 code matrix: the chunks of
    :func:`sample_chunks` for the same generator, in order, in one array."""
    n = _check(n, rng)
    out = np.zeros((n, len(model.domain)), dtype=np.int64)
    for _ in _draw_chunks(model, n, rng, out):
        pass
    return out


def sample_chunks(model: CalibratedModel, n: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """``n`` records from ``model`` as int64 code matrices of :data:`SAMPLE_CHUNK` rows (the
    last one shorter; none for n = 0), drawn one at a time as the iterator advances."""
    return _draw_chunks(model, _check(n, rng), rng, None)


def _check(n: int, rng: np.random.Generator) -> int:
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(
            "sample() needs a numpy.random.Generator, e.g. numpy.random.default_rng(seed)."
        )
    n = int(n)
    if n < 0:
        raise ConfigError(f"Cannot draw a negative number of records ({n}).")
    return n


def _draw_chunks(
    model: CalibratedModel, n: int, rng: np.random.Generator, out: np.ndarray | None
) -> Iterator[np.ndarray]:
    """The chunks of ``n`` rows, in order: views of ``out`` when given, else new arrays."""
    plan = _plan(model)
    d = len(model.domain)
    chunk = SAMPLE_CHUNK
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        rows = np.zeros((stop - start, d), dtype=np.int64) if out is None else out[start:stop]
        _draw(plan, rows, rng)
        yield rows
        del rows  # the next chunk is drawn without holding this one


def _plan(model: CalibratedModel) -> list[_CliqueDraw]:
    """Each clique's draw, in pre-order."""
    tree, layout, domain = model.tree, model.layout, model.domain
    probs = model.clique_marginals()
    sep_of = {child: sep for (_, child), sep in zip(tree.edges, tree.separators, strict=True)}
    plan = []
    for c in tree.preorder:
        clique = layout.cliques[c]
        sep = tuple(sep_of.get(c, ()))
        new = [a for a in clique if a not in sep]
        rest_codes = np.indices(domain.shape(new), dtype=np.int64).reshape(len(new), -1).T
        plan.append(
            _CliqueDraw(
                probs[layout.slice(c)],
                sep,
                domain.shape(sep),
                ProjectionMap.build(clique, sep, domain),
                np.ascontiguousarray(rest_codes),
                np.array(new, dtype=np.int64),
            )
        )
    return plan


def _draw(plan: list[_CliqueDraw], out: np.ndarray, rng: np.random.Generator) -> None:
    """Fill ``out`` (rows x d) with records, clique by clique."""
    n = out.shape[0]
    for step in plan:
        pm = step.pm
        code = separator_codes(out, step.sep, step.sep_shape)
        sizes = np.bincount(code, minlength=pm.base.size).astype(np.int64)
        counts = np.zeros(step.probs.size, dtype=np.int64)
        ks.round_groups(step.probs, pm.base, pm.rest, sizes, rng.random(pm.base.size), counts)
        order, starts = ks.group_rows(code, rng.permutation(n).astype(np.int64), pm.base.size)
        ks.assign_values(order, starts, counts, pm.base, pm.rest, step.rest_codes, step.new, out)


def separator_codes(rows: np.ndarray, attrs: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """C-order cell index over ``attrs`` of every row (zeros when ``attrs`` is empty)."""
    if not attrs:
        return np.zeros(rows.shape[0], dtype=np.int64)
    return rows[:, list(attrs)] @ np.array(c_strides(shape), dtype=np.int64)
