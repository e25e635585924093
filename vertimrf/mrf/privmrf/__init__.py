"""PrivMRF (Cai et al., VLDB 2021): the centralized DP synthesizer, also each party's local MRF
in the vertical protocol."""

from vertimrf.mrf.privmrf.budget import BudgetSplit
from vertimrf.mrf.privmrf.options import PrivMRFOptions
from vertimrf.mrf.privmrf.report import AttributeGraph, PrivMRFReport
from vertimrf.mrf.privmrf.synthesizer import PrivMRF

__all__ = ["AttributeGraph", "BudgetSplit", "PrivMRF", "PrivMRFOptions", "PrivMRFReport"]
