"""Partial record sets from a file: the records sorted by token and laid out at their slots
through temporary files, a part at a time, give the table in memory's count, digests, token
list, one-hot columns and count tables, at any part size; a whole run writes the same
messages, byte for byte; and the memory does not grow with the rows."""

from __future__ import annotations

import gc
import hashlib
import json
import stat
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.party.test_file_table import PARTIES, SECRET, SIZES, _frame, _write
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.errors import ConfigError, MessageError, RecordIDError
from vertimrf.party.records.file_table import FileTable
from vertimrf.party.records.slot_file import FileSlotAligned, TokenFiles
from vertimrf.party.records.slot_table import MemoryRecords
from vertimrf.party.records.table_input import read_party_table
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan

ADMIT = bytes(range(7, 39))
ASSIGNMENT = bytes(range(3, 35))

OWN = bytes(range(5, 37))  # party A's own secret


def _config(max_rows):
    return from_preset(
        "default", epsilon=2.0, delta=1e-6, spec=DomainSpec.from_dict(SIZES), parties=PARTIES,
        method="secure", max_rows=max_rows, record_sets="partial",
    )  # fmt: skip


def _pair(path, cfg, **kwargs):
    """Party A's records at ``path`` sorted through files and held in memory."""
    plan, spec = secure_plan(cfg), cfg.spec.subset(["a0", "a1"])
    table = FileTable(path, **kwargs).check("A", spec, "id")
    files = table.partial_records(spec, TokenKeys(SECRET, OWN, cfg.run_context()), plan, 0)
    codes, fingerprints = read_party_table(path, spec, "id", party="A")
    memory = MemoryRecords(codes, fingerprints, TokenKeys(SECRET, OWN, cfg.run_context()), plan, 0)
    return files, memory, plan


def _tokens(records, admit=ADMIT):
    count, blocks = records.tokens(admit)
    parts = list(blocks())
    tokens = np.concatenate(parts)
    assert tokens.size == count
    return tokens, len(parts)


def _slots(count, plan, seed):
    """A uniform injection of ``count`` tokens into the max_rows rows (as the server's)."""
    return np.random.default_rng(seed).permutation(plan.max_rows)[:count].astype(np.int64)


def _same_layout(held, memory, plan, rng):
    offsets = np.array([0, 4])
    assert (held.n, held.record_digest, held.data_digest) == (
        memory.n, memory.record_digest, memory.data_digest,
    )  # fmt: skip
    np.testing.assert_array_equal(
        held.columns(0, plan.rows, offsets), memory.columns(0, plan.rows, offsets)
    )
    for _ in range(20):  # blocks of any length, across the slot parts' edges
        r0 = int(rng.integers(0, plan.rows))
        r1 = int(rng.integers(r0 + 1, plan.rows + 1))
        np.testing.assert_array_equal(
            held.columns(r0, r1, offsets), memory.columns(r0, r1, offsets)
        )
    attrs = [(0,), (1,), (0, 1), (1, 0)]
    for got, want in zip(held.histograms(attrs, (4, 3)), memory.histograms(attrs, (4, 3)),
                         strict=True):  # fmt: skip
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


def _by_blocks(slots, step=97):
    """``slots`` as a slot map gives them (blocks of ``step``, each overwritten once the next
    is read), and their count."""

    def blocks():
        out = np.empty(step, np.int64)
        for i in range(0, slots.size, step):
            piece = out[: min(step, slots.size - i)]
            piece[:] = slots[i : i + step]
            yield piece

    return blocks(), int(slots.size)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("part_rows", [7, 300, 3999])
