"""EncodedTable, the one table type inside: PrivMRF, Party, LocEnc and the metrics accept it
and give exactly what the DataFrame path gives."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import SECRET, make_config, small_adult
from vertimrf import PrivMRF, metrics
from vertimrf.domain import Domain, EncodedTable
from vertimrf.encoding import TableEncoder
from vertimrf.errors import DomainError
from vertimrf.party import LocalParty as Party


def test_an_encoded_table_checks_its_codes():
    dom = Domain(("a", "b"), (3, 2))
    table = EncodedTable(np.array([[0, 1], [2, 0]], dtype=np.uint8), dom)
    assert len(table) == 2 and table.select(["b"]).domain == Domain(("b",), (2,))
    np.testing.assert_array_equal(table.select(["b", "a"]).codes, [[1, 0], [0, 2]])
    too_large = np.array([[3, 0]], dtype=np.uint8)  # unsigned: only the upper end is checked
    for bad in (np.array([[0, 2]]), np.array([[-1, 0]]), too_large, np.array([[0.0, 1.0]])):
        with pytest.raises(DomainError):
            EncodedTable(bad, dom)
    with pytest.raises(DomainError):
        EncodedTable(np.zeros((2, 3)), dom)


def test_privmrf_and_metrics_take_an_encoded_table():
    df, spec = small_adult(1500, 6)
    table = TableEncoder(spec).table(df)
    a = PrivMRF(1.0, 1e-5, seed=4, progress=False).fit(df, spec)
    b = PrivMRF(1.0, 1e-5, seed=4, progress=False).fit(table)
    codes_a = TableEncoder(spec).encode(a.sample())
    codes_b = b.sample().to_numpy()
    np.testing.assert_array_equal(codes_a, codes_b)
    synth = EncodedTable(codes_b, spec.domain)
    decoded = TableEncoder(spec).decode(codes_b)
    assert metrics.tvd(table, synth) == metrics.tvd(df, decoded, spec)


def test_a_party_takes_an_encoded_table_with_ids():
    df, spec = small_adult(1000, 8)
    parties = [["0", "2", "4", "6"], ["1", "3", "5", "7"]]
    cfg = make_config(spec, parties, method="fo")
    cols = parties[0]
    frame = df[cols].assign(rid=np.arange(len(df)))
    table = TableEncoder(spec.subset(cols)).table(df[cols])
    one = Party("party0", frame, cfg, SECRET, id_column="rid", seed=2, progress=False)
    two = Party("party0", table, cfg, SECRET, ids=np.arange(len(df)), seed=2, progress=False)
    m1, m2 = one.release(), two.release()
    np.testing.assert_array_equal(m1.grr, m2.grr)
    assert m1.noisy_count == m2.noisy_count and m1.releases == m2.releases
    with pytest.raises(DomainError, match="ids"):
        Party("party0", table, cfg, SECRET, progress=False)
    with pytest.raises(DomainError, match="domain"):
        Party("party1", table, cfg, SECRET, ids=np.arange(len(df)), progress=False)
