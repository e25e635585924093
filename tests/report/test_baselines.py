"""MST and AIM through OpenDP's extras.mbi, in a child process killed at a cap: the table they
return and the cap honoured."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.report import FIGURES, ReportContext
from vertimrf.report.baselines import run_capped

pytest.importorskip("mbi")
pytest.importorskip("polars")


def _table(n: int = 400) -> tuple[pd.DataFrame, DomainSpec]:
    """Three columns, b a copy of a, c independent; a seeded table."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 3, n)
    spec = DomainSpec(
        [
            ColumnSpec("a", "categorical", ("x", "y", "z")),
            ColumnSpec("b", "categorical", (0, 1, 2)),
            ColumnSpec("c", "categorical", ("p", "q")),
        ]
    )
    codes = np.stack([a, a, rng.integers(0, 2, n)], 1)
    return TableEncoder(spec).decode(codes), spec


def test_mst_returns_a_table_over_the_spec():
    df, spec = _table()
    run = run_capped("mst", df, spec, 50.0, 1e-6, 0, cap=300)
    assert run.status == "finished" and 0 < run.seconds < 300
    assert list(run.synth.columns) == ["a", "b", "c"] and len(run.synth) == len(df)
    assert set(run.synth["a"]) <= {"x", "y", "z"} and set(run.synth["b"]) <= {0, 1, 2}
    assert set(run.synth["c"]) <= {"p", "q"}
    # At epsilon 50 the noise sd of a measured count is about 1 (of 400 rows), so the
    # a-b pair, far the strongest, is in the tree and its copy survives in most rows.
    codes = TableEncoder(spec).encode(run.synth)
    assert (codes[:, 0] == codes[:, 1]).mean() > 0.9


@pytest.mark.slow
def test_aim_returns_the_table_and_keeps_a_copied_column():
    """AIM as its paper configures it (mbi's 1000 mirror-descent iterations a fit). At
    epsilon 50 a count's noise sd is about 1 of 400 rows; any marginal AIM measures that holds
    both a and b (its workload is the one 3-way marginal) keeps the a-b copy in most rows, and
    so does a model fitted to it (about a minute on 2 cores)."""
    df, spec = _table()
    run = run_capped("aim", df, spec, 50.0, 1e-6, 0, cap=600)
    assert run.status == "finished", run.status
    codes = TableEncoder(spec).encode(run.synth)
    assert run.synth.shape == (400, 3) and (codes[:, 0] == codes[:, 1]).mean() > 0.9


def test_aims_measurement_spends_rho():
    """OpenDP's map of AIM's measurement is rho (Sequential searches its parts' common scale,
    so it may sit a hair below, never above)."""
    from vertimrf.report.opendp_mechanisms import aim_measurement

    rho = 0.0123
    measurement, d_in = aim_measurement(["a", "b", "c"], [3, 3, 2], rho)
    assert rho * (1 - 1e-6) <= measurement.map(d_in) <= rho


@pytest.mark.slow
def test_aim_measures_the_one_way_marginals_first_on_the_exact_domain():
    """The model's domain is the columns' sizes (no null category), and each of the d one-way
    marginals is released at AIM's initial scale: 0.9 / 16 of rho over d of them at
    sensitivity 1 is a discrete Gaussian of sd sqrt(d / (2 * rho * 0.9 / 16)) each (to the
    search's precision). Epsilon 50 on 400 rows: about a minute."""
    from vertimrf.privacy.zcdp import epsilon_to_rho
    from vertimrf.report.opendp_mechanisms import AIM_ONEWAY_SHARE, aim_table

    df, spec = _table()
    codes = TableEncoder(spec).encode(df)
    rho = epsilon_to_rho(50.0, 1e-6)
    table = aim_table(codes, ["a", "b", "c"], [3, 3, 2], rho)
    assert table.model.domain.shape == (3, 3, 2)
    expected = np.sqrt(3 / (2 * rho * AIM_ONEWAY_SHARE))
    for name in ("a", "b", "c"):  # AIM's rounds may measure a one-way marginal again
        sds = [m.stddev for m in table.marginals.flatten() if m.clique == (name,)]
        assert any(abs(sd / expected - 1) < 1e-6 for sd in sds), (name, sds, expected)


