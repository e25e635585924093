"""Partial record sets, every transport: three parties that hold different records (each
party's CSV a different subset of one table) run in process, over folders, through the step
commands' files and over HTTPS, and every transport writes the in-process run's synthetic
CSV byte for byte."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.driver.test_same_bytes import TRANSPORTS
from tests.folder_roles import THREE
from tests.https_roles import pinned_files
from tests.runs import correlated_table
from tests.step_roles import make_partial_deals, step_files_run
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.config import ProtocolConfig


def partial_files(root: Path, **fields) -> ProtocolConfig:
    """The pinned files of a three-party run (other config ``fields``); then each party
    keeps a different subset of the records (every record held by at least one party)."""
    df, spec = correlated_table()
    fields = {"record_sets": "partial", "max_rows": 4096, **fields}
    cfg = pinned_files(root, df, spec, **fields)
    rng = np.random.default_rng(5)
    held = rng.random((len(df), len(THREE))) < 0.7
    held[~held.any(axis=1), 0] = True
    for i, n in enumerate(THREE):
        frame = pd.read_csv(root / f"{n}.csv")
        frame[held[frame["rid"].to_numpy(), i]].to_csv(root / f"{n}.csv", index=False)
    return cfg


@pytest.mark.parametrize(
    "transport",
    [
        pytest.param("folders", marks=pytest.mark.slow),
        pytest.param("step files", marks=pytest.mark.slow),
        pytest.param("https", marks=pytest.mark.service),
    ],
)
def test_every_transport_writes_the_in_process_runs_bytes(tmp_path, transport):
    here, there = tmp_path / "in-process", tmp_path / transport.replace(" ", "-")
    here.mkdir()
    cfg = partial_files(here)
    if transport == "step files":  # the step commands take the public keys as files
        cfg = dataclasses.replace(cfg, identities=None)
        cfg.save(here / "config.json")
    shutil.copytree(here, there)
    want = TRANSPORTS["in process"](here, cfg)
    if transport == "step files":
        got = step_files_run(there, THREE, make_partial_deals)
    else:
        got = TRANSPORTS[transport](there, cfg)
    assert got == want and len(want.splitlines()) > 1


def test_the_in_process_run_of_partial_sets_completes(tmp_path):
    cfg = partial_files(tmp_path)
    out = TRANSPORTS["in process"](tmp_path, cfg).decode().splitlines()
    assert out[0] == ",".join(cfg.spec.names) and len(out) > 10


def test_the_report_prints_the_region_counts_and_a_true_total(tmp_path):
    """The report lists the noisy count of every region; the total epsilon converts the
    rho at delta less the region noise's two failure probabilities (1% of delta each), and
    stays within the budget; the report file keeps the counts."""
    from tests.helpers import SECRET
    from tests.runs import SEED
    from vertimrf.driver import local_run
    from vertimrf.privacy.zcdp import rho_to_epsilon
    from vertimrf.protocol.report_file import report_from_meta, report_meta

    cfg = partial_files(tmp_path)
    data = {n: pd.read_csv(tmp_path / f"{n}.csv") for n in THREE}
    keys = {n: KeyPair.load(tmp_path / f"{n}.key") for n in THREE}
    run = local_run(data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
                    server_key=KeyPair.load(tmp_path / "server.key"))  # fmt: skip
    report = run.fitted(run.run()).report
    assert list(report.regions) == ["A", "B", "A+B", "C", "A+C", "B+C", "A+B+C"]
    assert report.region_sigma is not None and "record sets: partial" in str(report)
    ledger = report.ledger
    assert ledger.failure_delta == pytest.approx(2 * 0.01 * cfg.delta)
    rho = ledger.total_rho
    assert ledger.total_epsilon(cfg.delta) == rho_to_epsilon(rho, 0.98 * cfg.delta)
    assert ledger.total_epsilon(cfg.delta) > rho_to_epsilon(rho, cfg.delta)
    assert ledger.total_epsilon(cfg.delta) <= cfg.epsilon + 1e-9
    again = report_from_meta(report_meta(report), "report")
    assert again.regions == report.regions


def test_fm_runs_on_partial_record_sets_and_stays_not_dp(tmp_path):
    """FM needs no aligned rows: each party sketches its own records, and CarEst estimates
    the counts of the records two parties share. Its report still says NOT DP."""
    from tests.helpers import SECRET
    from vertimrf.driver import local_run
    from vertimrf.protocol import from_preset

    df, spec = correlated_table()
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()), method="fm",
        t=16, allow_non_dp=True, record_sets="partial", max_rows=512,
    )  # fmt: skip
    rng = np.random.default_rng(2)
    held = rng.random((len(df), 3)) < 0.7
    held[~held.any(axis=1), 0] = True
    data = {n: df[cols].assign(id=range(len(df)))[held[:, i]]
            for i, (n, cols) in enumerate(THREE.items())}  # fmt: skip
    run = local_run(data, cfg, SECRET, seed=1)
    model = run.fitted(run.run())
    assert len(model.sample(20, seed=0)) == 20
    assert not model.report.dp_guarantee and "NOT differentially private" in str(model.report)


@pytest.mark.parametrize("population", ["intersection", "union"])
def test_the_synthetic_table_holds_the_population_with_empty_absent_cells(tmp_path, population):
    """Intersection: as many rows as the published count of the records every party holds,
    no empty cell. Union: as many as all the published region counts, a party's columns
    empty together (absent) on some rows and never partly. The saved model samples the
    same rows."""
    from tests.helpers import SECRET
    from tests.runs import SEED
    from vertimrf.driver import local_run
    from vertimrf.vertical_model import VerticalModel

    # a large share for the region counts: their noise is small beside the 300 records'
    # partial regions, so the model covers the union
    cfg = partial_files(tmp_path, region_share=0.5, population=population)
    data = {n: pd.read_csv(tmp_path / f"{n}.csv") for n in THREE}
    keys = {n: KeyPair.load(tmp_path / f"{n}.key") for n in THREE}
    run = local_run(data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
                    server_key=KeyPair.load(tmp_path / "server.key"))  # fmt: skip
    model = run.fitted(run.run())
    assert run.server.server.secure.record_sets.models_union and model.absent
    regions = run.server.server.secure.record_sets.released
    want = regions[7] if population == "intersection" else sum(regions.values())
    assert model.n_hat == round(max(want, 0)) > 0
    sample = model.sample(seed=3)
    assert len(sample) == model.n_hat and list(sample.columns) == list(cfg.spec.names)
    empty = sample.isna()
    for cols in THREE.values():
        assert (empty[cols].all(axis=1) | ~empty[cols].any(axis=1)).all()  # never partly
    if population == "intersection":
        assert not empty.any().any()
    else:
        assert empty.any().any() and not empty.all(axis=1).any()  # someone holds every row
    model.save(tmp_path / "model.vmrf")
    again = VerticalModel.load(tmp_path / "model.vmrf")
    assert again.absent and again.sample(seed=3).equals(sample)


def test_partial_sets_that_are_equal_fit_the_model_of_equal_sets(tmp_path):
    """Every party holds every record: the published counts of the regions that lack a
    party are within noise of 0, so the server fits the model of equal sets (no absent
    value, no cost) and samples as many rows as the published count of all parties."""
    from tests.helpers import SECRET
    from tests.runs import SEED
    from vertimrf.driver import local_run

    df, spec = correlated_table()
    cfg = pinned_files(tmp_path, df, spec, record_sets="partial", max_rows=4096)
    data = {n: pd.read_csv(tmp_path / f"{n}.csv") for n in THREE}
    keys = {n: KeyPair.load(tmp_path / f"{n}.key") for n in THREE}
    run = local_run(data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
                    server_key=KeyPair.load(tmp_path / "server.key"))  # fmt: skip
    model = run.fitted(run.run())
    server = run.server.server.secure
    assert not server.record_sets.models_union and not model.absent
    assert model.n_hat == max(0, server.record_sets.released[7])
    assert not model.sample(seed=1).isna().any().any()
