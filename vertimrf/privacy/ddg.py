"""zCDP of a sum of independent discrete Gaussians: the distributed discrete Gaussian.

The secure product releases exact cross counts plus noise that several roles add: each of
the two parties adds N_Z(0, s^2) to its share and the server adds N_Z(0, s^2) to the sum.
Every viewer knows at most one component (its own), so it faces the sum of the other two:
Z = X_1 + X_2 with X_i ~ N_Z(0, s^2)^d. A sum of discrete Gaussians is not a discrete
Gaussian, but Kairouz, Liu and Steinke (ICML 2021, Proposition 14) bound it: for s >= 1/2,
n components and a shift Delta in Z^d, for every alpha >= 1,

    D_alpha(Z || Z + Delta) <= min{ alpha ||D||_2^2 / (2 n s^2) + tau d,
                                    alpha/2 (||D||_2^2 / (n s^2) + 2 ||D||_1 tau / (sqrt(n) s)
                                             + tau^2 d),
                                    alpha/2 (||D||_2 / (sqrt(n) s) + tau sqrt(d))^2 },
    tau = 10 sum_{k=1}^{n-1} exp(-2 pi^2 s^2 k / (k + 1)).

Each bound has the form alpha * rho for all alpha >= 1 (the first because tau d <= alpha tau d),
so the smallest rho is a zCDP guarantee. With n s^2 = sigma^2 it is sigma's continuous charge
||D||_2^2 / (2 sigma^2) plus a term below 1e-30 for s >= 3. A viewer that knows fewer
components faces more noise, which only helps (post-processing), so the bound for n = 2 holds
for every viewer.
"""

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
