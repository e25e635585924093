"""Flat buffer layout of clique tables and the index maps that project cliques
onto subsets; design notes in docs/design/mrf.md."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.kernels import sumout
from vertimrf.kernels.bp import GRAIN

Clique = tuple[int, ...]

RUN_IN_REST = 0
RUN_IN_BASE = 1


def _axis_offsets(shape: Sequence[int], strides: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """Offsets of all cells over ``axes`` (C order), each axis stepping by its clique stride."""
    out = np.zeros(1, dtype=np.int64)
    for a in axes:
        step = np.arange(shape[a], dtype=np.int64) * strides[a]
        out = (out[:, None] + step[None, :]).ravel()
    return out


def c_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a C-ordered table of ``shape``."""
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    return tuple(strides)


def _cap_run(run: int, cap: int) -> int:
    """Largest divisor of ``run`` not above ``cap``: long runs are cut so tasks can split them."""
    for d in range(min(run, cap), 0, -1):
        if run % d == 0:
            return d
    return 1


@dataclass(frozen=True)
class ProjectionMap:
    """Offsets that project one clique table onto a subset of its attributes."""

    base: np.ndarray
    rest: np.ndarray
    run: int
    side: int

    @classmethod
    def build(cls, clique: Clique, subset: Iterable[int], domain: Domain) -> ProjectionMap:
        """Index map of ``clique`` onto ``subset`` (which must be a subset of the clique)."""
        sub = set(subset)
        if not sub <= set(clique):
            raise ConfigError(f"{tuple(sorted(sub))} is not a subset of clique {clique}.")
        shape = domain.shape(clique)
        strides = c_strides(shape)
        in_s = [a in sub for a in clique]
        s_axes = [i for i, f in enumerate(in_s) if f]
        r_axes = [i for i, f in enumerate(in_s) if not f]
        run = 1
        side = RUN_IN_BASE if in_s[-1] else RUN_IN_REST
        for i in range(len(clique) - 1, -1, -1):
            if in_s[i] != in_s[-1]:
                break
            run *= shape[i]
        return cls(
            _axis_offsets(shape, strides, s_axes),
            _axis_offsets(shape, strides, r_axes),
            _cap_run(run, GRAIN),
            side,
        )


class CliqueLayout:
    """Offsets, shapes and strides of a list of clique tables inside one flat buffer."""

    def __init__(self, domain: Domain, cliques: Sequence[Clique]) -> None:
        self.domain = domain
        self.cliques: list[Clique] = [tuple(int(a) for a in c) for c in cliques]
        self.index: dict[Clique, int] = {c: i for i, c in enumerate(self.cliques)}
        self.shapes: list[tuple[int, ...]] = [domain.shape(c) for c in self.cliques]
        self.sizes = np.array([domain.size(c) for c in self.cliques], dtype=np.int64)
        self.offsets = _ptr(self.sizes)
        self.strides: list[tuple[int, ...]] = [c_strides(s) for s in self.shapes]

    @property
    def total_cells(self) -> int:
        """Number of cells over all clique tables."""
        return int(self.offsets[-1])

    def __len__(self) -> int:
        return len(self.cliques)

    def slice(self, i: int) -> slice:
        """Slice of clique ``i`` inside the flat buffer."""
        return slice(int(self.offsets[i]), int(self.offsets[i + 1]))

    def smallest_containing(self, attrs: Iterable[int]) -> int | None:
        """Index of the smallest clique containing all of ``attrs``, or None."""
        need = set(attrs)
        best = None
        for i, c in enumerate(self.cliques):
            if need <= set(c) and (best is None or self.sizes[i] < self.sizes[best]):
                best = i
        return best

    def same_as(self, other: CliqueLayout) -> bool:
        """True when both layouts describe the same cliques over the same domain sizes."""
        return self.cliques == other.cliques and self.domain.sizes == other.domain.sizes


class _Projections:
    """Projections ``pairs[p]`` = (clique, sorted subset), projection ``p`` writing its cells
    to ``out_ptr[p]:out_ptr[p + 1]`` of one flat output buffer (C order)."""

    out_ptr: np.ndarray

    def __init__(self, pairs: Sequence[tuple[int, Clique]]) -> None:
        self.pairs = [(int(c), tuple(sorted(int(a) for a in s))) for c, s in pairs]

    def __len__(self) -> int:
        return len(self.pairs)

    @property
    def out_size(self) -> int:
        """Length of the flat output buffer (sum of subset cells)."""
        return int(self.out_ptr[-1])