def test_mst_rows_are_drawn_from_the_model_not_sorted_within_groups():
    """y and z are independent noisy copies of x (each equal to it with probability 0.9), so
    given x they agree with probability 0.9^2 + 0.1^2 = 0.82. MST's tree links x-y and x-z;
    rows drawn from it agree at that rate. mbi 1.1.0's "round" sampler gives both children
    of x their values in the rows' order within each value of x, so they agreed in almost
    every row (the bug this test caught). At epsilon 50 a count's noise sd is about 1 of
    4,000 rows, and the agreement's sampling sd is sqrt(0.82 * 0.18 / 4000) = 0.006: the
    bound 0.05 is over 8 sd."""
    rng = np.random.default_rng(5)
    n = 4000
    x = rng.integers(0, 2, n)
    y = np.where(rng.random(n) < 0.9, x, 1 - x)
    z = np.where(rng.random(n) < 0.9, x, 1 - x)
    spec = DomainSpec([ColumnSpec(c, "categorical", (0, 1)) for c in ("x", "y", "z")])
    df = TableEncoder(spec).decode(np.stack([x, y, z], 1))
    run = run_capped("mst", df, spec, 50.0, 1e-6, 0, cap=300)
    assert run.status == "finished"
    codes = TableEncoder(spec).encode(run.synth)
    assert abs((codes[:, 1] == codes[:, 2]).mean() - 0.82) < 0.05


