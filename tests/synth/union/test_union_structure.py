"""The union model's structure: each party's links span its attributes (with a new pair where
no clique joins two groups), the presence is read off one attribute per party in one clique,
and a table against a peer's presence is a measurement binned by presence on a partner."""

from __future__ import annotations

import numpy as np

from tests.synth.union.union_truth import make_truth, releases
from vertimrf.domain import Domain
from vertimrf.synth.union import UnionDomain, union_tables
from vertimrf.synth.union.structure import presence_bins, union_structure


def _components(pairs: list[tuple[int, int]], nodes: tuple[int, ...]) -> int:
    """The connected components of ``nodes`` under ``pairs`` (brute force)."""
    seen: set[int] = set()
    count = 0
    for start in nodes:
        if start in seen:
            continue
        count += 1
        stack = [start]
        while stack:
            a = stack.pop()
            if a not in seen:
                seen.add(a)
                stack += [b for x, y in pairs for b in (x, y) if a in (x, y) and b != a]
    return count


def test_links_span_each_partys_attributes_with_a_new_pair_where_no_clique_joins_them():
    truth = make_truth(np.random.default_rng(1), 300, (2, 3, 4, 3, 2), (0, 0, 0, 1, 1))
    space = UnionDomain(truth.domain, truth.owner)
    tables = union_tables(releases(truth))
    # Party 0's attributes 0 and 1 share a clique; 2 shares none with them.
    structure = union_structure(space, tables, [(0, 1, 3), (2, 4), (3, 4)])
    links = [k for k in structure.zeros if len(k) == 2 and k != structure.representatives]
    for p in range(2):
        mine = space.attributes(p)
        own_links = [k for k in links if set(k) <= set(mine)]
        assert len(own_links) == len(mine) - 1 and _components(own_links, mine) == 1
    assert (0, 2) in links  # the new pair, now a clique of the model
    assert {0, 2} in [set(c) for c in structure.cliques]
    a, b = 0, 2
    zeros = structure.zeros[(a, b)]
    assert np.isneginf(zeros[2, :4]).all() and np.isneginf(zeros[:2, 4]).all()
    assert (zeros[:2, :4] == 0).all() and zeros[2, 4] == 0


def test_presence_is_read_off_one_attribute_per_party_in_one_clique():
    truth = make_truth(np.random.default_rng(2), 300, (4, 3, 2, 4), (0, 0, 1, 1))
    space = UnionDomain(truth.domain, truth.owner)
    tables = union_tables(releases(truth))
    # The clique (0, 1, 3) holds both parties; its smallest attribute of each is 1 and 3.
    structure = union_structure(space, tables, [(0, 1, 3), (2, 3)])
    assert structure.representatives == (1, 3)
    nobody = structure.zeros[(1, 3)]
    assert np.isneginf(nobody[3, 4]) and np.isfinite(np.delete(nobody.ravel(), 3 * 5 + 4)).all()
    # No clique holds both parties: each party's smallest attribute makes a new one.
    apart = union_structure(space, tables, [(0, 1), (2, 3)])
    assert apart.representatives == (1, 2) and (1, 2) in apart.cliques


def test_a_table_against_a_peers_presence_is_binned_by_presence_on_a_partner():
    truth = make_truth(np.random.default_rng(3), 300, (2, 3, 4), (0, 1, 1))
    space = UnionDomain(truth.domain, truth.owner)
    tables = union_tables(releases(truth))
    structure = union_structure(space, tables, None)
    d = len(space.data)
    for table, m in zip(structure.tables, structure.measurements, strict=True):
        assert m.weight == 1.0 / table.sigma
        np.testing.assert_array_equal(m.values, table.values)
        if max(table.attrs) < d:
            assert m.attrs == table.attrs and m.bins is None
            continue
        for a, on, bins in zip(table.attrs, m.attrs, m.bins, strict=True):
            if a < d:
                assert on == a and bins is None
            else:
                assert space.owner[on] == a - d
                np.testing.assert_array_equal(bins, presence_bins(space, on))
    # Attribute 0 against party 1's presence is read off party 1's smallest attribute.
    (m,) = [
        m
        for t, m in zip(structure.tables, structure.measurements, strict=True)
        if t.attrs == (0, d + 1)
    ]
    assert m.attrs == (0, 1)
    np.testing.assert_array_equal(presence_bins(space, 1), [1, 1, 1, 0])
    assert UnionDomain(Domain.from_sizes((2, 3)), (0, 1)).model_domain.sizes == (3, 4)


def test_links_between_parts_of_the_model_join_cliques_that_meet():
    """A party's attribute alone in a clique of the peer's attributes is linked to one of its
    own attributes in a clique that meets that one (the fill stays local), not to its first
    attribute far away: the links add no pair outside two meeting cliques' union."""
    from vertimrf.domain import Domain
    from vertimrf.synth.union.measurements import UnionDomain
    from vertimrf.synth.union.structure import _links

    domain = Domain(tuple(f"x{i}" for i in range(6)), (3,) * 6)
    space = UnionDomain(domain, (0, 0, 0, 1, 1, 1))
    groups = [{0, 1}, {1, 3}, {3, 4, 2}, {4, 5}]  # 2 (party 0) sits with 3 and 4 only
    links = _links(space, groups)
    assert (0, 1) in links
    stray = [pair for pair in links if 2 in pair]
    assert stray == [(1, 2)]  # 1 shares {1, 3} with 3, which meets {3, 4, 2}


def test_union_cells_is_the_fitted_models_size_for_any_cliques():
    """The size the server checks before it selects (links, the representatives' group and
    the fill-in included) is the size of the model the fit then builds."""
    from vertimrf.synth.union import fit_union, union_cells

    truth = make_truth(np.random.default_rng(3), 500, (2, 3, 4, 3, 2, 4), (0, 0, 1, 1, 2, 2))
    rel = releases(truth)
    space = UnionDomain(rel.domain, rel.owner)
    for cliques in ([[0, 2], [2, 4], [1, 3, 5]], [[0, 1, 2, 3, 4, 5]], [[a] for a in range(6)]):
        model = fit_union(rel, cliques=cliques, iters=1)
        assert union_cells(space, cliques) == model.model.tree.size.total_cells
