"""PrivMRF (Cai et al., VLDB 2021): the centralized DP synthesizer, also each party's local MRF
in the vertical protocol."""

from vertimrf.synth.privmrf.budget_split import BudgetSplit
from vertimrf.synth.privmrf.fit_report import AttributeGraph, PrivMRFReport
from vertimrf.synth.privmrf.options import AIMOptions, EngineOptions, PrivMRFOptions
from vertimrf.synth.privmrf.synthesizer import PrivMRF

__all__ = [
    "AIMOptions",
    "AttributeGraph",
    "BudgetSplit",
    "EngineOptions",
    "PrivMRF",
    "PrivMRFOptions",
    "PrivMRFReport",
]
