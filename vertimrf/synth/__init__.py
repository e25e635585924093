"""DP synthesizers built on the MRF engine: PrivMRF."""

from vertimrf.synth.privmrf import PrivMRF

__all__ = ["PrivMRF"]
