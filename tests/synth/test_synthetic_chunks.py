"""Synthetic rows in fixed chunks: ``VerticalModel.write_sample`` streams
the rows of ``sample`` chunk by chunk to CSV or Parquet, atomically, in memory that does not
grow with the number of rows."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vertimrf.mrf.sampling as sampling
from tests.synth.mixed_table import COLUMNS, PARTIES, mixed_table
from vertimrf import VerticalModel, fit_vertical
from vertimrf.domain import DomainSpec
from vertimrf.errors import ConfigError


@pytest.fixture(scope="module")
def model() -> VerticalModel:
    """A small fitted model: text, numeric and integer columns, a dependent pair."""
    df, spec = mixed_table(600)
    return fit_vertical(df, spec, PARTIES, epsilon=1.0, delta=1e-6, max_rows=1024, seed=3)


@pytest.fixture
def chunk(monkeypatch) -> Callable[[int], None]:
    """Set the public chunk size for one test."""
    return lambda rows: monkeypatch.setattr(sampling, "SAMPLE_CHUNK", rows)


# ------------------------------------------------------------------ same rows, streamed


def test_the_in_memory_sample_is_its_chunks_in_order(model, chunk):
    """sample(n) is the concatenation of the chunk draws of one generator; with one chunk
    covering n it is the draw of the whole table at once (the rows before chunking)."""
    chunk(1000)
    whole = model.sample(3500, seed=4)
    parts = list(model.sample_chunks(3500, seed=4))
    assert [len(p) for p in parts] == [1000, 1000, 1000, 500]
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    rng = np.random.default_rng(4)
    codes = [sampling.forward_sample(model.model, 1000, rng) for _ in range(3)]
    codes.append(sampling.forward_sample(model.model, 500, rng))
    assert np.array_equal(model.model.sample(3500, np.random.default_rng(4)), np.vstack(codes))
    chunk(3500)
    assert not model.sample(3500, seed=4).equals(whole)  # the chunk size is part of the draw


def test_csv_is_byte_identical_to_the_in_memory_sample(model, chunk, tmp_path):
    chunk(1000)
    path = model.write_sample(str(tmp_path / "s.csv"), 3500, seed=7)
    assert path == tmp_path / "s.csv"
    assert path.read_bytes() == model.sample(3500, seed=7).to_csv(index=False).encode()


def test_parquet_holds_the_in_memory_sample_one_row_group_per_chunk(model, chunk, tmp_path):
    chunk(1000)
    path = model.write_sample(tmp_path / "s.parquet", 3500, seed=7)
    want = model.sample(3500, seed=7)
    pd.testing.assert_frame_equal(pd.read_parquet(path), want)  # values and dtypes
    table = pq.read_table(path)
    assert table.num_rows == 3500 and pq.ParquetFile(path).num_row_groups == 4
    assert table.column("num").type == pa.float64() and table.column("c3").type == pa.int64()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_zero_rows_write_the_columns_only(model, tmp_path, suffix):
    path = model.write_sample(tmp_path / f"empty{suffix}", 0, seed=1)
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert list(back.columns) == ["c0", "num", "c2", "c3"] and len(back) == 0


def test_without_a_seed_the_model_stream_goes_on(model, tmp_path):
    """No seed: the model's own generator, as sample() uses it (two writes differ)."""
    first = model.write_sample(tmp_path / "a.csv", 200).read_bytes()
    assert model.write_sample(tmp_path / "b.csv", 200).read_bytes() != first


# ------------------------------------------------------------------ memory


def _peak(write: Callable[[], object]) -> int:
    """The tracemalloc peak (bytes) of ``write()``."""
    tracemalloc.start()
    try:
        write()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


N_BIG, CHUNK = 400_000, 20_000


@pytest.fixture
def one_chunk_bound(model, chunk, tmp_path) -> int:
    """The bound: 1.25 x the peak of writing exactly one chunk. A streamed write holds one
    chunk at a time (its codes, its frame, the writer's buffer for it), so 20 chunks need
    what one needs; the 25% covers the allocator's and the Parquet footer's small growth."""
    chunk(CHUNK)
    model.write_sample(tmp_path / "warm.parquet", CHUNK, seed=0)  # one-off imports and caches
    return int(1.25 * _peak(lambda: model.write_sample(tmp_path / "one.parquet", CHUNK, seed=0)))


