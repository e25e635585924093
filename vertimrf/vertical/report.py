"""The protocol report: every release of every party, the true total, and what the server did."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from vertimrf.privacy.ledger import PrivacyLedger


@dataclass
class ProtocolReport:
    """What a vertical run released and built; ``str()`` gives a readable summary."""

    epsilon: float
    delta: float
    method: str
    ledger: PrivacyLedger
    n_hat: float
    model: str
    cross_edges: tuple[tuple[str, str], ...]
    cross_measured: tuple[tuple[str, str], ...]
    n_local_measurements: int
    iterations: tuple[int, ...]
    seconds: dict[str, float] = field(default_factory=dict)
    message_bytes: dict[str, int] = field(default_factory=dict)

    @property
    def total_epsilon(self) -> float:
        """The ledger's total epsilon at the requested delta (a true upper bound)."""
        return self.ledger.total_epsilon(self.delta)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "total_epsilon": self.total_epsilon,
            "total_rho": self.ledger.total_rho,
            "method": self.method,
            "n_hat": self.n_hat,
            "model": self.model,
            "cross_edges": [list(e) for e in self.cross_edges],
            "cross_measured": [list(e) for e in self.cross_measured],
            "n_local_measurements": self.n_local_measurements,
            "iterations": list(self.iterations),
            "seconds": dict(self.seconds),
            "message_bytes": dict(self.message_bytes),
            "releases": self.ledger.to_records(),
        }

    def __str__(self) -> str:
        lines = [
            f"VertiMRF-{self.method.upper()} run: budget (epsilon, delta) = "
            f"({self.epsilon:g}, {self.delta:.3g}); spent epsilon = {self.total_epsilon:.6g}",
            f"noisy record count n_hat = {self.n_hat:.0f}; model: {self.model}",
            f"cross-party edges added: {len(self.cross_edges)}; cross marginals fitted: "
            f"{len(self.cross_measured)}; local marginals: {self.n_local_measurements}",
        ]
        if self.seconds:
            lines.append("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()))
        if self.message_bytes:
            lines.append(
                "message bytes: " + ", ".join(f"{k} {v:,}" for k, v in self.message_bytes.items())
            )
        return "\n".join(lines) + "\n\n" + self.ledger.report(self.delta)
