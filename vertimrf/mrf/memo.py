"""What exact queries on one calibration of a model can share: the conditionals of its cliques,
and einsum's contraction orders, which depend on shapes alone."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

#: A model's memo holds at most this many of its table sets (cells of all its cliques): one for
#: the cliques' probabilities, one for conditionals. One set thrashed: on Adult's domain, 372
#: three-way queries of a 1.75M-cell model took 4.7 s with one set, 2.9 s with two (measured
#: on the memo's first version, which summed some cliques in log space).
QUERY_MEMO_TABLE_SETS = 2

#: The most contraction orders kept (they are small: a list of index pairs each).
MAX_PATHS = 4096


class QueryMemo:
    """Tables computed from the current calibration, kept while their cells fit in
    ``max_cells`` (least recently used dropped first), and forgotten by :meth:`clear` when the
    model is recalibrated. Contraction orders outlive calibrations."""

    def __init__(self, max_cells: int) -> None:
        self.max_cells = int(max_cells)
        self._tables: OrderedDict[Hashable, tuple[tuple[int, ...], np.ndarray]] = OrderedDict()
        self._cells = 0
        self._paths: dict[Hashable, list] = {}

    def clear(self) -> None:
        """Forget every table (the calibration they came from is gone)."""
        self._tables.clear()
        self._cells = 0

    def table(
        self, key: Hashable, make: Callable[[], tuple[tuple[int, ...], np.ndarray]]
    ) -> tuple[tuple[int, ...], np.ndarray]:
        """The table stored under ``key``, or ``make()``'s, stored if it fits."""
        hit = self._tables.get(key)
        if hit is not None:
            self._tables.move_to_end(key)
            return hit
        made = make()
        size = int(made[1].size)
        if size <= self.max_cells:
            while self._cells + size > self.max_cells:
                self._cells -= int(self._tables.popitem(last=False)[1][1].size)
            self._tables[key] = made
            self._cells += size
        return made

    def path(self, key: Hashable, make: Callable[[], list]) -> list:
        """The contraction order stored under ``key`` (operands' labels and shapes), or
        ``make()``'s."""
        hit = self._paths.get(key)
        if hit is None:
            if len(self._paths) >= MAX_PATHS:
                self._paths.clear()
            hit = self._paths[key] = make()
        return hit
