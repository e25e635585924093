"""Sub-marginals of clique tables (exact data counts or model counts) for PrivMRF's refinement.

The counting (:func:`vertimrf.mrf.cliques.histogram`) and the summing out
(:func:`vertimrf.mrf.cliques.sum_onto_many`) are the MRF engine's.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.mrf.cliques import sum_onto_many


class CliqueTables:
    """Dense tables over cliques (axes in sorted attribute order) that answer every
    sub-marginal by summing out axes of the smallest clique holding it.

    Refinement asks hundreds of sub-marginals of the same few cliques per round, so one table
    per clique (data counts once per fit, model counts once per round) replaces a pass over
    the rows or an inference call per query.
    """

    def __init__(self, tables: dict[tuple[int, ...], np.ndarray]) -> None:
        self._tables = dict(tables)
        self._by_size = sorted(self._tables, key=lambda c: self._tables[c].size)

    def _home(self, attrs: Sequence[int]) -> tuple[int, ...]:
        want = set(attrs)
        for clique in self._by_size:
            if want <= set(clique):
                return clique
        raise ConfigError(f"{tuple(attrs)} is inside none of the cliques {self._by_size}.")

    def project(self, attrs: Sequence[int]) -> np.ndarray:
        """The table over sorted ``attrs`` (a subset of some clique)."""
        return self.project_many([attrs])[0]

    def project_many(self, queries: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """:meth:`project` of every query, one kernel call per clique."""
        by_home: dict[tuple[int, ...], list[int]] = {}
        for k, attrs in enumerate(queries):
            by_home.setdefault(self._home(attrs), []).append(k)
        out: list[np.ndarray] = [np.empty(0)] * len(queries)
        for clique, ks in by_home.items():
            keeps = [[a in set(queries[k]) for a in clique] for k in ks]
            for k, table in zip(ks, sum_onto_many(self._tables[clique], keeps), strict=True):
                out[k] = table
        return out
