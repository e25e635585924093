"""Turn a budget share into the FM sketches' per-sketch epsilon';
design notes in docs/design/privacy.md."""

from __future__ import annotations

import math

from vertimrf.errors import PrivacyBudgetError

ACCOUNTING_MODES = ("zcdp", "theorem2")


def sketch_epsilon(
    t: int,
    d: int,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
    accounting: str = "zcdp",
) -> float:
    """Per-sketch epsilon' for t repetitions over d attributes.

    ``accounting="zcdp"`` needs ``rho`` (the sketches' zCDP share);
    ``accounting="theorem2"`` needs ``epsilon`` and ``delta`` (the sketches' (eps, delta) share).
    """
    if t < 1 or d < 1:
        raise PrivacyBudgetError(f"t and d must be >= 1; got t={t}, d={d}.")
    if accounting == "zcdp":
        if rho is None or not rho > 0:
            raise PrivacyBudgetError("zcdp sketch accounting needs a positive rho share.")
        return math.sqrt(2.0 * rho / (t * d))
    if accounting == "theorem2":
        if epsilon is None or delta is None or not (epsilon > 0 and 0 < delta < 1):
            raise PrivacyBudgetError(
                "paper sketch accounting needs epsilon > 0 and delta in (0, 1) for the sketches."
            )
        return epsilon / (4.0 * math.sqrt(t * d * math.log(1.0 / delta)))
    raise PrivacyBudgetError(f"unknown accounting {accounting!r}; use one of {ACCOUNTING_MODES}.")


def grr_probabilities(epsilon: float, u: int) -> tuple[float, float]:
    """(p, q): probability of reporting the true value and each other value."""
    e = math.exp(epsilon)
    return e / (e + u - 1), 1.0 / (e + u - 1)
