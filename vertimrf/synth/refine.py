"""The measure-select-refit loop shared by PrivMRF and the server's
OptMRF; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from vertimrf.errors import ConfigError
from vertimrf.mrf.estimation import Measurement
from vertimrf.mrf.model import MarkovRandomField

Marginal = tuple[int, ...]
# refit(measurements, last round?, iterations of every fit so far) -> iterations of this fit
Refit = Callable[[list[Measurement], bool, list[int]], int]


class MeasurementSource(Protocol):
    """Where a refinement round's marginals and their measurements come from."""

    def select(self, model: MarkovRandomField, k: int, round_index: int) -> list[Marginal]:
        """The marginals to measure next (at most ``k``), given the fitted model."""

    def measure(self, marginals: list[Marginal], round_index: int) -> list[Measurement]:
        """Measurements of ``marginals``."""


def round_sizes(total: int, rounds: int) -> list[int]:
    """Split ``total`` new marginals over ``rounds`` rounds (remainder to the first rounds);
    rounds that would get none are dropped."""
    if total < 0 or rounds < 1:
        raise ConfigError(f"need total >= 0 and rounds >= 1; got {total}, {rounds}.")
    base, extra = divmod(total, rounds)
    return [c for c in (base + (r < extra) for r in range(rounds)) if c > 0]


def refine(
    model: MarkovRandomField,
    measurements: Sequence[Measurement],
    rounds: Sequence[int],
    source: MeasurementSource,
    refit: Refit,
    iterations: Sequence[int] = (),
    on_round: Callable[[int, list[Marginal], int], None] | None = None,
) -> tuple[list[Measurement], list[Marginal], list[int]]:
    """Run the rounds (``rounds[r]`` new marginals in round r) and return every measurement,
    the marginals the rounds chose, and the iterations of every fit (``iterations`` first).

    ``on_round(r, chosen, iterations)`` is called after each round's fit, e.g. for progress.
    """
    measurements = list(measurements)
    history = list(iterations)
    chosen: list[Marginal] = []
    for r, k in enumerate(rounds):
        picked = source.select(model, k, r)
        chosen += picked
        measurements += source.measure(picked, r)
        history.append(refit(measurements, r == len(rounds) - 1, history))
        if on_round is not None:
            on_round(r, picked, history[-1])
    return measurements, chosen, history
