"""The protocol budget: turn a ProtocolConfig's shares into every mechanism's parameters.

All shares are fractions of the zCDP budget rho of (epsilon, delta); zCDP composes by
addition, so the releases of all parties together cost at most rho. Under add/remove of one
individual every party's data changes, so the LocMRF share is divided evenly over the m
parties (each local model pays rho_locmrf / m). Unused shares move to LocEnc: the binning
share when no attribute is binned, the LocMRF share when local models are switched off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vertimrf.privacy.calibration import sketch_epsilon
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.vertical.config import ProtocolConfig


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
    def from_config(cls, config: ProtocolConfig, t: int | None = None) -> ProtocolBudget:
        """Split the config's budget; ``t`` overrides ``config.t`` (needed when it is 'auto')."""
        t = config.t if t is None else t
        if not isinstance(t, int):
            raise TypeError("resolve t='auto' to an integer before splitting the budget.")
        rho = epsilon_to_rho(config.epsilon, config.delta)
        s = config.shares
        d = len(config.spec)
        n_binned = len(config.binned_columns())
        locenc = s["locenc"]
        binning = s["binning"] if n_binned else 0.0
        locenc += s["binning"] - binning
        locmrf = s["locmrf"] if config.local_mrf else 0.0
        locenc += s["locmrf"] - locmrf
        rho_enc = rho * locenc
        if config.accounting == "paper":
            # The paper's Theorem 2 on an (epsilon, delta) share of the same fraction.
            eps_prime = sketch_epsilon(
                t, d, epsilon=locenc * config.epsilon, delta=config.delta, accounting="paper"
            )
        else:
            eps_prime = sketch_epsilon(t, d, rho=rho_enc)
        rho_bin = rho * binning
        return cls(
            rho_total=rho,
            rho_locmrf_party=rho * locmrf / len(config.parties),
            rho_locenc=rho_enc,
            rho_count=count_rho(config),
            rho_binning=rho_bin,
            eps_prime=eps_prime,
            grr_epsilon=math.sqrt(2.0 * rho_enc / d),
            count_epsilon=math.sqrt(2.0 * rho * s["count"]),
            binning_epsilon=math.sqrt(2.0 * rho_bin / n_binned) if n_binned else 0.0,
        )


def count_rho(config: ProtocolConfig) -> float:
    """The zCDP cost of the one noisy record count (independent of t)."""
    return epsilon_to_rho(config.epsilon, config.delta) * config.shares["count"]
