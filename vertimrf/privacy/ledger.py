"""The privacy ledger: every released statistic is charged here, in zCDP.

Each :class:`Release` records a named mechanism, its parameters and its zCDP cost rho.
zCDP composes by adding rho, so the ledger's total is the sum over releases, converted to
(epsilon, delta) once with the Canonne-Kamath-Steinke bound. Pure epsilon-DP releases
(FM sketches, Laplace counts, GRR) cost eps^2/2 each; Gaussian releases cost
Delta^2 / (2 sigma^2). The privacy unit is one individual (add/remove one record).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from vertimrf.errors import PrivacyBudgetError
from vertimrf.privacy.zcdp import epsilon_to_rho, gaussian_rho, pure_to_rho, rho_to_epsilon

_SLACK = 1e-9


@dataclass(frozen=True)
class Release:
    """One charged entry: ``count`` releases of ``mechanism`` costing ``rho`` in total."""

    mechanism: str
    description: str
    rho: float
    count: int = 1
    party: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


class PrivacyLedger:
    """Charges releases in zCDP against an optional (epsilon, delta) budget.

    With a budget, a charge that would push the total rho above the budget's rho raises
    :class:`PrivacyBudgetError` and is not recorded.
    """

    def __init__(self, epsilon: float | None = None, delta: float | None = None) -> None:
        if (epsilon is None) != (delta is None):
            raise PrivacyBudgetError("give both epsilon and delta for a budget, or neither.")
        self.epsilon_budget = epsilon
        self.delta = delta
        self.budget_rho = None if epsilon is None else epsilon_to_rho(epsilon, delta)
        self._releases: list[Release] = []

    @property
    def releases(self) -> tuple[Release, ...]:
        """All charged releases in charge order."""
        return tuple(self._releases)

    @property
    def total_rho(self) -> float:
        """Total zCDP cost of everything charged so far."""
        return math.fsum(r.rho for r in self._releases)

    @property
    def remaining_rho(self) -> float:
        """Unspent rho of the budget (``inf`` without a budget)."""
        if self.budget_rho is None:
            return math.inf
        return max(0.0, self.budget_rho - self.total_rho)

    def total_epsilon(self, delta: float | None = None) -> float:
        """Total epsilon at ``delta`` (default: the budget's delta)."""
        delta = self.delta if delta is None else delta
        if delta is None:
            raise PrivacyBudgetError("this ledger has no budget; pass delta to total_epsilon().")
        return rho_to_epsilon(self.total_rho, delta)

    def charge(self, release: Release) -> Release:
        """Record ``release``; refuse it if it would exceed the budget."""
        if not (release.rho >= 0 and math.isfinite(release.rho)):
            raise PrivacyBudgetError(
                f"release {release.description!r} has invalid rho {release.rho}."
            )
        if self.budget_rho is not None:
            new_total = self.total_rho + release.rho
            if new_total > self.budget_rho * (1 + _SLACK):
                raise PrivacyBudgetError(
                    f"charging {release.mechanism} ({release.description}) with "
                    f"rho={release.rho:.3g} would bring the total to {new_total:.6g} > "
                    f"budget {self.budget_rho:.6g} "
                    f"(epsilon={self.epsilon_budget}, delta={self.delta}); lower that release's "
                    "share or raise the budget."
                )
        self._releases.append(release)
        return release

    def charge_pure(
        self,
        mechanism: str,
        epsilon: float,
        *,
        count: int = 1,
        party: str | None = None,
        description: str = "",
        **params: Any,
    ) -> Release:
        """Charge ``count`` releases, each epsilon-DP (zCDP cost eps^2/2 each)."""
        if not (epsilon > 0 and math.isfinite(epsilon)) or count < 1:
            raise PrivacyBudgetError(
                f"{mechanism}: epsilon must be positive and count >= 1; got {epsilon}, {count}."
            )
        rho = count * pure_to_rho(epsilon)
        return self.charge(
            Release(mechanism, description, rho, count, party, {"epsilon": epsilon, **params})
        )

    def charge_gaussian(
        self,
        mechanism: str,
        sensitivity: float,
        sigma: float,
        *,
        count: int = 1,
        party: str | None = None,
        description: str = "",
        **params: Any,
    ) -> Release:
        """Charge ``count`` Gaussian releases with L2 sensitivity and noise std sigma."""
        if not (sigma > 0 and sensitivity > 0) or count < 1:
            raise PrivacyBudgetError(
                f"{mechanism}: sigma and sensitivity must be positive and count >= 1."
            )
        rho = count * gaussian_rho(sensitivity, sigma)
        return self.charge(
            Release(
                mechanism,
                description,
                rho,
                count,
                party,
                {"sensitivity": sensitivity, "sigma": sigma, **params},
            )
        )

    def extend(self, releases: list[Release] | tuple[Release, ...]) -> None:
        """Charge releases recorded elsewhere (e.g. in a party's message)."""
        for r in releases:
            self.charge(r)

    def to_records(self) -> list[dict[str, Any]]:
        """The releases as JSON-ready dicts."""
        return [asdict(r) for r in self._releases]

    @staticmethod
    def releases_from_records(records: list[dict[str, Any]]) -> list[Release]:
        """Inverse of :meth:`to_records`."""
        return [Release(**r) for r in records]

    def report(self, delta: float | None = None) -> str:
        """A readable table of every release and the total (epsilon, delta)."""
        delta = self.delta if delta is None else delta
        total = self.total_rho
        lines = ["Privacy ledger (zCDP; privacy unit: one individual, add/remove)"]
        header = f"{'party':<10} {'mechanism':<16} {'count':>7} {'rho':>11} {'share':>7}  details"
        lines += [header, "-" * len(header)]
        for r in self._releases:
            share = r.rho / total if total > 0 else 0.0
            detail = ", ".join(f"{k}={_fmt(v)}" for k, v in r.params.items())
            if r.description:
                detail = f"{r.description}; {detail}" if detail else r.description
            lines.append(
                f"{r.party or '-':<10} {r.mechanism:<16} {r.count:>7} {r.rho:>11.4e} "
                f"{share:>6.1%}  {detail}"
            )
        lines.append("-" * len(header))
        lines.append(f"total rho = {total:.6g}")
        if delta is not None:
            lines.append(
                f"total (epsilon, delta) = ({rho_to_epsilon(total, delta):.6g}, {delta:.3g}) "
                "by the Canonne-Kamath-Steinke conversion"
            )
        if self.budget_rho is not None:
            lines.append(
                f"budget (epsilon, delta) = ({self.epsilon_budget}, {self.delta:.3g}); "
                f"rho budget = {self.budget_rho:.6g}; used {total / self.budget_rho:.2%}"
            )
        return "\n".join(lines)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
