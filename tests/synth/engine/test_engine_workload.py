"""Workloads: the candidates of the downward closure and their weights, by brute force."""

from __future__ import annotations

from itertools import chain, combinations

import numpy as np
import pytest

from vertimrf.domain import Domain
from vertimrf.errors import ConfigError
from vertimrf.workload import WEIGHT_GRID, Workload, integer_weights

DOMAIN = Domain(("a", "b", "c", "d", "e"), (2, 3, 2, 4, 2))


def _subsets(m):
    return chain.from_iterable(combinations(m, k) for k in range(1, len(m) + 1))


def test_candidates_are_the_downward_closure_weighted_by_overlap():
    w = Workload.of(DOMAIN, [(("a", "b", "c"), 1.0), (("b", "d"), 2.5), ["e"]])
    assert w.marginals == ((0, 1, 2), (1, 3), (4,)) and w.weights == (1.0, 2.5, 1.0)
    got = w.candidates()
    want = {r for m in w.marginals for r in _subsets(m)}
    assert set(got) == want
    for r, weight in got.items():
        brute = 0.0
        for s, c in zip(w.marginals, w.weights, strict=True):
            brute += c * sum(1 for a in r if a in s)
        assert weight == pytest.approx(brute, abs=0)
    assert got[(1,)] == 3.5 and got[(1, 3)] == 6.0 and got[(0, 1, 2)] == 5.5
    assert [len(r) for r in got] == sorted(len(r) for r in got)


def test_the_default_is_every_three_way_marginal_or_the_whole_table():
    assert Workload.all_way(5).marginals == tuple(combinations(range(5), 3))
    assert Workload.all_way(2).marginals == ((0, 1),)
    c = Workload.all_way(4).candidates()
    # {0}: in 3 of the 4 triples; {0, 1}: both in 2, one of them in the other 2
    assert c[(0,)] == 3 and c[(0, 1)] == 2 * 2 + 2 * 1 and c[(0, 1, 2)] == 3 + 3 * 2


def test_columns_may_be_given_as_indices_and_in_any_order():
    assert Workload.of(DOMAIN, [(3, "b")]).marginals == ((1, 3),)


@pytest.mark.parametrize(
    "entries, message",
    [
        ([["a", "zz"]], "does not have"),
        ([["a", "a"]], "distinct"),
        ([(("a",), 0.0)], "positive and finite"),
        ([(("a",), float("nan"))], "positive and finite"),
        ([["a", "b"], ["b", "a"]], "twice"),
        ([], "empty"),
        ([[9]], "an index in 0..4"),
        (["ab"], "a list of columns"),
    ],
)
def test_bad_workloads_are_one_line_errors(entries, message):
    with pytest.raises(ConfigError, match=message) as err:
        Workload.of(DOMAIN, entries)
    assert "\n" not in str(err.value)


