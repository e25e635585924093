"""What the engine asks of whoever measures: which marginals can be measured, and how."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from vertimrf.synth.engine.tables import Marginal


class Oracle(Protocol):
    """The constraints of a measurement oracle, all public: the engine's selection reads
    nothing else of it."""

    too_large: str  # the error message when no model over the cliques fits model_fits

    def all_pairs(self) -> list[Marginal]:
        """Every 2-way marginal, canonical, in release order (the first release without a
        workload)."""
        ...

    def canonical(self, m: Marginal) -> Marginal:
        """The one order of ``m``'s attributes in which it is measured."""
        ...

    def cells(self, m: Marginal) -> int:
        """The cells of ``m`` at its full domain."""
        ...

    def search_sizes(self) -> tuple[int, ...]:
        """Each attribute's cells as the graph search counts them."""
        ...

    def populations(self) -> Mapping[Marginal, float] | None:
        """Each pair's population where the pairs count different records, else None."""
        ...

    def measurable(self, wanted: Sequence[Marginal], edges: set[Marginal]) -> list[Marginal]:
        """Marginals this oracle can measure that cover ``wanted``: each one itself if it
        can, else parts of it covering its pairs that are graph ``edges``."""
        ...

    def model_fits(self, cliques: Sequence[Sequence[int]]) -> bool:
        """Whether the model over ``cliques`` fits the oracle's cap on cells."""
        ...
