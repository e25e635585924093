"""The table a report runs on, and each method's run on it (remembered, so that two figures
asking for the same run share it)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vertimrf.privacy import DEFAULT_DELTA

if TYPE_CHECKING:
    import pandas as pd

    from vertimrf.domain import DomainSpec

# The methods of the comparison, with their labels; FM is the paper's and is NOT DP.
METHODS = {
    "secure": "Secure",
    "central": "Centralized PrivMRF",
    "fo": "FO",
    "fm": "FM (NOT DP)",
}
DASHED = frozenset({"fm"})


@dataclass(frozen=True)
class Run:
    """One method's synthetic table and what the run cost."""

    synth: pd.DataFrame
    seconds: float
    phases: dict[str, float]
    message_bytes: dict[str, int]


@dataclass
class ReportContext:
    """The real table, its spec and name, the seeds, whether to draw progress bars, and the
    folder of baseline runs kept across reports (:mod:`vertimrf.report.run_store`), if any."""

    name: str
    df: pd.DataFrame
    spec: DomainSpec
    seeds: int
    progress: bool | None = None
    delta: float = DEFAULT_DELTA
    baseline_store: str | None = None
    _runs: dict[tuple, Run] = field(default_factory=dict, repr=False)

    @property
    def label(self) -> str:
        """The column the SVM predicts: the spec's last."""
        return self.spec.names[-1]

    def parties(self, m: int = 2) -> list[list[str]]:
        """The columns split into ``m`` contiguous groups of near-equal size."""
        groups = np.array_split(np.array(self.spec.names, dtype=object), m)
        return [[str(c) for c in g] for g in groups]

    def run(
        self,
        method: str,
        epsilon: float,
        seed: int,
        *,
        parties: int | list[list[str]] = 2,
        df: pd.DataFrame | None = None,
        **overrides: Any,
    ) -> Run:
        """``method`` (a key of :data:`METHODS`) at ``epsilon`` on ``df`` (default: the
        whole table), seeded, its columns split over ``parties`` (a number of contiguous
        groups, or the groups); runs of the whole table are remembered."""
        groups = self.parties(parties) if isinstance(parties, int) else parties
        key = (method, epsilon, seed, repr(groups), repr(sorted(overrides.items())))
        if df is None and key in self._runs:
            return self._runs[key]
        run = self._run(method, epsilon, seed, groups, self.df if df is None else df, overrides)
        if df is None:
            self._runs[key] = run
        return run

    def _run(
        self,
        method: str,
        epsilon: float,
        seed: int,
        groups: list[list[str]],
        df: pd.DataFrame,
        overrides: dict[str, Any],
    ) -> Run:
        from vertimrf import PrivMRF, simulate

        start = time.perf_counter()
        if method == "central":
            model = PrivMRF(epsilon, self.delta, seed=seed, selection="privmrf", progress=False)
            return Run(model.fit(df, self.spec).sample(), time.perf_counter() - start, {}, {})
        synth, report = simulate(
            df,
            self.spec,
            groups,
            epsilon,
            self.delta,
            method=method,
            seed=seed,
            allow_non_dp=method == "fm",
            **overrides,
        )
        seconds = time.perf_counter() - start
        return Run(synth, seconds, dict(report.seconds), dict(report.message_bytes))