def test_integer_weights_keep_whole_numbers_and_ratios():
    assert integer_weights([3.0, 105.0, 7.0]) == [3, 105, 7]
    got = integer_weights([0.5, 2.0, 1e-9])
    assert got == [WEIGHT_GRID // 4, WEIGHT_GRID, 1]


# ----------------------------------------------------------------- the engine's pair weights


def test_pair_weights_sum_the_marginals_holding_both_by_brute_force():
    w = Workload.of(DOMAIN, [(("a", "b", "c"), 1.0), (("b", "d"), 2.5), ["e"], (("b", "c"), 0.5)])
    got = w.pair_weights(5)
    brute = np.zeros((5, 5))
    for i, j in combinations(range(5), 2):
        for s, c in zip(w.marginals, w.weights, strict=True):
            if i in s and j in s:
                brute[i, j] += c
                brute[j, i] += c
    np.testing.assert_array_equal(got, brute / brute.max())
    assert got[1, 3] == 1.0 and got[0, 1] == 0.4 and got[1, 2] == 0.6 and got[3, 4] == 0.0
    assert w.first_release(5) == [(0, 1), (0, 2), (1, 2), (1, 3), (4,)]


@pytest.mark.parametrize("d", [2, 3, 4, 6])
def test_the_default_workload_weighs_every_pair_one_and_releases_every_pair(d):
    w = Workload.all_way(d)
    np.testing.assert_array_equal(w.pair_weights(d), np.ones((d, d)) - np.eye(d))
    assert w.first_release(d) == list(combinations(range(d), 2))


def test_a_workload_of_single_columns_weighs_no_pair_and_releases_every_1_way():
    w = Workload.of(DOMAIN, [["a"], ["c"]])
    assert not w.pair_weights(5).any()
    assert w.first_release(5) == [(a,) for a in range(5)]


# ------------------------------------------------------------------- the engine with a workload


def _engine(epsilon, workload, *, zero=False, ledger=None, seed=0):
    from vertimrf import PrivMRF
    from vertimrf.privacy.ledger import PrivacyLedger
    from vertimrf.privacy.samplers import NoiseSampler, randomness
    from vertimrf.synth.privmrf import EngineOptions

    class Zero(NoiseSampler):
        def __init__(self) -> None:
            self.inner, _ = randomness(seed)

        def _words(self, n):
            return self.inner._words(n)

        def _discrete_laplace(self, scale, n):
            raise AssertionError("no Laplace noise")

        def _discrete_gaussian(self, sigma, n):
            return np.zeros(n, np.int64)

    ledger = PrivacyLedger(epsilon, 1e-6) if ledger is None else ledger
    return PrivMRF(
        epsilon,
        1e-6,
        seed=seed,
        ledger=ledger,
        noise=Zero() if zero else None,
        selection="engine",
        engine=EngineOptions(workload=workload),
    )


def test_the_engine_releases_the_workloads_pairs_and_lone_1_ways_exactly():
    """Noise off: the first release is the workload's pairs and the other columns' 1-way
    marginals, each the exact count (brute force); the budget is spent exactly."""
    from tests.synth.engine.latent_table import assert_exact, latent_table
    from vertimrf.privacy.zcdp import epsilon_to_rho

    df, spec = latent_table(rows=400)
    fit = _engine(2.0, [("c0", "c1", "c2")], zero=True).fit(df, spec)
    first = fit.ledger.releases[1]
    assert first.count == 5 and "workload" in first.description
    attrs = [m.attrs for m in fit.measurements]
    # the first release's tables close the list: (0, 1), (0, 2), (1, 2), then (3,) and (4,)
    assert attrs[-5:] == [(0, 1), (0, 2), (1, 2), (3,), (4,)]
    assert_exact(df, fit.measurements)
    rho = epsilon_to_rho(2.0, 1e-6)
    assert fit.ledger.total_rho == pytest.approx(rho, rel=1e-9) and fit.ledger.total_rho <= rho


def test_the_default_workload_given_is_the_default_fit():
    import pandas as pd

    from tests.synth.engine.latent_table import latent_table

    df, spec = latent_table()
    every = [list(m) for m in combinations(spec.names, 3)]
    a = _engine(1.0, None, seed=3).fit(df, spec).sample(seed=1)
    b = _engine(1.0, every, seed=3).fit(df, spec).sample(seed=1)
    pd.testing.assert_frame_equal(a, b)


def test_a_bad_workload_is_refused_before_anything_is_charged():
    from tests.synth.engine.latent_table import latent_table
    from vertimrf.privacy.ledger import PrivacyLedger

    df, spec = latent_table(rows=100)
    ledger = PrivacyLedger(1.0, 1e-6)
    with pytest.raises(ConfigError, match="'zz'"):
        _engine(1.0, [("c0", "zz")], ledger=ledger).fit(df, spec)
    assert ledger.total_rho == 0.0 and not ledger.releases


def test_the_default_workload_given_is_no_workload():
    every = [list(m) for m in combinations("abcde", 3)]
    assert Workload.given(DOMAIN, None) is None
    assert Workload.given(DOMAIN, every) is None
    assert Workload.given(DOMAIN, [(m, 2.0) for m in every]) is None
    assert Workload.given(DOMAIN, every[:-1]) is not None
    assert Workload.given(DOMAIN, [*every[:-1], (every[-1], 2.0)]) is not None


def test_a_useful_workload_marginal_in_a_clique_is_re_measured_itself():
    """Noise off, a large budget: the workload's triple lies in the model's one clique and
    is useful, so it is re-measured as it is (exact counts, brute force)."""
    from tests.synth.engine.latent_table import assert_exact, latent_table

    df, spec = latent_table(rows=400)
    fit = _engine(40.0, [("c0", "c2", "c4"), ("c1", "c3")], zero=True).fit(df, spec)
    again = [m.attrs for m in fit.measurements][: fit.ledger.releases[2].count]
    assert (0, 2, 4) in again
    assert all(len(m) == 1 or any(p in {(0, 2), (0, 4), (2, 4), (1, 3)}
               for p in combinations(m, 2)) for m in again)  # fmt: skip
    assert_exact(df, fit.measurements)
