"""vertimrf: differentially private synthetic data for vertically partitioned tables."""

from vertimrf.domain import Domain

__all__ = ["Domain"]
__version__ = "0.1.0"
