"""vertimrf: differentially private synthetic data for vertically partitioned tables."""

from vertimrf import metrics
from vertimrf.datasets import load_dataset
from vertimrf.domain import ColumnSpec, Domain, DomainSpec, TableEncoder, infer_spec
from vertimrf.mrf.privmrf import PrivMRF
from vertimrf.privacy import PrivacyLedger

__all__ = [
    "ColumnSpec",
    "Domain",
    "DomainSpec",
    "PrivMRF",
    "PrivacyLedger",
    "TableEncoder",
    "infer_spec",
    "load_dataset",
    "metrics",
]
__version__ = "0.1.0"