def test_records_sorted_through_files_are_those_in_memory(tmp_path, suffix, part_rows):
    """Hundreds of parts, a few, or one: the same count and records digest, the same token
    list (by blocks, with the dummies merged in), and at the same slots the same digests,
    one-hot columns of every row block and exact count tables."""
    n = 2000
    frame = _frame(n, 3).sample(frac=1.0, random_state=4)
    path = _write(frame[["id", "a0", "a1"]], tmp_path / f"a{suffix}")
    files, memory, plan = _pair(path, _config(n + 2000), part_rows=part_rows, batch_rows=333)
    assert isinstance(files, TokenFiles)  # max_rows 4,000 is over a part
    assert (files.n, files.digest) == (memory.n, memory.digest)
    tokens, blocks = _tokens(files)
    np.testing.assert_array_equal(tokens, _tokens(memory)[0])
    assert blocks >= min(64, n // part_rows)  # written by blocks of about a part
    other, _ = _tokens(files, bytes(32))  # another admit digest: other dummies
    assert other.size != tokens.size or not np.array_equal(other, tokens)
    slots = _slots(tokens.size, plan, part_rows)
    held = files.lay_out(*_by_blocks(slots), ADMIT, ASSIGNMENT)
    assert isinstance(held, FileSlotAligned)
    _same_layout(
        held, memory.lay_out(*_by_blocks(slots), ADMIT, ASSIGNMENT), plan, np.random.default_rng(2)
    )


def test_a_file_whose_batches_do_not_settle_its_columns_is_read_whole(tmp_path):
    """IDs that are integers in the first batch and text later: the table is read whole
    (as pandas reads it), with the same records."""
    n = 300
    frame = _frame(n, 6)[["id", "a0", "a1"]].astype({"id": object})
    frame.loc[n - 1, "id"] = "x-last"
    path = _write(frame, tmp_path / "a.csv")
    files, memory, plan = _pair(path, _config(n + 2000), part_rows=40, batch_rows=50)
    assert (files.n, files.digest) == (memory.n, memory.digest)
    np.testing.assert_array_equal(_tokens(files)[0], _tokens(memory)[0])


def test_bad_slots_repeated_ids_and_too_many_records_are_refused(tmp_path):
    n = 500
    path = _write(_frame(n, 7)[["id", "a0", "a1"]], tmp_path / "a.parquet")
    temp = tmp_path / "temp"
    temp.mkdir()
    cfg = _config(n + 2000)  # room for the dummies
    files, _, plan = _pair(path, cfg, part_rows=64, temp_dir=temp)
    (folder,) = temp.iterdir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == ["c", "fp", "keys"]  # parts removed
    slots = _slots(files.tokens(ADMIT)[0], plan, 0)
    with pytest.raises(MessageError, match="slots for"):
        files.lay_out(*_by_blocks(slots[:-1]), ADMIT, ASSIGNMENT)
    with pytest.raises(ConfigError, match="a slot lies outside"):
        files.lay_out(*_by_blocks(slots + plan.max_rows), ADMIT, ASSIGNMENT)
    with pytest.raises(ConfigError, match="two records were given one slot"):
        files.lay_out(
            *_by_blocks(slots // 2), ADMIT, ASSIGNMENT
        )  # 500 records in 1,250 pairs of rows
    assert len(list(temp.iterdir())) == 1  # a failed layout leaves nothing behind
    held = files.lay_out(*_by_blocks(slots), ADMIT, ASSIGNMENT)
    del files, held
    gc.collect()
    assert not any(temp.iterdir())
    spec = cfg.spec.subset(["a0", "a1"])
    twice = _write(_frame(n, 7)[["id", "a0", "a1"]].iloc[[*range(n), 0]], tmp_path / "b.parquet")
    with pytest.raises(RecordIDError, match="2 tokens repeat: records carry duplicated IDs"):
        FileTable(twice, part_rows=64, temp_dir=temp).check("A", spec, "id").partial_records(
            spec, TokenKeys(SECRET, OWN, cfg.run_context()), secure_plan(_config(n + 2001)), 0
        )
    # more records than max_rows, with max_rows above the dummies' reserve (config refuses
    # less, tests/cli/test_cli_max_rows.py): 1,200 records against max_rows 1,199
    many = _write(_frame(1200, 8)[["id", "a0", "a1"]], tmp_path / "c.parquet")
    with pytest.raises(
        ConfigError,
        match="holds at least 1,?2[0-9][0-9] records but the config's max_rows is 1,?199",
    ):
        FileTable(many, part_rows=64, temp_dir=temp).check("A", spec, "id").partial_records(
            spec, TokenKeys(SECRET, OWN, cfg.run_context()), secure_plan(_config(1199)), 0
        )
    assert not any(temp.iterdir())  # an error leaves nothing behind


def _messages(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _held(frame, n):
    """Which of the three parties hold each of ``n`` records (every record by at least
    one; about half by all three)."""
    rng = np.random.default_rng(n)
    held = rng.random((n, 3)) < 0.6
    held[rng.random(n) < 0.5] = True
    held[~held.any(axis=1), 0] = True
    return held


def partial_tables(n, seed):
    """Each party's records (its rows of one table, shuffled) and the config."""
    frame = _frame(n, seed)
    held = _held(frame, n)
    tables = {
        name: frame[["id", *cols]][held[:, i]].sample(frac=1.0, random_state=i)
        for i, (name, cols) in enumerate(PARTIES)
    }
    return tables, _config(n + 2000)


def same_run_bytes(tmp_path, tables, held, cfg):
    """Run partial record sets with the tables in memory and as ``held`` tables (each
    party's state in a folder: the tokens message is written to its kept copy by blocks);
    assert every message and the synthetic sample are the same bytes."""
    keys = {name: KeyPair.generate(name) for name, _ in [*PARTIES, ("server", [])]}
    parties = {k: v for k, v in keys.items() if k != "server"}
    out = {}
    for what, data in (("memory", tables), ("held", held)):
        run = local_run(
            data, cfg, SECRET, seed=11, message_dir=tmp_path / what, keys=parties,
            server_key=keys["server"], state_dir=tmp_path / f"state-{what}",
        )  # fmt: skip
        model = run.fitted(run.run())
        out[what] = _messages(tmp_path / what), model.sample(500, seed=5)
    messages = out["memory"][0]
    assert messages.keys() == out["held"][0].keys() and len(messages) > 10
    assert sum(name.endswith(".tokens") for name in messages) == 3
    for name, blob in messages.items():
        assert blob == out["held"][0][name], name
    pd.testing.assert_frame_equal(out["memory"][1], out["held"][1])


def test_parties_reading_files_write_the_in_memory_runs_bytes(tmp_path):
    """Every message file (commitments, tokens, deals and slot maps, blobs of both
    rounds, releases, request) and the synthetic sample are identical whether each party's
    records are in memory or in a file sorted and laid out 200 records at a time."""
    tables, cfg = partial_tables(3000, 9)
    files = {
        name: FileTable(_write(table, tmp_path / f"{name}.csv"), part_rows=200, batch_rows=500)
        for name, table in tables.items()
    }
    same_run_bytes(tmp_path, tables, files, cfg)


def _peak(path, n, held):
    """Peak traced memory of party A's partial steps on its ``n`` records at ``path``: the
    commitment's digest, the tokens message (hashed as written), the layout at the deal's
    slots (made before tracing: the deal holds them), a block of columns and a count
    table."""
    cfg = _config(2 * n)
    plan, spec = secure_plan(cfg), cfg.spec.subset(["a0", "a1"])
    slots = _slots(n + plan.regions.dummy_rows, plan, 1)

    class Sink:
        def __init__(self):
            self.hash = hashlib.sha256()

        def write(self, data):
            self.hash.update(data)

    gc.collect()
    tracemalloc.start()
    try:
        if held:
            table = FileTable(path, batch_rows=4096, part_rows=4096).check("A", spec, "id")
            records = table.partial_records(
                spec, TokenKeys(SECRET, OWN, cfg.run_context()), plan, 0
            )
        else:
            codes, fps = read_party_table(path, spec, "id", party="A", batch_rows=4096)
            records = MemoryRecords(codes, fps, TokenKeys(SECRET, OWN, cfg.run_context()), plan, 0)
        count, blocks = records.tokens(ADMIT)
        sink = Sink()
        for block in blocks():
            sink.write(block.tobytes())
        aligned = records.lay_out(*_by_blocks(slots[:count]), ADMIT, ASSIGNMENT)
        aligned.histograms([(0, 1)], (4, 3))
        aligned.columns(0, 4096, np.zeros(2, np.int64))
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _peaks_alone(paths):
    """The peaks of ``_peak`` measured in a fresh interpreter: tracemalloc counts every
    thread's allocations, and threads left by other tests (a Dask client's, a pool's) would
    count in this process."""
    script = (
        "import json, sys\n"
        "from tests.party.test_slot_file import _peak\n"
        "paths = {int(n): p for n, p in json.loads(sys.argv[1]).items()}\n"
        "_peak(paths[400_000], 400_000, True)\n"  # compiles the PRF kernel, interns the names
        "print(json.dumps({n: [_peak(p, n, True), _peak(p, n, False)] for n, p in paths.items()}))"
    )
    arg = json.dumps({str(n): str(p) for n, p in paths.items()})
    done = subprocess.run([sys.executable, "-c", script, arg], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).parents[2], check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return {int(n): tuple(v) for n, v in json.loads(done.stdout.splitlines()[-1]).items()}


def test_the_memory_of_partial_records_from_a_file_does_not_grow_with_their_number(tmp_path):
    """numpy reports its arrays to tracemalloc. With batches of 4,096 rows and max_rows twice
    the records (64 parts at 100,000 records, 256 at 400,000: about 1,560 records a part),
    a batch in pass 1 and a part in the later passes hold at most about 4,096 x 100 bytes
    at once (the records, their sorted copy, the sort order, the part of each, the tokens
    or slots), plus the few dummies and a small handle per part file: under 1 MiB whatever
    the records' number (measured: 0.51 MiB at 100,000 records, 0.61 MiB at 400,000, the
    difference the 192 more part files). In memory the records' digest, tokens and layout
    grow with the records (measured: 68 bytes a record)."""
    paths = {n: _write(_frame(n, 10)[["id", "a0", "a1"]], tmp_path / f"{n}.parquet")
             for n in (100_000, 400_000)}  # fmt: skip
    peaks = _peaks_alone(paths)
    held_small, held_large = peaks[100_000][0], peaks[400_000][0]
    assert held_large < 1.5 * held_small  # in memory: 4 times
    assert held_large < 1 << 20
    assert peaks[400_000][1] > 60 * 400_000
    assert peaks[400_000][1] > 3.5 * peaks[100_000][1]


def test_records_that_fit_one_part_are_sorted_in_memory(tmp_path):
    """A max_rows within one part: the file is read and sorted in memory, no part file is
    written, and the records are those the files would give."""
    n = 500
    path = _write(_frame(n, 9)[["id", "a0", "a1"]], tmp_path / "a.parquet")
    temp = tmp_path / "temp"
    temp.mkdir()
    cfg = _config(n + 2000)
    held, memory, plan = _pair(path, cfg, part_rows=n + 2000, temp_dir=temp)
    files, _, _ = _pair(path, cfg, part_rows=n + 1999, temp_dir=temp)
    assert isinstance(held, MemoryRecords) and isinstance(files, TokenFiles)
    assert (held.n, held.digest) == (files.n, files.digest) == (memory.n, memory.digest)
    np.testing.assert_array_equal(_tokens(held)[0], _tokens(files)[0])
