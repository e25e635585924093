"""The protocol budget: turn a ProtocolConfig's shares into every mechanism's parameters.

All shares are fractions of the zCDP budget rho of (epsilon, delta); zCDP composes by
addition, so the releases of all parties together cost at most rho. Under add/remove of one
individual every party's data changes, so the LocMRF share is divided evenly over the m
parties (each local model pays rho_locmrf / m). Unused shares move to LocEnc: the binning
share when no attribute is binned, the LocMRF share when local models are switched off.

:func:`expected_releases` lists, from the config alone, every release a party must make
with its exact parameters. The party caps its ledger at their total (:func:`party_rho`) and
the server checks each message's declared releases against them, so neither trusts the
other's arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.methods import FM_MECHANISM, GRR_MECHANISM, pure_release, rules

__all__ = ["FM_MECHANISM", "GRR_MECHANISM", "ProtocolBudget", "expected_releases", "party_rho"]


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
        eps_prime = rules(config).eps_prime(config, t, locenc, epsilon, rho_enc)
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


# Mechanism names of a party's releases outside its local PrivMRF.
COUNT_MECHANISM = "discrete_laplace"
BINNING_MECHANISM = "discrete_laplace_hist"


def expected_releases(
    config: ProtocolConfig, party: str, *, epsilon: float | None = None
) -> list[Release]:
    """Every release ``party`` makes outside its local PrivMRF, with config-derived parameters.

    For method="secure" (the paper pipeline) the cross-party release is the secure
    product's, charged by :meth:`vertimrf.protocol.secure.SecurePlan.releases`, not here.

    The local PrivMRF's releases are data-dependent in number; their total is
    ``ProtocolBudget.rho_locmrf_party`` (see :func:`party_rho`). ``epsilon`` overrides the
    config's (to cost a variant).
    """
    budget = ProtocolBudget.from_config(config, epsilon=epsilon)
    columns = config.party(party).columns
    out = []
    if party == config.count_party:
        eps = budget.count_epsilon
        out.append(
            pure_release(
                COUNT_MECHANISM, eps, 1, party, "noisy record count", sensitivity=1, scale=1 / eps
            )
        )
    binned = set(config.binned_columns())
    for c in columns:
        if c in binned:
            eps = budget.binning_epsilon
            out.append(
                pure_release(
                    BINNING_MECHANISM,
                    eps,
                    1,
                    party,
                    f"value counts of {c} (for its bin map)",
                    sensitivity=1,
                    scale=1 / eps,
                    cells=config.spec[c].size,
                )
            )
    out += rules(config).cross_releases(config, budget, party, len(columns))
    return out


def party_rho(config: ProtocolConfig, party: str) -> float:
    """The whole zCDP allowance of ``party``: its releases plus its local PrivMRF."""
    local = ProtocolBudget.from_config(config).rho_locmrf_party
    if not config.paper_options().local_mrf:
        local = 0.0
    return math.fsum([local, *(r.rho for r in expected_releases(config, party))])
