"""Privacy accounting: one zCDP ledger, conversions and calibration."""

from vertimrf.privacy.calibration import ACCOUNTING_MODES, sketch_epsilon
from vertimrf.privacy.fit_report import FitReport
from vertimrf.privacy.ledger import PrivacyLedger, Release
from vertimrf.privacy.zcdp import (
    DEFAULT_DELTA,
    epsilon_to_rho,
    exponential_rho,
    gaussian_rho,
    gaussian_sigma,
    pure_to_rho,
    rho_to_epsilon,
)

__all__ = [
    "DEFAULT_DELTA",
    "ACCOUNTING_MODES",
    "FitReport",
    "PrivacyLedger",
    "Release",
    "epsilon_to_rho",
    "exponential_rho",
    "gaussian_rho",
    "gaussian_sigma",
    "pure_to_rho",
    "rho_to_epsilon",
    "sketch_epsilon",
]
