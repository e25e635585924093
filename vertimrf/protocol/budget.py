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

from vertimrf.privacy.calibration import sketch_epsilon
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import epsilon_to_rho, pure_to_rho
from vertimrf.protocol.config import ProtocolConfig


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
        """Split the config's budget; ``t`` and ``epsilon`` override the config's (to
        compare candidates)."""
        t = config.t if t is None else t
        epsilon = config.epsilon if epsilon is None else epsilon
        rho = epsilon_to_rho(epsilon, config.delta)
        s = config.shares
        d = len(config.spec)
        n_binned = len(config.binned_columns())
        locenc = s["locenc"]
        binning = s["binning"] if n_binned else 0.0
        locenc += s["binning"] - binning
        locmrf = s["locmrf"] if config.local_mrf else 0.0
        locenc += s["locmrf"] - locmrf
        rho_enc = rho * locenc
        if config.accounting == "theorem2":
            # The paper's Theorem 2 on an (epsilon, delta) share of the same fraction.
            eps_prime = sketch_epsilon(
                t, d, epsilon=locenc * epsilon, delta=config.delta, accounting="theorem2"
            )
        else:
            eps_prime = sketch_epsilon(t, d, rho=rho_enc)
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
FM_MECHANISM = "fm_sketch"
GRR_MECHANISM = "grr"


def _pure(mechanism: str, epsilon: float, count: int, party: str, what: str, **params) -> Release:
    params = {"epsilon": epsilon, **params}
    return Release(mechanism, what, count * pure_to_rho(epsilon), count, party, params)


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
            _pure(
                COUNT_MECHANISM, eps, 1, party, "noisy record count", sensitivity=1, scale=1 / eps
            )
        )
    binned = set(config.binned_columns())
    for c in columns:
        if c in binned:
            eps = budget.binning_epsilon
            out.append(
                _pure(
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
    d = len(columns)
    if config.method == "fm":
        noise = fm_noise(budget.eps_prime, config.gamma)
        out.append(
            _pure(
                FM_MECHANISM,
                budget.eps_prime,
                config.t * d,
                party,
                f"FM sketches of {d} attributes x {config.t} keys (NOT DP: shared randomness)",
                gamma=config.gamma,
                k_p=noise.k_p,
                alpha_min=noise.alpha_min,
            )
        )
    elif config.method == "fo":
        out.append(
            _pure(
                GRR_MECHANISM,
                budget.grr_epsilon,
                d,
                party,
                f"GRR of {d} attributes (eps-LDP per report; row count public)",
            )
        )
    return out


def party_rho(config: ProtocolConfig, party: str) -> float:
    """The whole zCDP allowance of ``party``: its releases plus its local PrivMRF."""
    local = ProtocolBudget.from_config(config).rho_locmrf_party if config.local_mrf else 0.0
    return math.fsum([local, *(r.rho for r in expected_releases(config, party))])
