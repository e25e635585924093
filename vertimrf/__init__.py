"""vertimrf: differentially private synthetic data for vertically partitioned tables.

The public names below are loaded on first use, so that importing one layer (for example
``vertimrf.protocol``, which holds no Numba code) does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

from vertimrf import logs as _logs  # noqa: F401  (the library logger's NullHandler)

_EXPORTS = {
    "ColumnSpec": "vertimrf.domain",
    "Domain": "vertimrf.domain",
    "DomainSpec": "vertimrf.domain",
    "EncodedTable": "vertimrf.domain",
    "TableEncoder": "vertimrf.domain",
    "infer_spec": "vertimrf.domain",
    "load_dataset": "vertimrf.datasets",
    "PrivacyLedger": "vertimrf.privacy",
    "PartyMessage": "vertimrf.protocol",
    "ProtocolConfig": "vertimrf.protocol",
    "PartySpec": "vertimrf.protocol",
    "SecureOptions": "vertimrf.protocol",
    "SecurePaperOptions": "vertimrf.protocol",
    "FOOptions": "vertimrf.protocol",
    "FMOptions": "vertimrf.protocol",
    "KeyPair": "vertimrf.protocol",
    "ProtocolReport": "vertimrf.protocol",
    "SecureRelease": "vertimrf.protocol",
    "Party": "vertimrf.party",
    "LocalParty": "vertimrf.party",
    "SecureParty": "vertimrf.party",
    "Server": "vertimrf.server",
    "PaperServer": "vertimrf.server",
    "SecureServer": "vertimrf.server",
    "PrivMRF": "vertimrf.synth",
    "simulate": "vertimrf.simulation",
    "fit_vertical": "vertimrf.simulation",
    "VerticalModel": "vertimrf.vertical_model",
    "set_num_threads": "vertimrf.threads",
    "get_num_threads": "vertimrf.threads",
}
_MODULES = ("metrics",)

__all__ = sorted([*_EXPORTS, *_MODULES])
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"vertimrf.{name}")
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'vertimrf' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
