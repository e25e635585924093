"""vertimrf: differentially private synthetic data for vertically partitioned tables."""

from vertimrf import metrics
from vertimrf.datasets import load_dataset
from vertimrf.domain import ColumnSpec, Domain, DomainSpec, TableEncoder, infer_spec
from vertimrf.mrf.privmrf import PrivMRF
from vertimrf.privacy import PrivacyLedger
from vertimrf.vertical import Party, PartyMessage, ProtocolConfig, Server, simulate

__all__ = [
    "ColumnSpec",
    "Domain",
    "DomainSpec",
    "Party",
    "PartyMessage",
    "PrivMRF",
    "PrivacyLedger",
    "ProtocolConfig",
    "Server",
    "TableEncoder",
    "infer_spec",
    "load_dataset",
    "metrics",
    "simulate",
]
__version__ = "0.1.0"
