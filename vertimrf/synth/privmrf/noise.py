"""The noise of one PrivMRF fit: every release is charged to the ledger before
it is drawn; design notes in docs/design/synth.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.mechanisms import (
    exponential_mechanism,
    quantum_scale,
    scaled_discrete_gaussian,
)
from vertimrf.privacy.samplers import NoiseSampler


@dataclass
class FitNoise:
    """The ledger, the sampler and the releases of one fit."""

    ledger: PrivacyLedger
    sampler: NoiseSampler
    party: str | None
    charged: list[Release] = field(default_factory=list)

    def charge(
        self, mechanism: str, sensitivity: float, sigma: float, count: int, what: str
    ) -> None:
        """Charge ``count`` discrete Gaussian releases of integer counts."""
        self.charged.append(
            self.ledger.charge_gaussian(
                mechanism,
                sensitivity,
                sigma,
                count=count,
                party=self.party,
                description=what,
                sampler="discrete_gaussian",
            )
        )

    def gaussian(self, counts: np.ndarray, sigma: float) -> np.ndarray:
        """Integer counts plus exact discrete Gaussian noise (charge them first)."""
        exact = np.rint(counts).astype(np.int64)
        return (exact + self.sampler.discrete_gaussian(sigma, exact.shape)).astype(np.float64)

    def real(
        self,
        mechanism: str,
        rounded: Callable[[int], np.ndarray],
        sensitivity: float,
        sigma: float,
        what: str,
    ) -> np.ndarray:
        """Real queries of ``sensitivity`` each, released with std ``sigma`` on the 1/s grid.

        ``rounded(s)`` returns the exact integers round(s q_i) for the public scale
        s = quantum_scale(sigma); they are charged, then noised. Returns the released values
        k_i / s (exact in float64 while |k_i| < 2**53).
        """
        scale = quantum_scale(sigma)
        noisy, release = scaled_discrete_gaussian(
            rounded(scale),
            scale=scale,
            sensitivity=sensitivity,
            sigma=sigma,
            **self._release(mechanism, what),
        )
        self.charged.append(release)
        return noisy.astype(np.float64) / scale

    def select(
        self, mechanism: str, scores: np.ndarray, sensitivity: int, epsilon: float, what: str
    ) -> int:
        """One candidate by the exponential mechanism on integer ``scores`` of integer
        ``sensitivity`` (charged epsilon^2/8 first); returns its index."""
        index, release = exponential_mechanism(
            scores,
            sensitivity=sensitivity,
            epsilon=epsilon,
            **self._release(mechanism, what),
        )
        self.charged.append(release)
        return index

    def _release(self, mechanism: str, what: str) -> dict[str, Any]:
        """The keyword arguments every mechanism of this fit takes."""
        return {
            "noise": self.sampler,
            "ledger": self.ledger,
            "mechanism": mechanism,
            "party": self.party,
            "description": what,
        }
