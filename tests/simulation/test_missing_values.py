"""Missing values end to end: a secure run over parties whose columns have empty
cells writes a synthetic table with empty cells at the real rate, within the noise; the
parties reading their tables from CSV or Parquet files, streamed through part files, give
the in-memory run's model and rows."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tests.missing_table import EMPTY, PARTIES, SPEC, N, missing_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import local_run
from vertimrf.party.records.file_table import FileTable
from vertimrf.protocol import from_preset

SECRET = bytes(range(32))


def _setup(nonce: str) -> tuple:
    """The default (secure) config over PARTIES at epsilon 1.6, and fresh keys of the roles."""
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.6, delta=1e-6, spec=SPEC, parties=PARTIES, max_rows=8192,
        run_nonce=nonce * 16,
    )  # fmt: skip
    return cfg, {name: KeyPair.generate(name) for name in ("A", "B", "server")}


def _run(data: dict, cfg, keys: dict, seed: int):
    parties = {k: v for k, v in keys.items() if k != "server"}
    run = local_run(data, cfg, SECRET, seed=seed, keys=parties, server_key=keys["server"])
    return run.fitted(run.run())


def _sigma(model) -> float:
    """The largest noise scale per cell of the run's releases (its report's)."""
    return max(r["params"].get("sigma", 0.0) for r in model.report.to_dict()["releases"])


def _bound(model, real_rate: float, column: str, rows: int) -> float:
    """Three standard deviations of the synthetic rate's error, from theory. The fit takes
    every first-release 2-way marginal inside a clique of the model, each with noise of
    scale sigma per cell, so the narrowest of those holding the column (its partner has u
    values) sums the missing cell's count with noise of standard deviation sigma sqrt(u);
    the fit's least-squares estimate is at least as precise (Gauss-Markov). Add the error
    of the noisy total (observed: |n_hat - n| / n of the rate) and the sampling error of
    ``rows`` rows drawn from the model."""
    sigma = _sigma(model)
    j = SPEC.names.index(column)
    partners = {a for c in model.model.cliques if j in c for a in c if a != j}
    u = min(SPEC.domain.sizes[a] for a in partners)
    noise = 3 * sigma * math.sqrt(u) / N
    total = real_rate * abs(model.n_hat - N) / N
    sampling = 3 * math.sqrt(real_rate * (1 - real_rate) / rows)
    return noise + total + sampling


@pytest.mark.parametrize("seed", [1, 2])
def test_a_secure_run_writes_empty_cells_at_the_real_rate(seed):
    frame = missing_table()
    cfg, keys = _setup("ab")
    model = _run({p: frame[["id", *cols]] for p, cols in PARTIES}, cfg, keys, seed)
    synth = model.sample(seed=seed)
    assert list(synth.columns) == list(SPEC.names)
    assert synth[["c1", "c3"]].notna().all().all()
    for column in EMPTY:
        real = float(frame[column].isna().mean())
        got = float(synth[column].isna().mean())
        assert 0.08 < real < 0.32
        assert abs(got - real) <= _bound(model, real, column, len(synth)), (column, real, got)
        # The model's own probability of the missing value is its last entry, an empty label.
        marginal = model.marginal([column])
        assert pd.isna(marginal.index[-1]) and marginal.index[:-1].notna().all()
    # Empty cells keep their relation to the other columns: among the k rows whose c0 is
    # empty, the share of c1 = 1 is the real one within the sampling error (sd at most
    # sqrt(1/4k)) and the noise of the 2-way count (sigma) over k, three times each.
    k = int(synth.c0.isna().sum())
    sigma = _sigma(model)
    real_share = frame.loc[frame.c0.isna(), "c1"].mean()
    got_share = synth.loc[synth.c0.isna(), "c1"].mean()
    assert abs(got_share - real_share) <= 3 * (math.sqrt(0.25 / k) + sigma / k)


def test_parties_reading_files_with_empty_cells_fit_the_in_memory_model(tmp_path):
    frame = missing_table()
    cfg, keys = _setup("cd")
    want = _run({p: frame[["id", *cols]] for p, cols in PARTIES}, cfg, keys, 3).sample(seed=4)
    frame[["id", *PARTIES[0][1]]].to_csv(tmp_path / "A.csv", index=False)
    frame[["id", *PARTIES[1][1]]].to_parquet(tmp_path / "B.parquet", index=False)
    files = {
        "A": FileTable(tmp_path / "A.csv", part_rows=500, batch_rows=700),
        "B": FileTable(tmp_path / "B.parquet", part_rows=500, batch_rows=700),
    }
    got = _run(files, cfg, keys, 3).sample(seed=4)
    pd.testing.assert_frame_equal(got, want)
    assert got[list(EMPTY)].isna().any().all()
