"""A MarkovRandomField as a file: its domain, junction tree, record count and log-potentials.

The file is the library's checksummed, pickle-free container
(:mod:`vertimrf.container`). :func:`mrf_state` and :func:`mrf_from_state` give the
metadata and arrays, so a fitted synthesizer can store its model inside its own file. The
tree is stored as built (cliques in layout order, parent-child edges), so a loaded model
calibrates and samples exactly like the saved one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, MessageError, ModelTooLargeError
from vertimrf.mrf.junction_tree import (
    DEFAULT_MAX_CELLS,
    JunctionTree,
    check_model_size,
    model_size,
)
from vertimrf.mrf.model import MarkovRandomField

MRF_KIND = "vertimrf-mrf"
# The layout of the model's metadata; a file of another layout is refused.
MRF_LAYOUT = 1
POTENTIALS = "potentials"


def mrf_state(model: MarkovRandomField) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The model's metadata (JSON-ready) and arrays, for :func:`mrf_from_state`."""
    tree, domain = model.tree, model.domain
    meta = {
        "layout": MRF_LAYOUT,
        "names": list(domain.names),
        "sizes": list(domain.sizes),
        "cliques": [list(c) for c in tree.cliques],
        "tree_edges": [list(e) for e in tree.edges],
        "chordal_edges": sorted(sorted(int(a) for a in e) for e in tree.chordal_graph.edges),
        "total": model.total,
    }
    return meta, {POTENTIALS: model.potentials.values}


def mrf_from_state(
    meta: object,
    arrays: dict[str, np.ndarray],
    where: str | os.PathLike,
    max_cells: int | None = None,
) -> MarkovRandomField:
    """The model :func:`mrf_state` described; :class:`MessageError` (naming ``where``) if
    the description is malformed or inconsistent."""
    if not isinstance(meta, dict) or meta.get("layout") != MRF_LAYOUT:
        layout = meta.get("layout") if isinstance(meta, dict) else None
        raise MessageError(
            f"{where}: model layout {layout!r} is not supported (this vertimrf reads layout "
            f"{MRF_LAYOUT}); save the model again with a matching vertimrf."
        )
    try:
        domain = Domain(tuple(_strs(meta["names"])), tuple(_ints(meta["sizes"])))
        d = len(domain)
        cliques = [tuple(_ints(c, d)) for c in meta["cliques"]]
        edges = [_pair(_ints(e, len(cliques))) for e in meta["tree_edges"]]
        chordal = nx.Graph()
        chordal.add_nodes_from(range(d))
        chordal.add_edges_from(tuple(_ints(e, d)) for e in meta["chordal_edges"])
        total = float(meta["total"])
        if any(list(c) != sorted(set(c)) or not c for c in cliques):
            raise ValueError("a clique is empty or not sorted")
        if len(edges) != max(len(cliques) - 1, 0):
            raise ValueError("the tree edges do not join the cliques")
        check_model_size(model_size(domain, cliques), max_cells)
        tree = JunctionTree(domain, chordal, cliques, edges)
        if sorted(tree.preorder) != list(range(len(cliques))):
            raise ValueError("the tree edges do not join every clique")
        potentials = arrays[POTENTIALS]
        return MarkovRandomField(domain, tree, potentials, total, max_cells=tree.size.total_cells)
    except ModelTooLargeError as exc:
        raise MessageError(f"{where}: {exc}") from None
    except (KeyError, TypeError, ValueError, DomainError, ConfigError) as exc:
        raise MessageError(f"{where}: malformed model ({exc}).") from None


def save_mrf(model: MarkovRandomField, path: str | os.PathLike) -> Path:
    """Write ``model`` to ``path`` (atomically); returns the path."""
    meta, arrays = mrf_state(model)
    write_container(path, MRF_KIND, meta, arrays)
    return Path(path)


def load_mrf(path: str | os.PathLike, *, max_cells: int | None = None) -> MarkovRandomField:
    """The model :func:`save_mrf` wrote; refuses a file over ``max_cells`` cells (default
    :data:`~vertimrf.mrf.junction_tree.DEFAULT_MAX_CELLS`)."""
    meta, arrays = read_container(path, MRF_KIND, array_bytes=potentials_bound(max_cells))
    return mrf_from_state(meta, arrays, path, max_cells)


def potentials_bound(max_cells: int | None) -> Callable[[str], int | None]:
    """The container's ``array_bytes`` bound for a model's arrays (float64 potentials)."""
    limit = 8 * (DEFAULT_MAX_CELLS if max_cells is None else int(max_cells))
    return lambda name: limit if name == POTENTIALS else None


def _pair(values: list[int]) -> tuple[int, int]:
    """A tree edge: exactly two clique indices."""
    if len(values) != 2:
        raise ValueError("the tree edges do not join the cliques")
    return values[0], values[1]


def _ints(values: Any, bound: int | None = None) -> list[int]:
    """A JSON list of integers (each in 0..bound-1 when ``bound`` is given)."""
    if not isinstance(values, list) or not all(type(v) is int for v in values):
        raise TypeError(f"expected a list of integers, got {str(values)[:60]}")
    if bound is not None and any(not 0 <= v < bound for v in values):
        raise ValueError(f"index out of 0..{bound - 1} in {values[:8]}")
    return values


def _strs(values: Any) -> list[str]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError("attribute names must be a list of strings")
    return values
