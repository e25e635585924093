"""What every role agrees on: the config that pins a run (made checked by :func:`from_preset`
and :func:`load_config`), its budget split, the message schema, and the report. Importing it
imports neither Numba nor pandas; its names are loaded on first use, so that importing one
module of it (as the cheap commands do) loads no others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # the lazy names below, typed for type checkers
    from vertimrf.protocol.autot import choose_t as choose_t
    from vertimrf.protocol.config import PartySpec as PartySpec
    from vertimrf.protocol.config import ProtocolConfig as ProtocolConfig
    from vertimrf.protocol.factory import from_preset as from_preset
    from vertimrf.protocol.factory import load_config as load_config
    from vertimrf.protocol.message import PartyMessage as PartyMessage
    from vertimrf.protocol.options import FMOptions as FMOptions
    from vertimrf.protocol.options import FOOptions as FOOptions
    from vertimrf.protocol.options import SecureOptions as SecureOptions
    from vertimrf.protocol.options import SecurePaperOptions as SecurePaperOptions
    from vertimrf.protocol.report import ProtocolReport as ProtocolReport
    from vertimrf.protocol.secure.release import SecureRelease as SecureRelease

_EXPORTS = {
    "choose_t": "vertimrf.protocol.autot",
    "PartySpec": "vertimrf.protocol.config",
    "ProtocolConfig": "vertimrf.protocol.config",
    "from_preset": "vertimrf.protocol.factory",
    "load_config": "vertimrf.protocol.factory",
    "PartyMessage": "vertimrf.protocol.message",
    "FMOptions": "vertimrf.protocol.options",
    "FOOptions": "vertimrf.protocol.options",
    "SecureOptions": "vertimrf.protocol.options",
    "SecurePaperOptions": "vertimrf.protocol.options",
    "ProtocolReport": "vertimrf.protocol.report",
    "SecureRelease": "vertimrf.protocol.secure.release",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)