def test_the_baselines_model_is_mbis_model_cell_for_cell():
    """vertimrf's MRF built from MST's fitted mbi model (:func:`model_of`) has mbi's marginal
    on every clique mbi computed, to 1e-9 relative: the rows our sampler draws come from the
    model MST fitted, over its cells (three keys and null per column here)."""
    from vertimrf.privacy.zcdp import epsilon_to_rho
    from vertimrf.report.opendp_mechanisms import model_of, mst_table

    df, spec = _table()
    codes = TableEncoder(spec).encode(df)
    table = mst_table(codes, ["a", "b", "c"], [3, 3, 2], epsilon_to_rho(5.0, 1e-6))
    model = model_of(table)
    assert model.domain.sizes == (4, 4, 3)
    index = {"a": 0, "b": 1, "c": 2}
    cliques = table.model.marginals.cliques
    assert cliques
    for clique in cliques:
        factor = table.model.marginals[clique]
        attrs = tuple(index[a] for a in factor.domain.attrs)
        np.testing.assert_allclose(model.marginal(attrs), np.asarray(factor.values), rtol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aims_marginals_outside_the_model_are_mbis_variable_elimination(seed):
    """With mbi's projection replaced as AIM's runs replace it, a marginal no clique holds is
    the one mbi's own variable elimination computes, to 1e-9 relative, with the axes in the
    order asked for; one a clique holds is mbi's own (the same object's values). Random
    log-potentials on a random chain-with-a-triangle model of 6 to 8 columns of 2 to 5 cells."""
    import jax.numpy as jnp
    from mbi import CliqueVector, Domain, Factor, MarkovRandomField, marginal_oracles

    from vertimrf.report import opendp_mechanisms

    rng = np.random.default_rng(seed)
    d = int(rng.integers(6, 9))
    names = [f"x{j}" for j in range(d)]
    domain = Domain(names, [int(s) for s in rng.integers(2, 6, d)])
    cliques = [tuple(names[j : j + 2]) for j in range(0, d - 3)] + [tuple(names[d - 3 :])]

    def factor(clique: tuple[str, ...]) -> Factor:
        shape = domain.project(clique).shape
        return Factor(domain.project(clique), jnp.asarray(rng.normal(0, 2, shape)))

    potentials = CliqueVector(domain, cliques, {c: factor(c) for c in cliques})
    marginals = CliqueVector(domain, cliques, {c: factor(c) for c in cliques})
    model = MarkovRandomField(potentials=potentials, marginals=marginals, total=1234.5)
    opendp_mechanisms._marginals_outside_the_model_by_junction_tree()
    opendp_mechanisms._marginals_outside_the_model_by_junction_tree()  # a second call: no-op
    for _ in range(6):
        k = int(rng.integers(2, 4))
        query = tuple(str(a) for a in rng.choice(names, k, replace=False))
        if marginals.supports(query):
            continue
        expected = marginal_oracles.variable_elimination(potentials, query, 1234.5)
        got = model.project(query)
        assert got.domain.attributes == query
        np.testing.assert_allclose(np.asarray(got.values), np.asarray(expected.values), rtol=1e-9)
    held = model.project(cliques[0])
    np.testing.assert_array_equal(np.asarray(held.values), np.asarray(marginals[cliques[0]].values))


def test_aims_model_sizes_are_mbis_asked_once_each(monkeypatch):
    """With mbi's model-size answers remembered as AIM's runs remember them, every answer is
    mbi's own, and mbi is asked once per question (domain and cliques), however often it is
    asked; another question is asked anew."""
    from mbi import Domain, junction_tree

    from vertimrf.report import opendp_mechanisms

    asked = []
    original = junction_tree.hypothetical_model_size

    def counted(domain, cliques):
        asked.append(tuple(cliques))
        return original(domain, cliques)

    monkeypatch.setattr(junction_tree, "hypothetical_model_size", counted)
    opendp_mechanisms._model_sizes_remembered()
    domain = Domain(["a", "b", "c", "d"], [3, 40, 5, 7])
    questions = [[("a", "b"), ("b", "c")], [("a", "b"), ("c", "d")], [("a", "b", "c"), ("d",)]]
    for cliques in questions * 3:
        got = junction_tree.hypothetical_model_size(domain, cliques=cliques)
        assert got == original(domain, cliques)
    assert asked == [tuple(c) for c in questions]


def test_aims_score_transformation_is_built_once_for_the_same_arguments(monkeypatch):
    """With AIM's score transformation built once, as AIM's runs build it, a call with the
    same objects returns what the first call built, without building again; a call with any
    other object (a new round's candidates or model) builds anew."""
    from opendp.extras.mbi import _aim

    from vertimrf.report import opendp_mechanisms

    built = []

    def counted(*args):
        built.append(args)
        return object()

    monkeypatch.setattr(_aim, "_make_aim_scores", counted)
    opendp_mechanisms._aim_scores_built_once()
    domain, metric, candidates, expectations, model = (object() for _ in range(5))
    args = (domain, metric, candidates, expectations, model)
    first = _aim._make_aim_scores(*args)
    assert all(_aim._make_aim_scores(*args) is first for _ in range(40))
    assert len(built) == 1
    other_model = object()
    second = _aim._make_aim_scores(domain, metric, candidates, expectations, other_model)
    assert second is not first and len(built) == 2
    assert _aim._make_aim_scores(domain, metric, [], expectations, other_model) is not second
    assert len(built) == 3


def test_baseline_rows_map_cells_to_keys_and_draw_nulls_uniformly():
    """A model over keys (0, 1, null) per column whose mass is all (up to e^-40) on b = 1 and
    a = null, given over (b, a) in that axis order: every row has b = 1, and a's null is
    replaced by 0 or 1 uniformly. 4,000 rows: the share of a = 1 has sd 0.008; 0.05 is 6 sd."""
    from types import SimpleNamespace

    import jax.numpy as jnp
    import polars as pl
    from mbi import CliqueVector, Domain, Factor

    from vertimrf.report.opendp_mechanisms import rows

    log = np.full((3, 3), -40.0)
    log[1, 2] = 0.0  # b = key 1, a = null
    factor = Factor(Domain(["b", "a"], [3, 3]), jnp.asarray(log))
    potentials = CliqueVector(Domain(["a", "b"], [3, 3]), [("b", "a")], {("b", "a"): factor})
    keys = {c: pl.Series(c, [0, 1, None]) for c in ("a", "b")}
    table = SimpleNamespace(keys=keys, model=SimpleNamespace(potentials=potentials, total=4000.0))
    drawn = rows(table, [2, 2], 4000, np.random.default_rng(0))
    assert drawn.shape == (4000, 2) and (drawn[:, 1] == 1).all()
    assert set(np.unique(drawn[:, 0])) == {0, 1} and abs(drawn[:, 0].mean() - 0.5) < 0.05


def test_mst_spends_its_budget_over_sixteen_columns():
    """OpenDP 0.16's MST splits its selection budget b into 15 rounds of the float just below
    b / 15 for 16 columns, and those can sum past b: on this table it refused its own last
    round at every epsilon from 0.2 to 6.4 (checked by hand, opendp/opendp#2789). With the
    slack the report leaves in each split, the run finishes and the table has every column."""
    rng = np.random.default_rng(7)
    spec = DomainSpec([ColumnSpec(f"b{j}", "categorical", (0, 1)) for j in range(16)])
    df = TableEncoder(spec).decode(rng.integers(0, 2, (200, 16)))
    run = run_capped("mst", df, spec, 1.6, 1e-6, 0, cap=300)
    assert run.status == "finished", run.status
    assert run.synth.shape == (200, 16)


def test_a_run_past_its_cap_is_killed_and_reported():
    df, spec = _table()
    start = time.perf_counter()
    run = run_capped("mst", df, spec, 1.0, 1e-6, 0, cap=0.5)
    assert run.status == "timed out" and run.synth is None
    assert 0.5 <= run.seconds < 10 and time.perf_counter() - start < 10


def test_a_failed_run_is_reported_not_raised():
    df, spec = _table()
    run = run_capped("nope", df, spec, 1.0, 1e-6, 0, cap=300)
    assert run.synth is None and run.status.startswith("failed: ValueError: method must be")


def test_tvd_figure_draws_mst_and_states_the_cap():
    df, spec = _table(300)
    ctx = ReportContext("t", df, spec, seeds=1, progress=False)
    params = dict(FIGURES["tvd"].params["tiny"]) | {"baselines": ["mst"], "cap": 300}
    data = FIGURES["tvd"].compute(ctx, params)
    labels = [s["label"] for s in data.panels[0].series]
    assert "MST (OpenDP)" in labels
    assert "killed after 300 s" in data.notes[0] and "finished" in data.notes[1]
