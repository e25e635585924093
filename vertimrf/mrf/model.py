"""MarkovRandomField: log-potentials on the maximal cliques of a junction tree,
calibrated by BP; design notes in docs/design/mrf.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from vertimrf.container import read_container, write_container
from vertimrf.domain import Domain
from vertimrf.errors import ConfigError, DomainError, MessageError, ModelTooLargeError
from vertimrf.kernels import bp
from vertimrf.mrf.cliques import Clique, CliqueLayout, CliquePotentials, ProjectionSet
from vertimrf.mrf.inference import query_log_marginal
from vertimrf.mrf.junction_tree import (
    DEFAULT_MAX_CELLS,
    JunctionTree,
    check_model_size,
    model_size,
)
from vertimrf.mrf.memo import QUERY_MEMO_TABLE_SETS, QueryMemo
from vertimrf.mrf.sampling import forward_sample, sample_chunks

PotentialsLike = CliquePotentials | np.ndarray | Mapping[tuple[int, ...], np.ndarray]


def _check_values(values: np.ndarray) -> None:
    if np.isnan(values).any() or np.isposinf(values).any():
        raise ConfigError("Log-potentials must not contain NaN or +inf; use -inf for zeros.")


class BPPlan:
    """Flat message schedule of a junction tree, in the form the calibration kernel takes."""

    def __init__(self, tree: JunctionTree, layout: CliqueLayout) -> None:
        pairs: list[tuple[int, Clique]] = []
        index: dict[tuple[int, Clique], int] = {}
        for e, (a, b) in enumerate(tree.edges):
            for c in (a, b):
                index[(c, tree.separators[e])] = len(pairs)
                pairs.append((c, tree.separators[e]))
        self.projections = ProjectionSet(layout, pairs)
        order = tree.message_order
        sep = tree.separators
        self.src = np.array([index[(s, sep[e])] for s, _, e in order], dtype=np.int64)
        self.dst = np.array([index[(d, sep[e])] for _, d, e in order], dtype=np.int64)
        self.edge = np.array([e for _, _, e in order], dtype=np.int64)
        self.eptr = np.zeros(len(sep) + 1, dtype=np.int64)
        np.cumsum([layout.domain.size(s) for s in sep], out=self.eptr[1:])
        self.root = tree.root
        self.offsets = layout.offsets
        *maps, _ = self.projections.arrays()  # the kernel takes no output offsets
        schedule = (self.src, self.dst, self.edge, self.eptr, self.root, self.offsets)
        self._args = (*schedule, self.projections.clique, *maps)  # calibrate's, after ``up``

    def run(
        self,
        theta: np.ndarray,
        beliefs: np.ndarray,
        probs: np.ndarray,
        pshift: np.ndarray,
        up: np.ndarray,
    ) -> float:
        """Calibrate: beliefs <- theta + messages, probs <- exp(beliefs - pshift); log Z."""
        return bp.calibrate(theta, beliefs, probs, pshift, up, *self._args)


class MarkovRandomField:
    """Discrete MRF over ``domain`` with log-potentials on the junction tree's maximal cliques.

    Args:
        domain: attribute sizes; the model works on attribute indices ``0..d-1``.
        cliques_or_tree: a :class:`JunctionTree`, or cliques / edges / a networkx graph from
            which one is built (triangulated with ``heuristic``, refused over ``max_cells``).
        potentials: initial log-potentials (see :meth:`set_potentials`); zeros (uniform) if None.
        total: the count every marginal sums to (the model's record count).
    """

    def __init__(
        self,
        domain: Domain,
        cliques_or_tree: JunctionTree | Iterable[Iterable[int]] | nx.Graph,
        potentials: PotentialsLike | None = None,
        total: float = 1.0,
        *,
        heuristic: str = "min_fill",
        max_cells: int | None = None,
    ) -> None:
        if isinstance(cliques_or_tree, JunctionTree):
            tree = cliques_or_tree
            if tree.domain.sizes != domain.sizes:
                raise DomainError(
                    f"The junction tree was built for domain sizes {tree.domain.sizes}, not "
                    f"{domain.sizes}; build it from this domain."
                )
            check_model_size(tree.size, max_cells)
        else:
            tree = JunctionTree.build(
                domain, cliques_or_tree, heuristic=heuristic, max_cells=max_cells
            )
        self.domain = domain
        self.tree = tree
        self.layout = CliqueLayout(domain, tree.cliques)
        self.plan = BPPlan(tree, self.layout)
        self.total = total
        self._beliefs = np.empty(self.layout.total_cells)
        self._probs = np.empty(self.layout.total_cells)
        self._pshift = np.empty(len(self.layout))
        self._up = np.empty(int(self.plan.eptr[-1]))
        self._logz = np.nan
        self._calibrated: tuple[int, int] | None = None
        self._memo = QueryMemo(QUERY_MEMO_TABLE_SETS * self.layout.total_cells)
        self._potentials = CliquePotentials(self.layout)
        if potentials is not None:
            self.set_potentials(potentials)

    @property
    def cliques(self) -> list[Clique]:
        """The maximal cliques (sorted attribute tuples)."""
        return self.layout.cliques

    @property
    def total(self) -> float:
        """The count every marginal is scaled to."""
        return self._total

    @total.setter
    def total(self, value: float) -> None:
        value = float(value)
        if not np.isfinite(value) or value <= 0:
            raise ConfigError(f"total must be a positive finite count; got {value}.")
        self._total = value

    @property
    def potentials(self) -> CliquePotentials:
        """Log-potentials (flat buffer + layout). Call :meth:`calibrate` after in-place edits."""
        return self._potentials

    @potentials.setter
    def potentials(self, value: PotentialsLike) -> None:
        self.set_potentials(value)

    def set_potentials(self, value: PotentialsLike) -> None:
        """Replace the log-potentials.

        Accepts a CliquePotentials over the same cliques, a flat float64 buffer of
        ``layout.total_cells`` values, or a mapping ``{attrs: log-table}`` whose factors are
        summed into the smallest clique containing each. Values may be -inf (structural zeros)
        but not NaN or +inf.
        """
        if isinstance(value, CliquePotentials):
            if not value.layout.same_as(self.layout):
                raise ConfigError(
                    f"Potentials are over cliques {value.layout.cliques}; this model has "
                    f"{self.layout.cliques}. Pass a mapping {{attrs: table}} to re-map them."
                )
            values = value.values.copy()
        elif isinstance(value, Mapping):
            values = CliquePotentials.from_factors(self.layout, value).values
        else:
            values = CliquePotentials(self.layout, np.array(value, dtype=np.float64)).values
        _check_values(values)
        self._potentials = CliquePotentials(self.layout, values)
        self._calibrated = None

    def calibrate(self) -> MarkovRandomField:
        """Run two-pass belief propagation on the current potentials; returns self."""
        _check_values(self._potentials.values)
        logz = self.plan.run(
            self._potentials.values, self._beliefs, self._probs, self._pshift, self._up
        )
        if not np.isfinite(logz):
            raise ConfigError(
                "The log-potentials give every configuration zero probability (log Z = -inf); "
                "some clique table is all -inf or the -inf patterns exclude every record."
            )
        self._logz = float(logz)
        self._calibrated = (id(self._potentials), self._potentials.version)
        self._memo.clear()
        return self

    def calibrate_buffer(self, theta: np.ndarray) -> float:
        """BP on an outside potential buffer (same layout), e.g. a trial step of a fit.

        Returns log Z; beliefs and probabilities land in this model's buffers (see
        :meth:`scaled_probs`), which are then marked stale, so the next query recalibrates on
        the model's own potentials.
        """
        self._calibrated = None
        return float(self.plan.run(theta, self._beliefs, self._probs, self._pshift, self._up))

    def scaled_probs(self, logz: float) -> tuple[np.ndarray, np.ndarray]:
        """The last calibration's (probs, per-clique factor): counts = probs * factor[clique]."""
        return self._probs, self.total * np.exp(self._pshift - logz)

    def _ensure(self) -> None:
        if self._calibrated != (id(self._potentials), self._potentials.version):
            self.calibrate()

    @property
    def log_partition(self) -> float:
        """log Z of the unnormalised model (calibrates if needed)."""
        self._ensure()
        return self._logz

    @property
    def beliefs(self) -> np.ndarray:
        """Calibrated unnormalised log-beliefs (flat buffer, same layout as the potentials)."""
        self._ensure()
        return self._beliefs

    def query_memo(self) -> QueryMemo:
        """What queries on the current calibration share (calibrates if needed); cleared
        whenever the beliefs change. Its tables take at most
        :data:`~vertimrf.mrf.memo.QUERY_MEMO_TABLE_SETS` times the potentials' cells."""
        self._ensure()
        return self._memo

    def _clique_index(self, clique: Iterable[int]) -> int:
        key = tuple(sorted(int(a) for a in clique))
        if key not in self.layout.index:
            raise ConfigError(
                f"{key} is not a maximal clique of the model ({self.layout.cliques}); "
                "use marginal() for other attribute sets."
            )
        return self.layout.index[key]

    def clique_log_marginal(self, clique: Iterable[int]) -> np.ndarray:
        """Normalised log-probability table of a maximal clique (axes in sorted order)."""
        self._ensure()
        i = self._clique_index(clique)
        return (self._beliefs[self.layout.slice(i)] - self._logz).reshape(self.layout.shapes[i])

    def clique_marginal(self, clique: Iterable[int]) -> np.ndarray:
        """Counts table (summing to ``total``) of a maximal clique, axes in sorted order."""
        return self.total * np.exp(self.clique_log_marginal(clique))

    def clique_marginals(self) -> np.ndarray:
        """Counts of every clique as one flat buffer in the potentials' layout."""
        self._ensure()
        probs, factor = self.scaled_probs(self._logz)
        return probs * np.repeat(factor, self.layout.sizes)

    def log_marginal(self, attrs: Iterable[int]) -> np.ndarray:
        """Normalised log-probabilities of ``attrs``, axes in the order given.

        Exact for any attribute set: a projection when one clique holds ``attrs``, otherwise
        inference over the calibrated tree.
        """
        attrs = [int(a) for a in attrs]
        d = len(self.domain)
        if len(set(attrs)) != len(attrs) or any(not 0 <= a < d for a in attrs):
            raise DomainError(
                f"marginal() needs distinct attribute indices in 0..{d - 1}; got {attrs}."
            )
        self._ensure()
        return query_log_marginal(self, attrs)

    def marginal(self, attrs: Iterable[int]) -> np.ndarray:
        """Counts (summing to ``total``) of ``attrs``; axes follow the order of ``attrs`` given.

        Pass sorted attributes to get the library's canonical (sorted-axis) layout.
        """
        return self.total * np.exp(self.log_marginal(attrs))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records drawn by junction-tree forward sampling; (n, d) int64 codes: the
        chunks of :meth:`sample_chunks` for the same generator, in order."""
        return forward_sample(self, n, rng)

    def sample_chunks(self, n: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """The rows of :meth:`sample` as code matrices of at most
        :data:`~vertimrf.mrf.sampling.SAMPLE_CHUNK` rows, drawn as the iterator advances."""
        return sample_chunks(self, n, rng)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model (domain, tree, total, log-potentials) to ``path`` in the library's
        checksummed container; returns the path. :meth:`load` reads it back."""
        return save_mrf(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike, *, max_cells: int | None = None) -> MarkovRandomField:
        """The model :meth:`save` wrote. A tampered or truncated file, or one of another
        format version, raises :class:`~vertimrf.errors.MessageError`; so does a model over
        ``max_cells`` cells (default :data:`~vertimrf.mrf.junction_tree.DEFAULT_MAX_CELLS`)."""
        return load_mrf(path, max_cells=max_cells)

    def copy(self) -> MarkovRandomField:
        """Independent copy (same tree, copied potentials)."""
        return MarkovRandomField(
            self.domain,
            self.tree,
            self._potentials.copy(),
            self.total,
            max_cells=self.tree.size.total_cells,
        )

    def __repr__(self) -> str:
        return f"MarkovRandomField(d={len(self.domain)}, {self.tree.size}, total={self.total:g})"


# ---------------------------------------------------------------------------- the file
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