class ProjectionSet(_Projections):
    """Many projections packed into flat arrays, the form the kernels take.

    Projection ``p`` maps clique ``pairs[p][0]`` onto the sorted subset ``pairs[p][1]``; its
    output occupies ``out_ptr[p]:out_ptr[p + 1]`` of a flat output buffer (C order).
    """

    def __init__(self, layout: CliqueLayout, pairs: Sequence[tuple[int, Clique]]) -> None:
        self.layout = layout
        super().__init__(pairs)
        maps = [ProjectionMap.build(layout.cliques[c], s, layout.domain) for c, s in self.pairs]
        self.clique = np.array([c for c, _ in self.pairs], dtype=np.int64)
        self.clique_off = layout.offsets[self.clique]
        self.base_ptr = _ptr([m.base.size for m in maps])
        self.rest_ptr = _ptr([m.rest.size for m in maps])
        self.base = _cat([m.base for m in maps])
        self.rest = _cat([m.rest for m in maps])
        self.run = np.array([m.run for m in maps], dtype=np.int64)
        self.side = np.array([m.side for m in maps], dtype=np.int64)
        self.out_ptr = self.base_ptr.copy()

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The flat arrays in kernel argument order."""
        return (
            self.clique_off,
            self.base_ptr,
            self.base,
            self.rest_ptr,
            self.rest,
            self.run,
            self.side,
            self.out_ptr,
        )


def histogram(codes: np.ndarray, attrs: Sequence[int], sizes: Sequence[int]) -> np.ndarray:
    """Counts of the rows of ``codes[:, attrs]`` as a dense float64 table of shape
    ``sizes[attrs]`` (axes in the order of ``attrs``)."""
    shape = tuple(int(sizes[a]) for a in attrs)
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in attrs), shape)
    cells = int(np.prod(shape, dtype=np.int64))
    return np.bincount(flat, minlength=cells).astype(np.float64).reshape(shape)


def sumout_steps(shape: Sequence[int], keep: Sequence[bool]) -> list[tuple[int, int, int]]:
    """Steps ``(A, s, B)`` that sum a C-ordered table of ``shape`` onto the axes flagged in
    ``keep``: one per block of consecutive summed axes, largest block first (ties: leftmost),
    each summing the middle axis of the current table viewed as ``(A, s, B)``."""
    blocks: list[list[int]] = []  # [size, kept]
    for size, kept in zip(shape, keep, strict=True):
        if blocks and blocks[-1][1] == bool(kept):
            blocks[-1][0] *= int(size)
        else:
            blocks.append([int(size), bool(kept)])
    steps: list[tuple[int, int, int]] = []
    while True:
        summed = [j for j, (_, kept) in enumerate(blocks) if not kept]
        if not summed:
            return steps
        i = max(summed, key=lambda j: (blocks[j][0], -j))
        a = math.prod(b[0] for b in blocks[:i])
        b = math.prod(b[0] for b in blocks[i + 1 :])
        steps.append((a, blocks[i][0], b))
        del blocks[i]
        if 0 < i < len(blocks) and blocks[i - 1][1] and blocks[i][1]:
            blocks[i - 1][0] *= blocks[i][0]
            del blocks[i]


def _sumout_plan(
    shapes: Sequence[Sequence[int]], keeps: Sequence[Sequence[bool]]
) -> tuple[np.ndarray, np.ndarray, int]:
    """The :func:`sumout_steps` of every (shape, keep) pair as the kernels take them: the
    steps as one (n, 3) array, each pair's range of it, and the scratch size they need."""
    all_steps: list[tuple[int, int, int]] = []
    counts = []
    scratch = 1
    for shape, keep in zip(shapes, keeps, strict=True):
        steps = sumout_steps(shape, keep)
        all_steps += steps
        counts.append(len(steps))
        if steps:
            scratch = max(scratch, steps[0][0] * steps[0][2])
    return np.array(all_steps, dtype=np.int64).reshape(-1, 3), _ptr(counts), scratch


def sum_onto_many(table: np.ndarray, keeps: Sequence[Sequence[bool]]) -> list[np.ndarray]:
    """``table`` summed over the axes not flagged in each ``keeps[k]`` (one kernel call for
    all, see :func:`sumout_steps`); each result keeps its axes in their order."""
    x = np.ascontiguousarray(table, dtype=np.float64).ravel()
    steps, step_ptr, scratch = _sumout_plan([table.shape] * len(keeps), keeps)
    shapes = [tuple(n for n, k in zip(table.shape, keep, strict=True) if k) for keep in keeps]
    optr = _ptr([math.prod(s) for s in shapes])
    out = np.empty(int(optr[-1]))
    clique_off = np.zeros(len(shapes), dtype=np.int64)
    tmp0, tmp1 = np.empty(scratch), np.empty(scratch)
    sumout.project_sum(x, clique_off, step_ptr, steps, out, optr, tmp0, tmp1)
    return [out[optr[k] : optr[k + 1]].reshape(s) for k, s in enumerate(shapes)]


