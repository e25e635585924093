"""Everything that runs where the data lives: record IDs, keys and the PRF, FM registers and
LocEnc, the phantom step, GRR perturbation, the FO row order, binning releases, the secure
product's party side, and Party, which serves every method. The names are loaded on first
use (importing ``vertimrf.party.keys`` loads no kernels)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # the lazy names below, typed for type checkers
    from vertimrf.party.party import LocalParty as LocalParty
    from vertimrf.party.roles import Party as Party
    from vertimrf.party.secure import SecureParty as SecureParty

_EXPORTS = {
    "LocalParty": "vertimrf.party.party",
    "Party": "vertimrf.party.roles",
    "SecureParty": "vertimrf.party.secure",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
