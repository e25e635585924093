"""Everything that runs where the data lives: record IDs, keys and the PRF, FM registers and
LocEnc, the phantom step, GRR perturbation, the FO row order, binning releases, the secure
product's party side, and Party, which serves every method."""

from vertimrf.party.party import LocalParty
from vertimrf.party.roles import Party
from vertimrf.party.secure import SecureParty

__all__ = ["LocalParty", "Party", "SecureParty"]
