"""Contingency tables and their clique projections against direct counting."""

import itertools

import numpy as np
import pytest

from vertimrf.errors import ConfigError
from vertimrf.mrf.cliques import histogram
from vertimrf.synth.privmrf.histograms import CliqueTables


def test_histogram_counts_rows() -> None:
    codes = np.array([[0, 1, 2], [0, 1, 2], [1, 0, 0]])
    h = histogram(codes, (0, 2), [2, 2, 3])
    expected = np.zeros((2, 3))
    expected[0, 2], expected[1, 0] = 2, 1
    assert np.array_equal(h, expected)


def test_clique_projections_equal_direct_histograms() -> None:
    rng = np.random.default_rng(0)
    sizes = [2, 3, 4, 2, 3]
    codes = np.column_stack([rng.integers(0, s, 300) for s in sizes])
    cliques = [(0, 1, 2), (1, 2, 3, 4)]
    tables = CliqueTables({c: histogram(codes, c, sizes) for c in cliques})
    for clique in cliques:
        for k in range(1, len(clique) + 1):
            for sub in itertools.combinations(clique, k):
                assert np.array_equal(tables.project(sub), histogram(codes, sub, sizes))
    with pytest.raises(ConfigError):
        tables.project((0, 4))


def test_batched_projections_equal_single_ones() -> None:
    rng = np.random.default_rng(1)
    sizes = [2, 3, 4, 2, 3, 5]
    codes = np.column_stack([rng.integers(0, s, 500) for s in sizes])
    cliques = [(0, 1, 2, 5), (1, 2, 3, 4)]
    tables = CliqueTables({c: histogram(codes, c, sizes) for c in cliques})
    queries = [(0, 5), (3,), (1, 2, 3, 4), (2,), (0, 1, 2, 5), (1, 4), (0, 5)]
    for q, got in zip(queries, tables.project_many(queries), strict=True):
        assert np.array_equal(got, histogram(codes, q, sizes))
    assert tables.project_many([]) == []
