"""Fitted models: ``fit_vertical -> VerticalModel``, a fitted ``PrivMRF`` and a
``MarkovRandomField`` sample at no privacy cost, give their marginals, and save to and load
from the checksummed container (a tampered file or one of another version is refused)."""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import vertimrf
from tests.synth.mixed_table import PARTIES, mixed_table
from vertimrf import PrivMRF, fit_vertical, simulate
from vertimrf.domain import Domain, DomainSpec
from vertimrf.errors import ConfigError, MessageError
from vertimrf.mrf import MarkovRandomField


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, DomainSpec]:
    return mixed_table()


@pytest.fixture(scope="module")
def model(data) -> vertimrf.VerticalModel:
    df, spec = data
    return fit_vertical(df, spec, PARTIES, epsilon=1.0, delta=1e-6, max_rows=1024, seed=3)


@pytest.fixture(scope="module")
def privmrf(data) -> PrivMRF:
    df, spec = data
    return PrivMRF(1.0, 1e-6, seed=2, progress=False).fit(df, spec)


def _in_domain(frame: pd.DataFrame, spec: DomainSpec) -> bool:
    """Every value is one the spec can produce (categories, numbers inside the bounds)."""
    for col in spec.columns:
        if col.kind == "categorical":
            ok = frame[col.name].isin(col.categories)
        else:
            ok = frame[col.name].between(col.lower, col.upper)
        if not ok.all():
            return False
    return True


def test_vertical_model_samples_any_rows_without_touching_the_report(model, data):
    spec = data[1]
    before = copy.deepcopy(model.report.to_dict())
    releases = model.report.ledger.releases
    big, small = model.sample(10_000), model.sample(100)
    assert (len(big), len(small)) == (10_000, 100)
    assert list(big.columns) == list(spec.names)
    assert _in_domain(big, spec) and _in_domain(small, spec)
    assert model.sample(0).shape == (0, len(spec))
    # Sampling is post-processing: no release is charged and the report is the same.
    assert model.report.to_dict() == before
    assert model.report.ledger.releases == releases
    assert model.sample().shape[0] == model.report.n_hat
    with pytest.raises(ConfigError, match="non-negative integer"):
        model.sample(-1)


def test_vertical_model_seed_fixes_the_draw(model):
    pd.testing.assert_frame_equal(model.sample(500, seed=9), model.sample(500, seed=9))
    assert not model.sample(500, seed=9).equals(model.sample(500, seed=10))


def test_simulate_is_fit_vertical_then_sample(data):
    """A seeded simulate gives the rows of fit_vertical(...).sample() and its report plus
    the sampling time."""
    df, spec = data
    for method in ("secure", "fo"):
        synth, report = simulate(df, spec, PARTIES, 1.0, 1e-6, method, seed=5, max_rows=1024)
        fitted = fit_vertical(df, spec, PARTIES, 1.0, 1e-6, method, seed=5, max_rows=1024)
        pd.testing.assert_frame_equal(synth, fitted.sample())
        assert set(report.seconds) == set(fitted.report.seconds) | {"sample"}
        assert report.ledger.releases == fitted.report.ledger.releases


def test_marginal_is_the_model_distribution_in_a_documented_layout(model, data):
    """The Series is indexed by the values a sample holds, C order over the columns as
    given, and equals the model's marginal (brute force: the joint over all columns)."""
    spec = data[1]
    mrf = model.model
    d = len(spec)
    joint = np.exp(mrf.log_marginal(range(d)))  # exact: inference over all columns
    got = model.marginal(["c2", "num"])
    assert isinstance(got.index, pd.MultiIndex) and list(got.index.names) == ["c2", "num"]
    mids = [1.25, 3.75, 6.25, 8.75]
    assert list(got.index) == list(itertools.product(["x", "y", "z"], mids))
    want = joint.sum(axis=(0, 3)).T.ravel()  # axes (c0, num, c2, c3) -> (c2, num)
    np.testing.assert_allclose(got.to_numpy(), want, rtol=1e-9, atol=1e-12)
    assert got.sum() == pytest.approx(1.0)
    one = model.marginal("c0")
    assert list(one.index) == ["a", "b", "c"] and one.index.name == "c0"
    np.testing.assert_allclose(one.to_numpy(), joint.sum(axis=(1, 2, 3)), rtol=1e-9)
    sample = model.sample(2000, seed=1)  # numbers inside their bins: the index's midpoints
    num = np.asarray(mids)[spec["num"].bin_of(sample["num"].to_numpy())]
    assert set(zip(sample["c2"], num, strict=True)) <= set(got.index)
    with pytest.raises(vertimrf.errors.DomainError, match="columns"):
        model.marginal(["nope"])


def test_vertical_model_round_trips_and_samples_identically(model, tmp_path):
    path = model.save(tmp_path / "model.vmrf")
    loaded = type(model).load(path)
    assert isinstance(loaded, vertimrf.VerticalModel)
    assert loaded.report.to_dict() == model.report.to_dict()
    assert loaded.report.ledger.releases == model.report.ledger.releases
    assert loaded.spec == model.spec
    pd.testing.assert_frame_equal(loaded.sample(3000, seed=4), model.sample(3000, seed=4))
    pd.testing.assert_series_equal(loaded.marginal(["c0", "c3"]), model.marginal(["c0", "c3"]))


def _rewrite(path: Path, edit) -> None:
    """Rewrite a container with ``edit(manifest)`` applied and a matching manifest checksum
    (as a newer or older vertimrf would write it)."""
    with zipfile.ZipFile(path) as zf:
        entries = {name: zf.read(name) for name in zf.namelist()}
    manifest = json.loads(entries["manifest.json"])
    edit(manifest)
    raw = json.dumps(manifest).encode()
    entries["manifest.json"] = raw
    entries["manifest.sha256"] = hashlib.sha256(raw).hexdigest().encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, blob in entries.items():
            zf.writestr(name, blob)


