"""Graphical-model engine: junction tree, MarkovRandomField (calibrate, marginals, sample),
mirror-descent estimation. Works on attribute indices of a Domain; knows nothing of parties."""

from vertimrf.mrf.cliques import CliqueLayout, CliquePotentials
from vertimrf.mrf.estimation import (
    FitProgress,
    FitResult,
    Measurement,
    l2_loss,
    mirror_descent,
    theoretic_loss,
)
from vertimrf.mrf.junction_tree import (
    DEFAULT_MAX_CELLS,
    JunctionTree,
    ModelSize,
    check_model_size,
    model_size,
    triangulate,
)
from vertimrf.mrf.model import MarkovRandomField

__all__ = [
    "DEFAULT_MAX_CELLS",
    "CliqueLayout",
    "CliquePotentials",
    "FitProgress",
    "FitResult",
    "JunctionTree",
    "MarkovRandomField",
    "Measurement",
    "ModelSize",
    "check_model_size",
    "l2_loss",
    "mirror_descent",
    "model_size",
    "theoretic_loss",
    "triangulate",
]
