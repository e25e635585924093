"""Everything that sees only messages: verification, merging, CarEst, GRR inversion, HisRec,
consistency, GraphCom, InitMRF and OptMRF, the secure product's server side, and Server,
which serves every method. The names are loaded on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # the lazy names below, typed for type checkers
    from vertimrf.server.roles import Server as Server
    from vertimrf.server.secure import SecureServer as SecureServer
    from vertimrf.server.server import PaperServer as PaperServer

_EXPORTS = {
    "Server": "vertimrf.server.roles",
    "SecureServer": "vertimrf.server.secure",
    "PaperServer": "vertimrf.server.server",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
