"""Everything that runs where the data lives: record IDs, keys and the PRF, FM registers and
LocEnc, the phantom step, GRR perturbation, the FO row order, binning releases and Party."""

from vertimrf.party.party import Party

__all__ = ["Party"]
