"""zCDP of a sum of independent discrete Gaussians: the distributed discrete
Gaussian; design notes in docs/design/privacy.md."""

from __future__ import annotations

import math

from vertimrf.errors import PrivacyBudgetError


def ddg_tau(s: float, components: int) -> float:
    """KLS's tau for ``components`` summands of N_Z(0, s^2)."""
    return 10.0 * math.fsum(
        math.exp(-2.0 * math.pi**2 * s * s * k / (k + 1)) for k in range(1, components)
    )


def ddg_rho(s: float, components: int, l2_sq: float, l1: float, dim: int) -> float:
    """zCDP rho of ``components`` summed N_Z(0, s^2)^dim noises on a query whose change
    has squared L2 norm ``l2_sq`` and L1 norm ``l1`` (KLS Proposition 14)."""
    if not (s >= 0.5 and components >= 1 and dim >= 1 and l2_sq >= 0 and l1 >= 0):
        raise PrivacyBudgetError(
            "the distributed discrete Gaussian bound needs s >= 1/2, at least one component "
            f"and one dimension; got s={s}, components={components}, dim={dim}."
        )
    tau = ddg_tau(s, components)
    var = components * s * s
    return min(
        l2_sq / (2.0 * var) + tau * dim,
        0.5 * (l2_sq / var + 2.0 * l1 * tau / math.sqrt(var) + tau * tau * dim),
        0.5 * (math.sqrt(l2_sq / var) + tau * math.sqrt(dim)) ** 2,
    )
