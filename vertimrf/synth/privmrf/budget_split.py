"""PrivMRF's budget: the total zCDP spend and its split over the four kinds
of release; design notes in docs/design/synth.md."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from vertimrf.errors import ConfigError
from vertimrf.privacy.gdp import privmrf_budget
from vertimrf.privacy.zcdp import epsilon_to_rho

# L2 sensitivities under add/remove of one record (see scores.py for the R-score derivation).
COUNT_SENSITIVITY = 1.0
MARGINAL_SENSITIVITY = 1.0
R_SCORE_SENSITIVITY = 2.0
ERROR_QUERY_SENSITIVITY = 1.0


@dataclass(frozen=True)
class BudgetSplit:
    """Fractions of the total rho for each kind of release; they must sum to 1."""

    scores: float = 0.099
    count: float = 0.001
    measurements: float = 0.8
    error_queries: float = 0.1

    def __post_init__(self) -> None:
        parts = asdict(self)
        bad = {k: v for k, v in parts.items() if not (0.0 <= v <= 1.0 and math.isfinite(v))}
        if bad:
            raise ConfigError(f"budget fractions must be in [0, 1]; got {bad}.")
        if self.scores <= 0 or self.measurements <= 0:
            raise ConfigError("the scores and measurements fractions must be positive.")
        total = math.fsum(parts.values())
        if abs(total - 1.0) > 1e-12:
            raise ConfigError(f"budget fractions must sum to 1; they sum to {total!r}.")


def total_rho(epsilon: float, delta: float, *, gdp_accounting: bool = False) -> float:
    """The zCDP budget a PrivMRF fit spends for (epsilon, delta)."""
    if gdp_accounting:
        return 0.5 * privmrf_budget(epsilon, delta)
    return epsilon_to_rho(epsilon, delta)


def sigma_for_share(rho: float, count: int, sensitivity: float) -> float:
    """Noise std so that ``count`` Gaussian releases of the given sensitivity cost ``rho``."""
    if not (rho > 0 and count >= 1):
        raise ConfigError(f"a Gaussian share needs rho > 0 and count >= 1; got {rho}, {count}.")
    return sensitivity * math.sqrt(count / (2.0 * rho))