def test_streamed_memory_does_not_grow_with_n(model, one_chunk_bound, tmp_path):
    peak = _peak(lambda: model.write_sample(tmp_path / "big.parquet", N_BIG, seed=0))
    print(f"parquet: one chunk bound {one_chunk_bound:,} B, {N_BIG:,} rows peak {peak:,} B")
    assert peak <= one_chunk_bound
    # The whole-table code matrix alone (n x d int64) is far above the bound.
    assert one_chunk_bound < N_BIG * 4 * 8 / 3


def test_the_whole_table_path_exceeds_the_bound(model, one_chunk_bound, tmp_path):
    """What write_sample replaced (sample all n rows, then write) peaks at about n times the
    row size: at least its n x d int64 codes; so the bound above tells the two apart."""
    peak = _peak(lambda: model.sample(N_BIG, seed=0).to_parquet(tmp_path / "old.parquet"))
    print(f"whole table: {N_BIG:,} rows peak {peak:,} B")
    assert peak >= N_BIG * 4 * 8 > 3 * one_chunk_bound


def test_streamed_csv_memory_does_not_grow_with_n(model, chunk, tmp_path):
    """CSV (slower to format, so fewer rows: 20 chunks of 5,000): the same one-chunk bound."""
    chunk(5000)
    model.write_sample(tmp_path / "warm.csv", 5000, seed=0)
    one = _peak(lambda: model.write_sample(tmp_path / "one.csv", 5000, seed=0))
    peak = _peak(lambda: model.write_sample(tmp_path / "big.csv", 100_000, seed=0))
    print(f"csv: one chunk peak {one:,} B, 100,000 rows peak {peak:,} B")
    assert peak <= 1.25 * one


# ------------------------------------------------------------------ safety


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_an_existing_file_is_refused_unless_overwrite(model, tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    path.write_text("kept\n")
    with pytest.raises(ConfigError, match="exists"):
        model.write_sample(path, 10, seed=1)
    assert path.read_text() == "kept\n"
    model.write_sample(path, 10, seed=1, overwrite=True)
    assert path.read_bytes() != b"kept\n"


@pytest.mark.parametrize("name", ["s.txt", "s", "s.csv.gz", "s.pq"])
def test_another_suffix_is_one_line_and_writes_nothing(model, tmp_path, name):
    with pytest.raises(ConfigError) as info:
        model.write_sample(tmp_path / name, 10, seed=1)
    message = str(info.value)
    assert "\n" not in message and ".csv" in message and ".parquet" in message
    assert list(tmp_path.iterdir()) == []


def test_a_column_of_mixed_types_is_refused_for_parquet_only(model, tmp_path):
    mixed = [dict(c) for c in COLUMNS]
    mixed[3]["categories"] = [0, "one"]
    other = VerticalModel(model.model, DomainSpec.from_dict({"columns": mixed}), model.report)
    with pytest.raises(ConfigError, match="'c3' mixes value types") as info:
        other.write_sample(tmp_path / "s.parquet", 10, seed=1)
    assert "\n" not in str(info.value) and list(tmp_path.iterdir()) == []
    assert set(pd.read_csv(other.write_sample(tmp_path / "s.csv", 50, seed=1))["c3"]) <= {
        "0",
        "one",
    }


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_failure_mid_write_leaves_no_file(model, chunk, monkeypatch, tmp_path, suffix):
    chunk(100)
    draw, calls = sampling._draw, []

    def fail_second(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("disk gone")
        draw(*args)

    monkeypatch.setattr(sampling, "_draw", fail_second)
    with pytest.raises(RuntimeError, match="disk gone"):
        model.write_sample(tmp_path / f"s{suffix}", 350, seed=1)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_bad_rows_or_seed_are_refused_before_any_file(model, tmp_path):
    for n, seed in ((-1, None), (2.5, None), (10, -3)):
        with pytest.raises(ConfigError):
            model.write_sample(tmp_path / "s.csv", n, seed)
    assert list(tmp_path.iterdir()) == []


def test_the_chunk_size_is_a_public_constant():
    assert sampling.SAMPLE_CHUNK == 65_536
