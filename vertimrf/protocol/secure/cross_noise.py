"""The noise of a cross-party count, a strategy per config ``cross_noise``: "split" (three
discrete Gaussians, one per viewer) or "coins" (a share of it in coins that no viewer knows);
design notes in docs/accounting.md."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from vertimrf.errors import ConfigError, PrivacyBudgetError
from vertimrf.privacy.coins import CoinNoise, cell_cost, coin_release
from vertimrf.privacy.ddg import ddg_rho
from vertimrf.privacy.ledger import Release

CROSS_MECHANISM = "distributed_discrete_gaussian"
COIN_MECHANISM = "coins_and_discrete_gaussian"
# The share of delta kept for the coins' failure events, and the most cross marginals a run
# may release with coins (each charged COIN_DELTA_SHARE * delta / COIN_MARGINALS at most).
COIN_DELTA_SHARE = 0.01
COIN_MARGINALS = 20_000
# The smallest split noise scale: its components' s = sigma / sqrt(2) is 1/2 (the
# distributed discrete Gaussian bound, ddg_rho, needs s >= 1/2).
_MIN_SPLIT_SIGMA = math.sqrt(0.5)  # sqrt(0.5) / sqrt(2) is 0.5 exactly in binary64


class CrossNoise(Protocol):
    """How a cross cell's noise is made at scale sigma (each viewer faces sigma^2 or more)
    and what it costs."""

    @property
    def name(self) -> str:
        """The config's ``cross_noise``."""
        ...

    @property
    def mechanism(self) -> str:
        """The ledger entries' mechanism."""
        ...

    @property
    def weight(self) -> float:
        """The fraction of sigma^2 in coins."""
        ...

    @property
    def min_sigma(self) -> float:
        """The least sigma this noise is accounted at."""
        ...

    def component(self, sigma: float) -> float:
        """The scale of each of the three split components (0: none)."""
        ...

    def coins(self, sigma: float) -> int:
        """Coins per released cell (0: none)."""
        ...

    def release_scale(self, sigma: float) -> float:
        """The standard deviation the released count carries."""
        ...

    def rho(self, sigma: float, count: int, cells: int) -> float:
        """The ledger's rho of ``count`` cross marginals of ``cells`` cells in all."""
        ...

    def entry(self, what: str, pair: str, sigma: float, count: int, cells: int) -> Release:
        """The ledger entry of ``count`` cross marginals of the pair ``pair``."""
        ...

    def viewer_rho(self, entry: Release, known: int) -> float:
        """The rho ``entry`` costs against a viewer that knows ``known`` split components."""
        ...


@dataclass(frozen=True)
class SplitNoise:
    """Three discrete Gaussians of sigma^2 / 2, one each from the pair's parties and the
    server: each viewer faces sigma^2, the release carries 1.5 sigma^2."""

    name: str = "split"
    mechanism: str = CROSS_MECHANISM
    weight: float = 0.0

    @property
    def min_sigma(self) -> float:
        return _MIN_SPLIT_SIGMA

    def component(self, sigma: float) -> float:
        return sigma / math.sqrt(2.0)

    def coins(self, sigma: float) -> int:
        return 0

    def release_scale(self, sigma: float) -> float:
        return sigma * math.sqrt(1.5)

    def rho(self, sigma: float, count: int, cells: int) -> float:
        return ddg_rho(sigma / math.sqrt(2.0), 2, count, count, cells)

    def entry(self, what: str, pair: str, sigma: float, count: int, cells: int) -> Release:
        params = {"sigma": sigma, "component_sigma": self.component(sigma), "components": 3}
        rho = self.rho(sigma, count, cells)
        return Release(CROSS_MECHANISM, what, rho, count, pair, {**params, "cells": cells})

    def viewer_rho(self, entry: Release, known: int) -> float:
        p = entry.params
        return ddg_rho(p["component_sigma"], 3 - known, entry.count, entry.count, p["cells"])


@dataclass(frozen=True)
class CoinsNoise:
    """A fraction ``weight`` of sigma^2 in coins XOR-shared by the pair (no viewer knows
    them), the rest split as in :class:`SplitNoise`: each viewer faces sigma^2, the release
    carries (1.5 - weight / 2) sigma^2. ``failure``: the probability charged to delta per
    marginal (approximate zCDP, :func:`vertimrf.privacy.coins.cell_cost`)."""

    weight: float
    failure: float
    name: str = "coins"
    mechanism: str = COIN_MECHANISM

    def __post_init__(self) -> None:
        if not (0.0 < self.weight <= 1.0) or not (0.0 < self.failure < 1.0):
            raise ConfigError(
                f"coin_weight must be in (0, 1]; got {self.weight!r} (failure {self.failure!r})."
            )

    @property
    def min_sigma(self) -> float:
        """1 / sqrt(w): the coins' rounding (at most 2 coins, variance 1/2) then stays
        within w sigma^2 / 2, so a count's noise is within 1.5 sigma^2-subgaussian (the
        ring's bound, :data:`vertimrf.protocol.secure.plan.RING_TAIL`)."""
        return 1.0 / math.sqrt(self.weight)

    def noise(self, sigma: float) -> CoinNoise:
        """The coins and split variance at ``sigma``."""
        return CoinNoise.for_sigma(sigma, self.weight)

    def component(self, sigma: float) -> float:
        return math.sqrt(self.noise(sigma).split)

    def coins(self, sigma: float) -> int:
        return self.noise(sigma).coins

    def release_scale(self, sigma: float) -> float:
        return math.sqrt(self.noise(sigma).release_variance)

    def rho(self, sigma: float, count: int, cells: int) -> float:
        return count * cell_cost(self.noise(sigma), self.failure).rho

    def entry(self, what: str, pair: str, sigma: float, count: int, cells: int) -> Release:
        if count > COIN_MARGINALS // 2:
            raise PrivacyBudgetError(
                f"a release with coins holds at most {COIN_MARGINALS // 2} cross marginals; "
                f"this one has {count}: request fewer, or use cross_noise 'split'."
            )
        return coin_release(
            COIN_MECHANISM, self.noise(sigma), self.failure, count=count, party=pair,
            description=what, sigma=sigma, weight=self.weight, cells=cells,
        )  # fmt: skip

    def viewer_rho(self, entry: Release, known: int) -> float:
        return entry.rho  # every viewer faces the coins and at least two split components


def cross_noise(name: str, weight: float, delta: float) -> CrossNoise:
    """The strategy of the config's ``cross_noise`` and ``coin_weight`` at ``delta``."""
    if name == "split":
        return SplitNoise()
    if name == "coins":
        return CoinsNoise(weight, delta * COIN_DELTA_SHARE / COIN_MARGINALS)
    raise ConfigError(f"cross_noise must be 'split' or 'coins'; got {name!r}.")


def release_delta(name: str, delta: float) -> float:
    """The delta the releases' rho is converted at: ``delta`` less the coins' share."""
    return delta * (1.0 - COIN_DELTA_SHARE) if name == "coins" else delta
