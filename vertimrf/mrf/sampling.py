"""Junction-tree forward sampling (the Python side; the per-row work is in kernels/sample.py).

The root clique is drawn jointly; every other clique, in pre-order, draws its new attributes
given the separator with its parent, which by the running-intersection property holds every
already-sampled attribute of the clique. Counts are rounded per separator group, so the
synthetic clique marginals follow the model closely, and the values are dealt to the group's
rows in random order, so the new attributes are independent of everything outside the
separator, as the model says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.kernels import sample as ks
from vertimrf.mrf.cliques import ProjectionMap, c_strides

if TYPE_CHECKING:
    from vertimrf.mrf.model import MarkovRandomField


def forward_sample(model: MarkovRandomField, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` records from ``model`` as an (n, d) int64 code matrix."""
    if not isinstance(rng, np.random.Generator):
        raise ConfigError(
            "sample() needs a numpy.random.Generator, e.g. numpy.random.default_rng(seed)."
        )
    n = int(n)
    if n < 0:
        raise ConfigError(f"Cannot draw a negative number of records ({n}).")
    tree, layout, domain = model.tree, model.layout, model.domain
    probs = model.clique_marginals()
    out = np.zeros((n, len(domain)), dtype=np.int64)
    sep_of = {child: sep for (_, child), sep in zip(tree.edges, tree.separators, strict=True)}
    for c in tree.preorder:
        clique = layout.cliques[c]
        sep = sep_of.get(c, ())
        new = [a for a in clique if a not in sep]
        pm = ProjectionMap.build(clique, sep, domain)
        code = separator_codes(out, sep, domain.shape(sep))
        sizes = np.bincount(code, minlength=pm.base.size).astype(np.int64)
        counts = np.zeros(layout.sizes[c], dtype=np.int64)
        ks.round_groups(
            probs[layout.slice(c)], pm.base, pm.rest, sizes, rng.random(pm.base.size), counts
        )
        order, starts = ks.group_rows(code, rng.permutation(n).astype(np.int64), pm.base.size)
        rest_codes = np.indices(domain.shape(new), dtype=np.int64).reshape(len(new), -1).T
        ks.assign_values(
            order,
            starts,
            counts,
            pm.base,
            pm.rest,
            np.ascontiguousarray(rest_codes),
            np.array(new, dtype=np.int64),
            out,
        )
    return out


def separator_codes(rows: np.ndarray, attrs: tuple[int, ...], shape: tuple[int, ...]) -> np.ndarray:
    """C-order cell index over ``attrs`` of every row (zeros when ``attrs`` is empty)."""
    if not attrs:
        return np.zeros(rows.shape[0], dtype=np.int64)
    return rows[:, list(attrs)] @ np.array(c_strides(shape), dtype=np.int64)
