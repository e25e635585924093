"""Partial record sets: the server selects cliques whose model over the union (each party's
links, the representatives' group and the fill-in included) fits its cap on cells, before
it requests anything more, so a run never fails at the fit after spending its budget. A
selection over the cap is made again with fewer cells. (Before this check, the cap-2000
run below failed at the fit: the model needed more cells than the cap.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.helpers import SECRET
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import rules
from vertimrf.server.secure import selection
from vertimrf.synth.union import UnionDomain, union_cells

SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 8, 6, 4, 3, 2)
PARTIES = {p: [f"c{j}" for j in range(5 * i, 5 * i + 5)] for i, p in enumerate("ABC")}


def _table(rows: int) -> pd.DataFrame:
    """15 correlated columns (each a noisy function of one latent code)."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 10, rows)
    return pd.DataFrame({
        f"c{j}": np.where(rng.random(rows) < 0.6 - 0.02 * j, (latent + j) % u,
                          rng.integers(0, u, rows))
        for j, u in enumerate(SIZES)
    })  # fmt: skip


@pytest.mark.parametrize(("cap", "again"), [(2000, True), (50000, False)])
def test_the_union_model_fits_the_cap_and_a_selection_over_it_is_made_again(
    cap, again, monkeypatch
):
    verdicts: list[bool] = []
    fits = selection.union_fits

    def counted(session, cliques):
        verdicts.append(fits(session, cliques))
        return verdicts[-1]

    monkeypatch.setattr(selection, "union_fits", counted)
    rows, spec = 3000, DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(SIZES)})
    df = _table(rows)
    cfg = from_preset(
        "default", epsilon=8.0, delta=1e-5, spec=spec, parties=list(PARTIES.items()),
        max_rows=8192, record_sets="partial", region_share=0.3,
        secure_max_total_cells=cap, secure_max_clique_cells=cap,
    )  # fmt: skip
    held = np.random.default_rng(2).random((rows, 3)) < 0.7
    held[~held.any(axis=1), 0] = True
    data = {n: df[cols].assign(id=range(rows))[held[:, i]]
            for i, (n, cols) in enumerate(PARTIES.items())}  # fmt: skip
    run = local_run(data, cfg, SECRET, seed=1)
    model = run.fitted(run.run())
    server = run.server.server.secure
    assert server.record_sets.models_union and model.absent
    cells = union_cells(UnionDomain(spec.domain, server.plan.owner), server.data.tree.cliques)
    assert cells <= rules(cfg).model_cap(cfg) and verdicts[-1]
    assert cells == server.data.union.model.tree.size.total_cells
    assert (verdicts[0] is False) == again and (len(verdicts) > 1) == again
