"""Workloads: the candidates of the downward closure and their weights, by brute force."""

from __future__ import annotations

from itertools import chain, combinations

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
