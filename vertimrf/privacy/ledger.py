"""The privacy ledger: every released statistic is charged here, in
zCDP; design notes in docs/design/privacy.md."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from vertimrf.errors import PrivacyBudgetError, PrivacyError
from vertimrf.privacy.zcdp import (
    epsilon_to_rho,
    exponential_rho,
    gaussian_rho,
    pure_to_rho,
    rho_to_epsilon,
    round_up,
)

_SLACK = 1e-9
# Mechanisms whose charges are bookkeeping only: their releases share randomness, so no
# composition theorem applies and no (epsilon, delta) guarantee follows from the ledger.
NON_DP_MECHANISMS = frozenset({"fm_sketch"})


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
    """Charges releases in zCDP against an optional budget.

    The budget is an (epsilon, delta) pair, or a zCDP ``rho`` directly (for example a
    party's share of a protocol budget; ``delta`` then only sets the reporting delta). A
    charge that would push the total rho above the budget's rho raises
    :class:`PrivacyBudgetError` and is not recorded.

    >>> ledger = PrivacyLedger(epsilon=1.0, delta=1e-6)
    >>> _ = ledger.charge_gaussian("discrete_gaussian", sensitivity=1, sigma=10, count=2)
    >>> round(ledger.total_rho, 12), ledger.total_epsilon() < 1.0
    (0.01, True)
    >>> ledger.charge_pure("discrete_laplace", epsilon=1.0)
    Traceback (most recent call last):
    vertimrf.errors.PrivacyBudgetError: ...
    >>> len(ledger.releases)
    1
    """

    def __init__(
        self,
        epsilon: float | None = None,
        delta: float | None = None,
        *,
        rho: float | None = None,
    ) -> None:
        if rho is not None:
            if epsilon is not None:
                raise PrivacyBudgetError("give a budget as (epsilon, delta) or as rho, not both.")
            if not (rho > 0 and math.isfinite(rho)):
                raise PrivacyBudgetError(f"a rho budget must be positive and finite; got {rho!r}.")
        elif (epsilon is None) != (delta is None):
            raise PrivacyBudgetError("give both epsilon and delta for a budget, or neither.")
        self.epsilon_budget = epsilon
        self.delta = delta
        self.budget_rho = (
            rho if epsilon is None or delta is None else epsilon_to_rho(epsilon, delta)
        )
        self._releases: list[Release] = []

    @property
    def dp_guarantee(self) -> bool:
        """False when any release is of a mechanism whose charge is not a valid DP bound."""
        return not any(r.mechanism in NON_DP_MECHANISMS for r in self._releases)

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

    @property
    def failure_delta(self) -> float:
        """The sum of the releases' failure probabilities (``params["failure_delta"]``: a
        release that is zCDP except on an event of that probability, such as a clipped
        noise); a total (epsilon, delta) converts the rho at delta less this."""
        return math.fsum(float(r.params.get("failure_delta", 0.0)) for r in self._releases)

    def epsilon_at(self, rho: float, delta: float) -> float:
        """The epsilon of ``rho`` (of releases of this ledger) at a total ``delta``: the
        conversion at delta less :attr:`failure_delta` (PrivacyBudgetError when none is
        left)."""
        left = delta - self.failure_delta
        if left <= 0:
            raise PrivacyBudgetError(
                f"delta {delta:g} does not cover the releases' failure probability "
                f"{self.failure_delta:g}."
            )
        return rho_to_epsilon(rho, left)

    def total_epsilon(self, delta: float | None = None) -> float:
        """Total epsilon at ``delta`` (default: the budget's delta); a true upper bound.

        Raises :class:`PrivacyError` when the ledger holds a non-DP release (see the module
        docstring): no epsilon can be claimed then.
        """
        delta = self.delta if delta is None else delta
        if delta is None:
            raise PrivacyBudgetError("this ledger has no budget; pass delta to total_epsilon().")
        if not self.dp_guarantee:
            raise PrivacyError(
                "this ledger holds FM-sketch releases, which are NOT differentially private "
                "(their registers share randomness, so the charges do not compose); there is "
                "no total (epsilon, delta) to report."
            )
        return self.epsilon_at(self.total_rho, delta)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[PrivacyLedger]:
        """Charges made inside are kept only if the block completes: a step that fails
        part-way leaves the ledger as it was (its outputs are never released)."""
        mark = len(self._releases)
        try:
            yield self
        except BaseException:
            del self._releases[mark:]
            raise

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

    def charge_exponential(
        self,
        mechanism: str,
        epsilon: float,
        *,
        party: str | None = None,
        description: str = "",
        **params: Any,
    ) -> Release:
        """Charge one exponential-mechanism selection at ``epsilon`` (zCDP cost eps^2/8)."""
        return self.charge(
            exponential_release(mechanism, epsilon, party=party, description=description, **params)
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
        return self.charge(
            gaussian_release(
                mechanism, sensitivity, sigma, count=count, party=party,
                description=description, **params,
            )
        )  # fmt: skip

    def extend(self, releases: list[Release] | tuple[Release, ...]) -> None:
        """Charge releases recorded elsewhere (e.g. in a party's message)."""
        for r in releases:
            self.charge(r)

    def to_records(self) -> list[dict[str, Any]]:
        """The releases as JSON-ready dicts."""
        return [asdict(r) for r in self._releases]

    def total_line(self, delta: float | None = None, *, no_total: str | None = None) -> str:
        """One line above the table of :meth:`report`: the total epsilon at ``delta``
        (``no_total``, or that the ledger is not DP, instead when no total holds), the total
        rho and the number of releases."""
        delta = self.delta if delta is None else delta
        if no_total is not None:
            head = f"no total (epsilon, delta): {no_total}"
        elif not self.dp_guarantee:
            head = "no total (epsilon, delta): NOT differentially private (FM sketches)"
        elif delta is None:
            head = "total: no delta given, so no epsilon"
        else:
            epsilon = self.epsilon_at(self.total_rho, delta)
            head = f"total: epsilon = {round_up(epsilon)} at delta = {round_up(delta, 2)}"
        count = sum(r.count for r in self._releases)
        rows = len(self._releases)
        return (
            f"{head}; rho = {round_up(self.total_rho)}; {count:,} releases "
            f"({rows} ledger row{'s' if rows != 1 else ''})"
        )

    def report(self, delta: float | None = None, *, no_total: str | None = None) -> str:
        """A readable table of every release and the total (epsilon, delta); with
        ``no_total`` (why no guarantee holds, e.g. a seeded run), that reason instead."""
        delta = self.delta if delta is None else delta
        total = self.total_rho
        lines = ["Privacy ledger (zCDP; privacy unit: one individual, add/remove)"]
        wp = max([10, *(len(r.party or "-") for r in self._releases)])
        wm = max([16, *(len(r.mechanism) for r in self._releases)])
        header = (
            f"{'party':<{wp}} {'mechanism':<{wm}} {'count':>7} {'rho':>11} {'share':>7}  details"
        )
        lines += [header, "-" * len(header)]
        for r in self._releases:
            share = r.rho / total if total > 0 else 0.0
            detail = ", ".join(f"{k}={_fmt(v)}" for k, v in r.params.items())
            if r.description:
                detail = f"{r.description}; {detail}" if detail else r.description
            lines.append(
                f"{r.party or '-':<{wp}} {r.mechanism:<{wm}} {r.count:>7} {round_up(r.rho):>11} "
                f"{share:>6.1%}  {detail}"
            )
        lines.append("-" * len(header))
        lines.append(f"total rho charged = {round_up(total)}")
        if not self.dp_guarantee:
            lines.append(
                "NOT differentially private: the fm_sketch charges are the paper's claim, which "
                "is false (registers share randomness), so no total (epsilon, delta) holds"
            )
        elif no_total is not None:
            lines.append(f"no total (epsilon, delta) holds: {no_total}")
        elif delta is not None:
            fail = self.failure_delta
            lines.append(
                f"total (epsilon, delta) = ({round_up(self.epsilon_at(total, delta))}, "
                f"{round_up(delta, 2)}) "
                "by the Canonne-Kamath-Steinke conversion (a true upper bound)"
                + (f", at delta less the failure probability {fail:.3g}" if fail else "")
            )
        if self.budget_rho is not None:
            budget = (
                f"budget (epsilon, delta) = ({self.epsilon_budget:.4g}, "
                f"{round_up(self.delta, 2)}); "
                if self.epsilon_budget is not None and self.delta is not None
                else "budget: "
            )
            lines.append(
                f"{budget}rho budget = {self.budget_rho:.4g}; used {total / self.budget_rho:.2%}"
            )
        return "\n".join(lines)


def exponential_release(
    mechanism: str,
    epsilon: float,
    *,
    party: str | None = None,
    description: str = "",
    **params: Any,
) -> Release:
    """The entry of one exponential-mechanism selection at ``epsilon`` (zCDP eps^2/8), not
    yet charged (a plan lists it; :meth:`PrivacyLedger.charge_exponential` charges it)."""
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise PrivacyBudgetError(
            f"{mechanism}: epsilon must be positive and finite; got {epsilon!r}."
        )
    params = {"epsilon": epsilon, "sampler": "exponential_mechanism", **params}
    return Release(mechanism, description, exponential_rho(epsilon), 1, party, params)


def gaussian_release(
    mechanism: str,
    sensitivity: float,
    sigma: float,
    *,
    count: int = 1,
    party: str | None = None,
    description: str = "",
    **params: Any,
) -> Release:
    """The entry of ``count`` Gaussian releases with L2 ``sensitivity`` and noise std
    ``sigma``, not yet charged (a plan lists it; :meth:`PrivacyLedger.charge_gaussian`
    charges it)."""
    if not (sigma > 0 and sensitivity > 0) or count < 1:
        raise PrivacyBudgetError(
            f"{mechanism}: sigma and sensitivity must be positive and count >= 1."
        )
    rho = count * gaussian_rho(sensitivity, sigma)
    params = {"sensitivity": sensitivity, "sigma": sigma, **params}
    return Release(mechanism, description, rho, count, party, params)


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)
