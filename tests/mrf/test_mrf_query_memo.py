"""The memo that exact queries on one calibration share: forgotten when the beliefs change,
bounded in cells, least recently used dropped first."""

import numpy as np

from tests.mrf.random_models import assert_log_close, joint_of, random_model
from tests.naive import brute_force_log_marginal
from vertimrf.mrf.memo import QueryMemo

PAIRS = [(0, 2), (2, 0), (0, 1, 2), (1, 2)]


def _check_queries(model) -> None:
    joint = joint_of(model)
    d = len(model.domain)
    for attrs in PAIRS + [(0, d - 1), (d - 1, 1, 0)]:
        attrs = [a for a in attrs if a < d]
        assert_log_close(model.log_marginal(attrs), brute_force_log_marginal(joint, attrs))


def test_queries_follow_every_change_of_the_beliefs() -> None:
    """Replaced, edited in place, or overwritten by a trial calibration: the next queries are
    the new model's exactly (a stale memo would answer with the old conditionals)."""
    for seed in (3, 11, 27):
        model = random_model(seed)
        _check_queries(model)
        rng = np.random.default_rng(seed)
        model.potentials = rng.uniform(-30, 30, model.layout.total_cells)
        _check_queries(model)
        clique = model.cliques[0]
        model.potentials[clique] = rng.uniform(-30, 30, model.potentials.table(clique).shape)
        _check_queries(model)
        model.calibrate_buffer(rng.uniform(-30, 30, model.layout.total_cells))
        _check_queries(model)


def test_a_repeated_query_computes_no_table_again() -> None:
    model = random_model(5)
    d = len(model.domain)
    made: list[object] = []
    memo = model.query_memo()
    table = memo.table

    def counting(key, make):
        return table(key, lambda: made.append(key) or make())

    memo.table = counting  # type: ignore[method-assign]
    first = [model.log_marginal([0, d - 1]), model.log_marginal([d - 1, 1, 0])]
    n = len(made)
    second = [model.log_marginal([0, d - 1]), model.log_marginal([d - 1, 1, 0])]
    assert len(made) == n
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_memo_keeps_within_its_cells_dropping_the_least_recently_used() -> None:
    memo = QueryMemo(10)
    table = np.zeros(4)
    for key in "abc":
        memo.table(key, lambda: ((0,), table))
    assert list(memo._tables) == ["b", "c"] and memo._cells == 8
    memo.table("b", lambda: ((0,), np.ones(4)))  # a hit: b is used again, kept as it was
    assert memo.table("b", lambda: ((0,), np.ones(4)))[1] is table
    memo.table("d", lambda: ((0,), table))
    assert list(memo._tables) == ["b", "d"]
    big = np.zeros(11)
    assert memo.table("e", lambda: ((0,), big))[1] is big  # too big to keep, still answered
    assert "e" not in memo._tables and memo._cells == 8
    memo.clear()
    assert not memo._tables and memo._cells == 0


def test_model_memo_stays_within_its_budget() -> None:
    model = random_model(8)
    d = len(model.domain)
    for a in range(d):
        for b in range(d):
            if a != b:
                model.log_marginal([a, b])
    memo = model.query_memo()
    assert 0 < memo._cells <= memo.max_cells == 2 * model.layout.total_cells
