"""One interface for both synthesizers: the report is a FitReport on a
VerticalModel and on a PrivMRF; samples keep the fitted frame's dtypes; ``save`` refuses to
overwrite unless asked; loading another kind of model file names the class that loads it;
``fit_vertical`` takes one frame per party, joined on an ID column, with partial record sets."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from tests.synth.mixed_table import PARTIES, mixed_table
from vertimrf import FitReport, PrivMRF, VerticalModel, fit_vertical
from vertimrf.container import MODEL_LOADERS
from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.driver import local_run
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, DomainError, MessageError
from vertimrf.mrf import MarkovRandomField
from vertimrf.mrf.model import MRF_KIND
from vertimrf.privacy.ledger import Release
from vertimrf.privacy.zcdp import rho_to_epsilon
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.seeds import seeded_nonce, seeded_secret
from vertimrf.synth.dtypes import integer_bins, typed
from vertimrf.synth.privmrf.fit_report import PrivMRFReport
from vertimrf.synth.privmrf.store import PRIVMRF_KIND
from vertimrf.vertical_model import MODEL_KIND


def _typed_table() -> tuple[pd.DataFrame, DomainSpec]:
    """The mixed table with a ``category`` column, an ``Int64`` one and an integer numeric one."""
    df, spec = mixed_table()
    df = df.assign(
        c0=df["c0"].astype("category"),
        num=np.floor(df["num"]).astype("int64"),
        c3=df["c3"].astype("Int64"),
    )
    return df, spec


WANT = {"c0": "category", "num": "int64", "c2": "str", "c3": "Int64"}


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, DomainSpec]:
    return _typed_table()


@pytest.fixture(scope="module")
def vertical(data) -> VerticalModel:
    df, spec = data
    return fit_vertical(df, spec, PARTIES, epsilon=1.0, delta=1e-6, max_rows=1024, seed=3)


@pytest.fixture(scope="module")
def central(data) -> PrivMRF:
    df, spec = data
    return PrivMRF(1.0, 1e-6, seed=2, progress=False, selection="engine").fit(df, spec)


# ------------------------------------------------------------------------------ the report
def _release(rho: float) -> Release:
    return Release("gaussian", "a count", rho, params={"sensitivity": 1.0, "sigma": 1.0})


def _privmrf_report(seeded: bool) -> PrivMRFReport:
    return PrivMRFReport.build(
        epsilon=1.0, delta=1e-6, gdp_accounting=False, rho_budget=0.05,
        releases=(_release(0.01), _release(0.02)), model_size=None,  # type: ignore[arg-type]
        cliques=((0, 1),), n_measurements=2, measurement_sigma=3.0, iterations=(5,),
        fit_seconds=1.0, seeded=seeded,
    )  # fmt: skip


def test_a_privmrf_report_states_its_total_and_guarantee_as_a_vertical_one_does():
    report = _privmrf_report(seeded=False)
    assert isinstance(report, FitReport) and report.dp_guarantee
    assert report.total_epsilon == rho_to_epsilon(0.03, 1e-6)
    out = report.to_dict()
    assert (out["total_rho"], out["total_epsilon"], out["dp_guarantee"]) == (
        0.03, rho_to_epsilon(0.03, 1e-6), True
    )  # fmt: skip
    seeded = _privmrf_report(seeded=True)
    assert not seeded.dp_guarantee and seeded.total_epsilon is None
    assert seeded.to_dict()["total_epsilon"] is None


def test_both_reports_are_fit_reports_with_the_same_keys(vertical, central):
    shared = {"epsilon", "delta", "dp_guarantee", "seeded", "total_epsilon", "total_rho"}
    for model in (vertical, central):
        report = model.report
        assert isinstance(report, FitReport)
        out = report.to_dict()
        assert shared | {"releases", "seconds"} <= set(out)
        assert (out["epsilon"], out["delta"]) == (1.0, 1e-6)
        # seeded fits: no guarantee, so no total, on both
        assert (report.seeded, report.dp_guarantee, report.total_epsilon) == (True, False, None)
    rho = sum(r["rho"] for r in central.report.to_dict()["releases"])
    assert central.report.to_dict()["total_rho"] == pytest.approx(rho, rel=1e-12)
    assert vertical.report.to_dict()["total_rho"] == vertical.report.ledger.total_rho


def test_calling_the_privmrf_report_still_works_with_a_warning(central):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert central.report() is central.report
    assert [w.category for w in caught] == [DeprecationWarning]
    assert "attribute" in str(caught[0].message)


# ------------------------------------------------------------------------------ the dtypes
def test_integer_bins_are_the_encoders_bins():
    """Each bin's integers are exactly those the encoder puts in it, an integer at the upper
    bound in the last bin."""
    for lower, upper, bins in [(0, 10, 10), (0, 10, 3), (0, 1, 4), (-5.5, 5.5, 7), (0.3, 2.7, 5)]:
        col = ColumnSpec("x", "numeric", lower=lower, upper=upper, bins=bins)
        starts, ends = integer_bins(col)
        ints = np.arange(np.ceil(lower), np.floor(upper) + 1)
        codes = TableEncoder(DomainSpec([col])).encode(pd.DataFrame({"x": ints}))[:, 0]
        got = [list(range(s, e + 1)) for s, e in zip(starts, ends, strict=True)]
        assert got == [list(ints[codes == k].astype(int)) for k in range(bins)]
    col = ColumnSpec("x", "numeric", lower=0, upper=10, bins=3)
    assert [list(a) for a in integer_bins(col)] == [[0, 4, 7], [3, 6, 10]]


def test_decoded_integers_lie_in_their_bin_and_the_bounds():
    spec = DomainSpec([ColumnSpec("x", "numeric", lower=0, upper=10, bins=3)])
    decode = typed(TableEncoder(spec).decode, spec, {"x": "int64"})
    out = decode(np.array([[0], [1], [2]]))
    # midpoints 1.67, 5, 8.33 -> the nearest integer of bins {0..3}, {4..6}, {7..10}
    assert out["x"].tolist() == [2, 5, 8] and out["x"].dtype == np.int64
    codes = np.random.default_rng(0).integers(0, 3, (2000, 1))
    draws = TableEncoder(spec).decode(codes, rng=np.random.default_rng(1))  # inside the bins
    cast = typed(lambda _: draws, spec, {"x": "int64"})(codes)
    assert cast["x"].between(0, 10).all()
    np.testing.assert_array_equal(TableEncoder(spec).encode(cast), codes)
    assert 10 in set(cast["x"]) and 0 in set(cast["x"])


def test_every_dtype_and_its_nullable_form():
    spec = DomainSpec([
        ColumnSpec("cat", "categorical", categories=("b", "a"), missing=True),
        ColumnSpec("i", "categorical", categories=(3, 9), missing=True),
        ColumnSpec("u", "numeric", lower=0, upper=1000, bins=4),
        ColumnSpec("flag", "categorical", categories=(False, True), missing=True),
        ColumnSpec("f", "numeric", lower=0, upper=1, bins=2),
    ])  # fmt: skip
    dtypes = {"cat": "category (ordered)", "i": "int64", "u": "uint8", "flag": "bool",
              "f": "float32"}  # fmt: skip
    out = typed(TableEncoder(spec).decode, spec, dtypes)(
        np.array([[0, 0, 3, 1, 1], [2, 2, 0, 2, 0]])
    )
    assert out["cat"].dtype == pd.CategoricalDtype(["b", "a"], ordered=True)
    assert out["cat"].tolist()[0] == "b" and pd.isna(out["cat"].iloc[1])
    assert str(out["i"].dtype) == "Int64" and out["i"].tolist()[0] == 3 and pd.isna(out["i"][1])
    assert out["u"].dtype == np.int64 and out["u"].tolist() == [875, 125]  # 1000 > uint8's 255
    assert str(out["flag"].dtype) == "boolean" and out["flag"].tolist()[:1] == [True]
    assert out["f"].dtype == np.float32 and out["f"].tolist() == [0.75, 0.25]
    with pytest.raises(DomainError, match="'u' is numeric: it cannot be a category"):
        typed(TableEncoder(spec).decode, spec, {"u": "category"})
    with pytest.raises(DomainError, match="categories that are not integers"):
        typed(TableEncoder(spec).decode, spec, {"cat": "Int64"})


def test_samples_keep_the_fitted_frames_dtypes(vertical, central, data, tmp_path):
    df, spec = data
    for model in (vertical, central):
        rows = model.sample(300, seed=1)
        assert {c: str(t) for c, t in rows.dtypes.items()} == WANT
        assert list(rows["c0"].cat.categories) == ["a", "b", "c"]
        TableEncoder(spec).table(rows)  # every value in the domain
        assert set(rows["num"]) <= set(range(11))
        assert dict(model.dtypes) == {c: WANT[c] for c in spec.names}
        loaded = type(model).load(model.save(tmp_path / f"{type(model).__name__}.vmrf"))
        pd.testing.assert_frame_equal(loaded.sample(300, seed=1), rows)
        marginal = model.marginal("c0")
        assert list(marginal.index) == ["a", "b", "c"]
    path = vertical.write_sample(tmp_path / "rows.parquet", 100, seed=2)
    pd.testing.assert_frame_equal(pd.read_parquet(path), vertical.sample(100, seed=2))


# ------------------------------------------------------------------------------ files
def test_save_refuses_an_existing_file_unless_asked(vertical, central, tmp_path):
    for model in (vertical, central):
        path = tmp_path / f"{type(model).__name__}.vmrf"
        path.write_bytes(b"mine")
        with pytest.raises(ConfigError) as info:
            model.save(path)
        assert str(info.value) == (
            f"{path} exists; give a new path, or overwrite=True to replace it."
        )
        assert path.read_bytes() == b"mine"
        assert model.save(path, overwrite=True) == path
        type(model).load(path)


def test_another_kind_of_model_file_names_the_class_that_loads_it(vertical, central, tmp_path):
    files = {
        VerticalModel: vertical.save(tmp_path / "v.vmrf"),
        PrivMRF: central.save(tmp_path / "p.vmrf"),
        MarkovRandomField: vertical.model.save(tmp_path / "m.vmrf"),
    }
    loaders = {
        VerticalModel: "vertimrf.VerticalModel.load",
        PrivMRF: "vertimrf.PrivMRF.load",
        MarkovRandomField: "vertimrf.mrf.MarkovRandomField.load",
    }
    for reader in files:
        for writer, path in files.items():
            if reader is writer:
                continue
            with pytest.raises(MessageError) as info:
                reader.load(path)
            message = str(info.value)
            assert "\n" not in message
            assert message.endswith(f"; load it with {loaders[writer]}(path).")


def test_the_loaders_are_those_of_the_kinds_the_models_write():
    assert MODEL_LOADERS == {
        MODEL_KIND: "vertimrf.VerticalModel.load",
        PRIVMRF_KIND: "vertimrf.PrivMRF.load",
        MRF_KIND: "vertimrf.mrf.MarkovRandomField.load",
    }
    for name in MODEL_LOADERS.values():  # each names a real call
        owner, attr = name.rsplit(".", 1)
        module, cls = owner.rsplit(".", 1)
        assert callable(getattr(getattr(__import__(module, fromlist=[cls]), cls), attr))


# ------------------------------------------------------------------------------ frames per party
def _party_frames(df: pd.DataFrame, only: int = 100) -> dict[str, pd.DataFrame]:
    """A holds the first records, B the last; each holds ``only`` records the other lacks."""
    ids = np.arange(len(df))
    a = df[["c0", "num"]].assign(id=ids).iloc[: len(df) - only]
    b = df[["c2", "c3"]].assign(id=ids).iloc[only:]
    return {"A": a, "B": b}


@pytest.fixture(scope="module")
def partial(data) -> VerticalModel:
    df, spec = data
    return fit_vertical(
        _party_frames(df), spec, id_column="id", epsilon=1.0, delta=1e-6, max_rows=4096, seed=4
    )


def test_frames_per_party_are_the_in_process_runs_partial_record_sets(partial, data):
    """fit_vertical on frames by party runs the config with record_sets="partial" that it
    declares, as the in-process driver does: the same releases, charged the same; its
    region counts are the true ones (100, 100, 400) plus two noises of region_sigma each.
    (A seeded partial run is not reproduced byte for byte: each run's keys are fresh.)"""
    df, spec = data
    frames = _party_frames(df)
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=spec,
        parties=[("A", ["c0", "num"]), ("B", ["c2", "c3"])], method="secure",
        record_sets="partial", max_rows=4096, run_nonce=seeded_nonce(4),
    )  # fmt: skip
    run = local_run(frames, cfg, seeded_secret(4), seed=4, id_column="id")
    want = run.fitted(run.run()).report
    report = partial.report
    assert report.ledger.releases == want.ledger.releases
    assert report.region_sigma == want.region_sigma is not None
    truth = {"A": 100, "B": 100, "A+B": 400}
    assert list(report.regions) == list(truth)
    for region, count in truth.items():
        assert abs(report.regions[region] - count) <= 6 * np.sqrt(2) * report.region_sigma
    rows = partial.sample(200, seed=5)
    assert {c: str(t) for c, t in rows.dtypes.items()} == WANT and not rows.isna().any().any()


