"""vertimrf: differentially private synthetic data for vertically partitioned tables.

The public names below are loaded on first use, so that importing one layer (for example
``vertimrf.protocol``, which holds no Numba code) does not import the others.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vertimrf import logs as _logs  # noqa: F401  (the library logger's NullHandler)
from vertimrf.lazy import lazy_names

if TYPE_CHECKING:  # the lazy names below, typed for type checkers
    from vertimrf.crypto.keys import KeyPair as KeyPair
    from vertimrf.datasets import load_dataset as load_dataset
    from vertimrf.domain import ColumnSpec as ColumnSpec
    from vertimrf.domain import Domain as Domain
    from vertimrf.domain import DomainSpec as DomainSpec
    from vertimrf.domain import EncodedTable as EncodedTable
    from vertimrf.encoding import TableEncoder as TableEncoder
    from vertimrf.party import LocalParty as LocalParty
    from vertimrf.party import Party as Party
    from vertimrf.party import SecureParty as SecureParty
    from vertimrf.privacy import FitReport as FitReport
    from vertimrf.privacy import PrivacyLedger as PrivacyLedger
    from vertimrf.propose import infer_spec as infer_spec
    from vertimrf.protocol import FMOptions as FMOptions
    from vertimrf.protocol import FOOptions as FOOptions
    from vertimrf.protocol import PartyMessage as PartyMessage
    from vertimrf.protocol import PartySpec as PartySpec
    from vertimrf.protocol import ProtocolConfig as ProtocolConfig
    from vertimrf.protocol import ProtocolReport as ProtocolReport
    from vertimrf.protocol import SecureOptions as SecureOptions
    from vertimrf.protocol import SecurePaperOptions as SecurePaperOptions
    from vertimrf.protocol import SecureRelease as SecureRelease
    from vertimrf.protocol import from_preset as from_preset
    from vertimrf.protocol import load_config as load_config
    from vertimrf.server import PaperServer as PaperServer
    from vertimrf.server import SecureServer as SecureServer
    from vertimrf.server import Server as Server
    from vertimrf.simulation import fit_vertical as fit_vertical
    from vertimrf.simulation import simulate as simulate
    from vertimrf.synth import PrivMRF as PrivMRF
    from vertimrf.threads import get_num_threads as get_num_threads
    from vertimrf.threads import set_num_threads as set_num_threads
    from vertimrf.timecols import TimeAxis as TimeAxis
    from vertimrf.vertical_model import VerticalModel as VerticalModel

_EXPORTS = {
    "ColumnSpec": "vertimrf.domain",
    "Domain": "vertimrf.domain",
    "DomainSpec": "vertimrf.domain",
    "EncodedTable": "vertimrf.domain",
    "TableEncoder": "vertimrf.encoding",
    "infer_spec": "vertimrf.propose",
    "TimeAxis": "vertimrf.timecols",
    "load_dataset": "vertimrf.datasets",
    "FitReport": "vertimrf.privacy",
    "PrivacyLedger": "vertimrf.privacy",
    "PartyMessage": "vertimrf.protocol",
    "ProtocolConfig": "vertimrf.protocol",
    "from_preset": "vertimrf.protocol",
    "load_config": "vertimrf.protocol",
    "PartySpec": "vertimrf.protocol",
    "SecureOptions": "vertimrf.protocol",
    "SecurePaperOptions": "vertimrf.protocol",
    "FOOptions": "vertimrf.protocol",
    "FMOptions": "vertimrf.protocol",
    "KeyPair": "vertimrf.crypto.keys",
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
__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, _MODULES)