def _flip_potentials_byte(path: Path) -> None:
    """Flip one byte in the middle of the stored potentials (the zip entry's data)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("potentials.npy")
    raw = bytearray(path.read_bytes())
    header = 30 + len(info.filename.encode()) + len(info.extra)
    raw[info.header_offset + header + info.compress_size // 2] ^= 0x01
    path.write_bytes(bytes(raw))


def _save_each(model, privmrf, tmp_path):
    return [
        (type(model), model.save(tmp_path / "v.vmrf")),
        (PrivMRF, privmrf.save(tmp_path / "p.vmrf")),
        (MarkovRandomField, model.model.save(tmp_path / "m.vmrf")),
    ]


def test_a_tampered_file_is_refused(model, privmrf, tmp_path):
    for cls, path in _save_each(model, privmrf, tmp_path):
        cls.load(path)  # the untouched file loads
        _flip_potentials_byte(path)
        with pytest.raises(MessageError, match="checksum|CRC|unreadable|truncated"):
            cls.load(path)


def test_a_file_of_another_version_is_refused(model, privmrf, tmp_path):
    for cls, path in _save_each(model, privmrf, tmp_path):
        _rewrite(path, lambda m: m.update(version=m["version"] + 1))
        with pytest.raises(MessageError, match="version 2 is not supported"):
            cls.load(path)


def test_a_model_of_another_layout_is_refused(model, tmp_path):
    path = model.save(tmp_path / "v.vmrf")
    _rewrite(path, lambda m: m["meta"]["mrf"].update(layout=2))
    with pytest.raises(MessageError, match="layout 2 is not supported"):
        type(model).load(path)


def test_a_file_of_another_kind_is_refused(model, tmp_path):
    path = model.model.save(tmp_path / "m.vmrf")
    with pytest.raises(MessageError, match="expected a 'vertimrf-vertical-model'"):
        vertimrf.VerticalModel.load(path)


def test_privmrf_round_trips_and_samples_identically(privmrf, data, tmp_path):
    spec = data[1]
    before = privmrf.report
    loaded = PrivMRF.load(privmrf.save(tmp_path / "fit.vmrf"))
    assert loaded.report == privmrf.report == before
    assert loaded.n_hat == privmrf.n_hat
    assert loaded.options == privmrf.options
    assert [(m.attrs, m.weight) for m in loaded.measurements] == [
        (m.attrs, m.weight) for m in privmrf.measurements
    ]
    assert set(loaded.graph.graph.edges) == set(privmrf.graph.graph.edges)
    pd.testing.assert_frame_equal(loaded.sample(2000, seed=6), privmrf.sample(2000, seed=6))
    big = loaded.sample(10_000)
    assert len(big) == 10_000 and _in_domain(big, spec)
    pd.testing.assert_series_equal(loaded.marginal(["num", "c0"]), privmrf.marginal(["num", "c0"]))
    assert privmrf.report == before  # sampling and saving charge nothing


def test_privmrf_on_coded_frames_round_trips(tmp_path):
    rng = np.random.default_rng(1)
    domain = Domain.from_sizes([3, 2, 4])
    df = pd.DataFrame({str(i): rng.integers(0, s, 400) for i, s in enumerate(domain.sizes)})
    fit = PrivMRF(2.0, 1e-6, seed=1, progress=False).fit(df, domain)
    loaded = PrivMRF.load(fit.save(tmp_path / "coded.vmrf"))
    pd.testing.assert_frame_equal(loaded.sample(300, seed=2), fit.sample(300, seed=2))
    assert list(loaded.marginal("1").index) == [0, 1]


def test_privmrf_with_a_custom_encoder_cannot_be_saved(data, tmp_path):
    df, spec = data
    encoder = vertimrf.TableEncoder(spec)

    class Codes:  # a custom encoder: encode and a domain, nothing storable
        domain = encoder.domain
        encode = staticmethod(encoder.encode)
        decode = staticmethod(encoder.decode)

    fit = PrivMRF(1.0, 1e-6, seed=2, progress=False).fit(df, Codes())
    with pytest.raises(ConfigError, match="custom encoder"):
        fit.save(tmp_path / "x.vmrf")


def test_mrf_round_trips_exactly(tmp_path):
    domain = Domain.from_sizes([3, 4, 3, 3, 2, 3])
    mrf = MarkovRandomField(domain, [(0, 1, 2), (2, 3), (3, 4), (5,)], total=250.0)
    mrf.potentials = np.random.default_rng(11).normal(size=mrf.layout.total_cells)
    loaded = MarkovRandomField.load(mrf.save(tmp_path / "mrf.vmrf"))
    assert loaded.cliques == mrf.cliques and loaded.tree.edges == mrf.tree.edges
    assert loaded.tree.root == mrf.tree.root and loaded.total == mrf.total
    np.testing.assert_array_equal(loaded.potentials.values, mrf.potentials.values)
    np.testing.assert_array_equal(loaded.marginal((1, 4)), mrf.marginal((1, 4)))
    np.testing.assert_array_equal(
        loaded.sample(5000, np.random.default_rng(3)), mrf.sample(5000, np.random.default_rng(3))
    )


def test_mrf_load_refuses_a_model_over_the_cell_limit(tmp_path):
    mrf = MarkovRandomField(Domain.from_sizes([4, 4, 4]), [(0, 1, 2)])
    path = mrf.save(tmp_path / "mrf.vmrf")
    with pytest.raises(MessageError, match="bytes"):
        MarkovRandomField.load(path, max_cells=10)