def test_frames_per_party_over_the_union_are_nullable(data):
    df, spec = data
    # 200 records at one party only, and a large share for the region counts: the server
    # fits the model over the union (docs/partial-overlap.md)
    model = fit_vertical(
        _party_frames(df, only=200), spec, id_column="id", epsilon=1.0, delta=1e-6,
        max_rows=4096, seed=4, population="union", region_share=0.5,
    )  # fmt: skip
    rows = model.sample(400, seed=1)
    assert model.absent
    assert {c: str(t) for c, t in rows.dtypes.items()} == {**WANT, "num": "Int64"}
    # a party's columns are empty together where it lacks the record
    assert (rows["c0"].isna() == rows["num"].isna()).all()
    assert (rows["c2"].isna() == rows["c3"].isna()).all()
    assert rows["c0"].isna().any() and rows["c2"].isna().any()


def test_an_intersection_fitted_over_the_union_keeps_non_nullable_dtypes(data, tmp_path):
    """Whether the server fits over the union depends on the noisy region counts; the
    intersection's samples never hold an empty cell either way, so their dtypes are the
    frames' (int64, not Int64), also after save and load. 250 of the 600 records at each
    party only make the union fit all but certain (server/secure/record_sets.py, models_union):
    the regions lacking a party hold 500 records, their noise has sd 2 x region_sigma (64
    here), and the threshold is 3 sd: a miss is 4.8 sd away (p < 1e-6)."""
    df, spec = data
    assert len(df) == 600
    model = fit_vertical(
        _party_frames(df, only=250), spec, id_column="id", epsilon=1.0, delta=1e-6,
        max_rows=4096, seed=4,
    )  # fmt: skip
    assert model.absent and not model.empty
    path = model.save(tmp_path / "m.vmrf")
    for m in (model, VerticalModel.load(path)):
        rows = m.sample(300, seed=2)
        assert {c: str(t) for c, t in rows.dtypes.items()} == WANT
        assert not rows.isna().any().any()


