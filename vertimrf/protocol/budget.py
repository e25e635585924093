"""The protocol budget: turn a ProtocolConfig's shares into every mechanism's
parameters; design notes in docs/design/protocol.md."""

from __future__ import annotations

import math
from dataclasses import dataclass

from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.config import ProtocolConfig

__all__ = ["ProtocolBudget"]


@dataclass(frozen=True)
class ProtocolBudget:
    """Per-mechanism parameters every role derives from the config alone (public)."""

    rho_total: float
    rho_locmrf_party: float
    rho_locenc: float
    rho_count: float
    rho_binning: float
    eps_prime: float
    grr_epsilon: float
    count_epsilon: float
    binning_epsilon: float

    @classmethod
    def from_config(
        cls, config: ProtocolConfig, t: int | None = None, *, epsilon: float | None = None
    ) -> ProtocolBudget:
        """Split the config's budget; ``t`` (FM's) and ``epsilon`` override the config's (to
        compare candidates). The paper-pipeline methods read their options' ``shares``."""
        epsilon = config.epsilon if epsilon is None else epsilon
        rho = epsilon_to_rho(epsilon, config.delta)
        paper = config.paper_options()
        s = paper.shares
        d = len(config.spec)
        n_binned = len(config.binned_columns())
        locenc = s["locenc"]
        binning = s["binning"] if n_binned else 0.0
        locenc += s["binning"] - binning
        locmrf = s["locmrf"] if paper.local_mrf else 0.0
        locenc += s["locmrf"] - locmrf
        rho_enc = rho * locenc
        eps_prime = paper.eps_prime(t, d, config.delta, locenc, epsilon, rho_enc)
        rho_bin = rho * binning
        return cls(
            rho_total=rho,
            rho_locmrf_party=rho * locmrf / len(config.parties),
            rho_locenc=rho_enc,
            rho_count=rho * s["count"],
            rho_binning=rho_bin,
            eps_prime=eps_prime,
            grr_epsilon=math.sqrt(2.0 * rho_enc / d),
            count_epsilon=math.sqrt(2.0 * rho * s["count"]),
            binning_epsilon=math.sqrt(2.0 * rho_bin / n_binned) if n_binned else 0.0,
        )