class SumOutPlan(_Projections):
    """Projections of cliques onto subsets as chains of block sums (kernels in
    :mod:`vertimrf.kernels.sumout`): the same ``pairs`` and output layout as
    :class:`ProjectionSet`, for plain sums only (no log-sum-exp)."""

    def __init__(self, layout: CliqueLayout, pairs: Sequence[tuple[int, Clique]]) -> None:
        self.layout = layout
        super().__init__(pairs)
        for c, sub in self.pairs:
            if not set(sub) <= set(layout.cliques[c]):
                raise ConfigError(f"{sub} is not a subset of clique {layout.cliques[c]}.")
        self.steps, self.step_ptr, scratch = _sumout_plan(
            [layout.shapes[c] for c, _ in self.pairs],
            [[a in sub for a in layout.cliques[c]] for c, sub in self.pairs],
        )
        self.clique = np.array([c for c, _ in self.pairs], dtype=np.int64)
        self.clique_off = layout.offsets[self.clique]
        self.out_ptr = _ptr([layout.domain.size(sub) for _, sub in self.pairs])
        self._plan = (self.clique_off, self.step_ptr, self.steps)  # as the kernels take it
        self._tmp = (np.empty(scratch), np.empty(scratch))

    def project(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """out[slot p] = sum of clique ``pairs[p][0]`` of ``x`` onto ``pairs[p][1]``; out."""
        sumout.project_sum(x, *self._plan, out, self.out_ptr, *self._tmp)
        return out

    def expand_add(
        self, x: np.ndarray, vec: np.ndarray, scale: float = 1.0, *, overwrite: bool = False
    ) -> np.ndarray:
        """x[clique of p] += scale * vec[slot p], broadcast over the summed axes; x. With
        ``overwrite``, the plan's cliques of x are first taken as zeros (their old values are
        not read)."""
        sumout.expand_sum(x, *self._plan, vec, self.out_ptr, float(scale), *self._tmp, overwrite)
        return x


class SharedSumOutPlan(_Projections):
    """:class:`SumOutPlan` through shared intermediate tables: projections of one clique are
    grouped (greedily, largest first) so that each group's union of attributes has at most
    ``clique cells / share`` cells; a clique is summed once onto each union, and the members
    are summed from that much smaller table. The transpose adds the members into their union
    first and broadcasts each union into the clique once. Same outputs as SumOutPlan."""

    def __init__(
        self, layout: CliqueLayout, pairs: Sequence[tuple[int, Clique]], share: int = 16
    ) -> None:
        super().__init__(pairs)
        domain = layout.domain
        unions: list[tuple[int, set[int]]] = []  # (clique, attributes)
        member_of = [0] * len(self.pairs)
        order = sorted(range(len(self.pairs)), key=lambda p: -domain.size(self.pairs[p][1]))
        for p in order:
            c, sub = self.pairs[p]
            limit = int(layout.sizes[c]) // share
            best, best_cells = -1, 0
            for g, (gc, attrs) in enumerate(unions):
                if gc != c:
                    continue
                cells = domain.size(sorted(attrs | set(sub)))
                if cells <= limit and (best < 0 or cells < best_cells):
                    best, best_cells = g, cells
            if best < 0:
                unions.append((c, set(sub)))
                best = len(unions) - 1
            else:
                unions[best][1].update(sub)
            member_of[p] = best
        groups = [tuple(sorted(attrs)) for _, attrs in unions]
        self.inner = CliqueLayout(domain, groups)
        self.first = SumOutPlan(layout, [(c, u) for (c, _), u in zip(unions, groups, strict=True)])
        self.second = SumOutPlan(
            self.inner, [(member_of[p], s) for p, (_, s) in enumerate(self.pairs)]
        )
        self.out_ptr = self.second.out_ptr
        self._mid = np.empty(self.inner.total_cells)

    def project(self, x: np.ndarray, out: np.ndarray) -> np.ndarray:
        """As :meth:`SumOutPlan.project`."""
        self.first.project(x, self._mid)
        return self.second.project(self._mid, out)

    def expand_add(
        self, x: np.ndarray, vec: np.ndarray, scale: float = 1.0, *, overwrite: bool = False
    ) -> np.ndarray:
        """As :meth:`SumOutPlan.expand_add`."""
        self.second.expand_add(self._mid, vec, scale, overwrite=True)
        return self.first.expand_add(x, self._mid, overwrite=overwrite)


def _ptr(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """Offsets of consecutive runs of ``lengths``: 0, then their running sums (int64)."""
    out = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(np.asarray(lengths, dtype=np.int64), out=out[1:])
    return out


def _cat(parts: Sequence[np.ndarray]) -> np.ndarray:
    if not parts:
        return np.zeros(0, dtype=np.int64)
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.int64)


class CliquePotentials:
    """Log-potentials of all cliques in one flat float64 buffer plus its layout.

    ``values`` is the buffer; ``table(c)`` returns a writable ndarray *view* of clique ``c``
    (axes in the clique's sorted attribute order), and ``pot[c] = array`` writes one.
    ``version`` counts writes made through ``pot[c] = array``; a model recalibrates lazily when
    it changes. Edits made through views or ``values`` need an explicit ``calibrate()``.
    """

    def __init__(self, layout: CliqueLayout, values: np.ndarray | None = None) -> None:
        self.layout = layout
        if values is None:
            values = np.zeros(layout.total_cells, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        if values.shape != (layout.total_cells,):
            raise ConfigError(
                f"Potential buffer has shape {values.shape}; the layout needs "
                f"({layout.total_cells},) float64 values."
            )
        self.values = np.ascontiguousarray(values)
        self.version = 0

    @classmethod
    def from_factors(
        cls, layout: CliqueLayout, factors: Mapping[tuple[int, ...], np.ndarray]
    ) -> CliquePotentials:
        """Sum log-factors over attribute subsets into the smallest clique containing each.

        Keys are attribute tuples (any order; the array's axes follow the key's order).
        """
        pot = cls(layout)
        for key, table in factors.items():
            attrs = tuple(int(a) for a in key)
            i = layout.smallest_containing(attrs)
            if i is None:
                raise ConfigError(
                    f"Factor over {attrs} is not contained in any clique {layout.cliques}; "
                    "build the model with a clique that covers it."
                )
            arr = np.asarray(table, dtype=np.float64)
            shape = layout.domain.shape(attrs)
            if arr.size != int(np.prod(shape, dtype=np.int64)):
                raise ConfigError(f"Factor over {attrs} has {arr.size} cells; expected {shape}.")
            pot.table(i)[...] += expand_to(arr.reshape(shape), attrs, layout.cliques[i])
        return pot

    def _index(self, clique: Clique | int) -> int:
        if isinstance(clique, (int, np.integer)):
            return int(clique)
        key = tuple(sorted(int(a) for a in clique))
        if key not in self.layout.index:
            raise ConfigError(
                f"{key} is not a clique of the model; cliques are {self.layout.cliques}."
            )
        return self.layout.index[key]

    def table(self, clique: Clique | int) -> np.ndarray:
        """Writable view of one clique's log-potential table."""
        i = self._index(clique)
        return self.values[self.layout.slice(i)].reshape(self.layout.shapes[i])

    def __getitem__(self, clique: Clique | int) -> np.ndarray:
        return self.table(clique)

    def __setitem__(self, clique: Clique | int, table: np.ndarray) -> None:
        view = self.table(clique)
        arr = np.asarray(table, dtype=np.float64)
        if arr.size != view.size:
            raise ConfigError(
                f"Table for clique {clique} has {arr.size} cells; expected shape {view.shape}."
            )
        view[...] = arr.reshape(view.shape)
        self.version += 1

    def __iter__(self) -> Iterator[Clique]:
        return iter(self.layout.cliques)

    def copy(self) -> CliquePotentials:
        """Deep copy (new buffer, shared layout)."""
        return CliquePotentials(self.layout, self.values.copy())


def expand_to(table: np.ndarray, attrs: Sequence[int], target: Sequence[int]) -> np.ndarray:
    """``table`` (axes in ``attrs`` order) reshaped to broadcast over the axes of ``target``."""
    attrs = list(attrs)
    order = sorted(range(len(attrs)), key=lambda i: attrs[i])
    t = np.transpose(table, order)
    present = sorted(attrs)
    shape = [t.shape[present.index(a)] if a in present else 1 for a in target]
    return t.reshape(shape)
