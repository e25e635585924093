"""The FM sketch machinery: the party half (IDs, keys, registers, DP step, LocEnc, GRR) and
the server half (merging parties' sketches, CarEst)."""

from vertimrf.sketch.carest import CarEst
from vertimrf.sketch.dp import FMNoise, fm_noise
from vertimrf.sketch.encode import locenc, sketch_from_registers
from vertimrf.sketch.grr import grr_marginal, grr_perturb
from vertimrf.sketch.ids import record_fingerprints
from vertimrf.sketch.keys import HashKeys, new_shared_secret
from vertimrf.sketch.registers import compute_registers, merge_registers, registers_to_geometric
from vertimrf.sketch.sketchset import MergedSketches, SketchSet

__all__ = [
    "CarEst",
    "FMNoise",
    "HashKeys",
    "MergedSketches",
    "SketchSet",
    "compute_registers",
    "fm_noise",
    "grr_marginal",
    "grr_perturb",
    "locenc",
    "merge_registers",
    "new_shared_secret",
    "record_fingerprints",
    "registers_to_geometric",
    "sketch_from_registers",
]
