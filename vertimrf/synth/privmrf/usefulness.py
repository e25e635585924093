"""theta-usefulness: the largest marginal worth measuring at a given
noise level; design notes in docs/design/synth.md."""

from __future__ import annotations

import math

from vertimrf.errors import ConfigError


def _check(n_hat: float, sigma: float, theta: float) -> None:
    if not (sigma > 0 and theta > 0 and n_hat > 0):
        raise ConfigError(
            f"usefulness needs n_hat, sigma and theta > 0; got {n_hat}, {sigma}, {theta}."
        )


def graph_phase_max_cells(n_hat: float, sigma: float, theta: float) -> float:
    """Cell limit for the initial marginals: n_hat / (sigma * theta)."""
    _check(n_hat, sigma, theta)
    return n_hat / (sigma * theta)


def refinement_max_cells(n_hat: float, sigma: float, theta: float) -> float:
    """Cell limit for refinement candidates: n_hat / (sigma * sqrt(2/pi) * theta)."""
    _check(n_hat, sigma, theta)
    return n_hat / (sigma * math.sqrt(2.0 / math.pi) * theta)
