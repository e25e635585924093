"""One model over the union of the records of parties whose record sets differ
(``record_sets="partial"``): the union domain with "absent" values, the tables of it the
noisy releases give, the model's structure (presence read off one attribute per party), the
fit, and sampling either population."""

from vertimrf.synth.union.measurements import Assembled, UnionDomain, union_tables
from vertimrf.synth.union.model import Population, UnionModel, fit_union
from vertimrf.synth.union.releases import NoisyTable, PartialReleases
from vertimrf.synth.union.structure import union_cells

__all__ = [
    "Assembled",
    "NoisyTable",
    "PartialReleases",
    "Population",
    "UnionDomain",
    "UnionModel",
    "fit_union",
    "union_cells",
    "union_tables",
]
