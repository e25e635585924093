"""One release's noisy marginals as the engine reads them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Marginal = tuple[int, ...]


@dataclass(frozen=True)
class Tables:
    """Noisy marginals of one release: counts (float), and each one's noise scale."""

    values: dict[Marginal, np.ndarray]
    scale: dict[Marginal, float]
