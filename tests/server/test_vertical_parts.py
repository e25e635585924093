"""Binning, HisRec/UniSam, consistency enforcement and the message container."""

import zipfile

import numpy as np
import pytest

from vertimrf.container import read_container, write_container
from vertimrf.errors import MessageError
from vertimrf.protocol.bins import BinMap, frequency_bins
from vertimrf.server.consistency import enforce_consistency
from vertimrf.server.recovery import hisrec, unisam


@pytest.mark.parametrize("u", [1, 2, 5, 16, 41])
@pytest.mark.parametrize("b", [1, 3, 4])
def test_frequency_bins_are_contiguous_and_complete(u, b):
    rng = np.random.default_rng(u * 10 + b)
    counts = rng.laplace(50, 60, u)
    bins = frequency_bins(counts, b)
    assert bins.shape == (u,)
    assert bins[0] == 0 and np.all(np.diff(bins) >= 0) and np.all(np.diff(bins) <= 1)
    assert bins.max() + 1 == min(b, u)


def test_frequency_bins_balance_mass():
    counts = np.full(40, 10.0)
    assert np.array_equal(np.bincount(frequency_bins(counts, 4)), [10, 10, 10, 10])


def test_hisrec_recovers_a_product_table_exactly():
    """If values are independent within bins, HisRec of the exact binned table is exact."""
    rng = np.random.default_rng(1)
    ca, cb = rng.integers(1, 50, 7).astype(float), rng.integers(1, 50, 5).astype(float)
    ma = BinMap(frequency_bins(ca, 3), ca)
    mb = BinMap(frequency_bins(cb, 2), cb)
    full = np.outer(ca, cb)
    binned = np.zeros((3, 2))
    np.add.at(binned, (ma.value_to_bin[:, None], mb.value_to_bin[None, :]), full)
    np.testing.assert_allclose(hisrec(binned, [ma, mb]), full, rtol=1e-12)
    np.testing.assert_allclose(hisrec(binned, [ma, None]).sum(axis=0), binned.sum(axis=0))


def test_hisrec_gives_zero_to_values_with_no_noisy_mass_and_unisam_spreads_evenly():
    m = BinMap(np.array([0, 0, 1, 1]), np.array([5.0, -3.0, 2.0, 2.0]))
    rec = hisrec(np.array([10.0, 4.0]), [m])
    np.testing.assert_allclose(rec, [10.0, 0.0, 2.0, 2.0])
    np.testing.assert_allclose(unisam(np.array([10.0, 4.0]), [m]), [5.0, 5.0, 2.0, 2.0])


def test_consistency_makes_shared_projections_agree():
    rng = np.random.default_rng(0)
    tables = [rng.random((3, 4)) * 100, rng.random(3) * 50, rng.random((4, 2)) * 10]
    attrs = [("x", "y"), ("x",), ("y", "z")]
    out = enforce_consistency(attrs, tables, 1000.0, tol=1e-10, max_iter=1000)
    for t in out:
        assert t.sum() == pytest.approx(1000.0) and (t >= 0).all()
    np.testing.assert_allclose(out[0].sum(axis=1), out[1], rtol=1e-6)
    np.testing.assert_allclose(out[0].sum(axis=0), out[2].sum(axis=1), rtol=1e-6)


def test_consistent_tables_are_left_unchanged():
    joint = np.random.default_rng(2).random((3, 4))
    joint *= 500 / joint.sum()
    out = enforce_consistency([("a", "b"), ("a",)], [joint, joint.sum(axis=1)], 500.0)
    np.testing.assert_allclose(out[0], joint, rtol=1e-12)


def _write(tmp_path):
    path = tmp_path / "m.vmrf"
    arrays = {"values": np.arange(12, dtype=np.uint8).reshape(3, 4), "x": np.linspace(0, 1, 5)}
    write_container(path, "party-message", {"party": "A", "n": 3}, arrays)
    return path, arrays


def test_container_round_trip(tmp_path):
    path, arrays = _write(tmp_path)
    meta, back = read_container(path, "party-message", array_bytes=lambda name: 1 << 20)
    assert meta == {"party": "A", "n": 3}
    for k, v in arrays.items():
        np.testing.assert_array_equal(back[k], v)
        assert back[k].dtype == v.dtype
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.vmrf"]


def test_container_rejects_truncation_tampering_and_wrong_kind(tmp_path):
    path, _ = _write(tmp_path)
    data = path.read_bytes()
    (tmp_path / "trunc.vmrf").write_bytes(data[: len(data) // 2])
    with pytest.raises(MessageError, match="truncated|unreadable"):
        read_container(tmp_path / "trunc.vmrf", "party-message", array_bytes=lambda name: 1 << 20)
    tampered = tmp_path / "tampered.vmrf"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tampered, "w") as dst:
        for item in src.namelist():
            blob = src.read(item)
            if item == "values.npy":
                blob = blob[:-1] + bytes([blob[-1] ^ 1])
            dst.writestr(item, blob)
    with pytest.raises(MessageError, match="checksum"):
        read_container(tampered, "party-message", array_bytes=lambda name: 1 << 20)
    with pytest.raises(MessageError, match="expected"):
        read_container(path, "server-result", array_bytes=lambda name: 1 << 20)


def test_container_refuses_object_arrays_and_leaves_no_file(tmp_path):
    with pytest.raises(MessageError, match="object"):
        write_container(tmp_path / "x.vmrf", "k", {}, {"bad": np.array([object()])})
    assert list(tmp_path.iterdir()) == []