def test_frames_per_party_refuse_what_does_not_fit(data):
    df, spec = data
    frames = _party_frames(df)
    kwargs = {"epsilon": 1.0, "delta": 1e-6, "seed": 1}
    cases = [
        (lambda: fit_vertical(frames, spec, **kwargs), ConfigError, "give id_column=..."),
        (lambda: fit_vertical(frames, spec, PARTIES, id_column="id", **kwargs), ConfigError,
         "drop parties"),
        (lambda: fit_vertical(df, spec, PARTIES, id_column="id", **kwargs), ConfigError,
         "drop id_column"),
        (lambda: fit_vertical({"A": df.to_numpy()}, spec, id_column="id", **kwargs),
         DomainError, "not so for ['A']"),
        (lambda: fit_vertical([df], spec, id_column="id", **kwargs), DomainError,
         "got list"),
    ]  # fmt: skip
    for call, error, text in cases:
        with pytest.raises(error) as info:
            call()
        assert text in str(info.value) and "\n" not in str(info.value)
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=spec, parties=PARTIES, method="secure",
        record_sets="partial", max_rows=4096,
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"parties \['A', 'B'\], the config's parties are"):
        fit_vertical(frames, id_column="id", config=cfg, seed=1)


def test_one_frame_still_gives_every_party_every_record(vertical):
    assert vertical.report.regions == {} and not vertical.absent
