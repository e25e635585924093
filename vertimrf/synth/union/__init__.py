"""One model over the union of the records of parties whose record sets differ
(``record_sets="partial"``): the union domain with "absent" values and presence attributes,
the tables of it the noisy releases give, the fit, and sampling either population."""

from vertimrf.synth.union.measurements import Assembled, UnionDomain, union_tables
from vertimrf.synth.union.model import Population, UnionModel, fit_union
from vertimrf.synth.union.releases import NoisyTable, PartialReleases

__all__ = [
    "Assembled",
    "NoisyTable",
    "PartialReleases",
    "Population",
    "UnionDomain",
    "UnionModel",
    "fit_union",
    "union_tables",
]
