"""A party aligns its table once per run: the first step keeps its aligned records in its
private state folder, and a later step in a new process reads them back instead of aligning
again; a changed data file is still aligned again and refused with the run-changed line, and
altered kept records are not read."""

from __future__ import annotations

import stat

import numpy as np
import pandas as pd
import pytest

import vertimrf.party.records.aligned
import vertimrf.party.records.file_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver.party import PartyDriver
from vertimrf.driver.state import run_folder
from vertimrf.driver.transport import DirectoryTransport
from vertimrf.errors import RunChangedError
from vertimrf.party.records.aligned import AlignedTable
from vertimrf.party.records.file_table import FileTable
from vertimrf.party.records.kept_aligned import KeptAligned
from vertimrf.party.records.table_input import read_party_table
from vertimrf.party.roles import Party
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import secure_plan

SECRET = bytes(range(32))
SIZES = {"a0": 4, "a1": 3, "b0": 5, "c0": 3}
PARTIES = [("A", ["a0", "a1"]), ("B", ["b0"]), ("C", ["c0"])]
KEYS = {name: KeyPair.generate(name) for name, _ in PARTIES}


@pytest.fixture
def alignments(monkeypatch):
    """The number of alignments (each computes the records' PRF values once or per batch)."""
    count = [0]
    for module in (vertimrf.party.records.aligned, vertimrf.party.records.file_table):
        prf = module.keyed_prf

        def counted(*args, prf=prf):
            count[0] += 1
            return prf(*args)

        monkeypatch.setattr(module, "keyed_prf", counted)
    return count


def _config(max_rows):
    return from_preset(
        "default", record_sets="equal",
        epsilon=2.0, delta=1e-6, spec=DomainSpec.from_dict(SIZES), parties=PARTIES,
        method="secure", max_rows=max_rows, secure_buckets=4,
    )  # fmt: skip


def _data(path, n=500, flip=False):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({c: rng.integers(0, SIZES[c], n) for c in ("a0", "a1")})
    frame.loc[0, "a0"] = (frame.loc[0, "a0"] + flip) % 4  # one corrected record
    frame.assign(id=rng.permutation(n)).to_csv(path, index=False)
    return path


def _driver(path, cfg, root, part_rows=1 << 20):
    """Party A's driver over its CSV with its state in ``root / "state"``: what a step
    command makes in a new process."""
    peers = {q: KEYS[q].public() for q in ("B", "C")}
    party = Party(
        "A", FileTable(path, part_rows=part_rows), cfg, SECRET, keypair=KEYS["A"], peers=peers
    )
    transport = DirectoryTransport(root / "inbox", root / "outbox")
    return PartyDriver(party, transport, state_dir=root / "state")


@pytest.mark.parametrize("part_rows", [1 << 20, 100])
def test_a_second_step_reads_the_kept_records_and_aligns_nothing(tmp_path, alignments, part_rows):
    cfg, path = _config(600), _data(tmp_path / "A.csv")
    first = _driver(path, cfg, tmp_path, part_rows)
    first.run_step("commit")
    assert alignments[0] > 0
    alignments[0] = 0
    second = _driver(path, cfg, tmp_path, part_rows)  # a new process, a later step
    aligned = second.party.secure.aligned()
    commitment = second.party.commit()
    assert alignments[0] == 0 and isinstance(aligned, KeptAligned)
    assert commitment == first.party.commit()
    plan, spec = secure_plan(cfg), cfg.spec.subset(["a0", "a1"])
    table, fingerprints = read_party_table(path, spec, "id", party="A")
    memory = AlignedTable(
        table.codes, fingerprints, SECRET, cfg.run_context(), plan.buckets, plan.capacity,
        plan.max_rows,
    )  # fmt: skip
    offsets = np.array([0, 4])
    assert (aligned.n, aligned.record_digest) == (memory.n, memory.record_digest)
    assert aligned.data_digest == memory.data_digest
    np.testing.assert_array_equal(
        aligned.columns(0, plan.rows, offsets), memory.columns(0, plan.rows, offsets)
    )
    np.testing.assert_array_equal(
        aligned.columns(37, 301, offsets), memory.columns(37, 301, offsets)
    )
    attrs = [(0,), (1, 0)]
    for got, want in zip(
        aligned.histograms(attrs, (4, 3)), memory.histograms(attrs, (4, 3)), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    kept = run_folder(tmp_path / "state", cfg.config_hash()) / "aligned"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o700
    for name in ("slots.npy", "codes.npy", "aligned.json"):
        assert stat.S_IMODE((kept / name).stat().st_mode) == 0o600


def test_a_changed_data_file_is_aligned_again_and_refused(tmp_path, alignments):
    cfg, path = _config(600), _data(tmp_path / "A.csv")
    _driver(path, cfg, tmp_path).run_step("commit")
    _data(path, flip=True)
    alignments[0] = 0
    with pytest.raises(RunChangedError) as caught:
        _driver(path, cfg, tmp_path)
    assert alignments[0] > 0
    line = str(caught.value)
    assert "this run has released; a corrected table needs a new config" in line
    assert "\n" not in line


def test_altered_kept_records_are_not_read(tmp_path, alignments):
    cfg, path = _config(600), _data(tmp_path / "A.csv")
    first = _driver(path, cfg, tmp_path)
    first.run_step("commit")
    codes = run_folder(tmp_path / "state", cfg.config_hash()) / "aligned" / "codes.npy"
    data = bytearray(codes.read_bytes())
    data[-1] ^= 1
    codes.write_bytes(bytes(data))
    alignments[0] = 0
    second = _driver(path, cfg, tmp_path)  # aligned again, and kept anew
    assert alignments[0] > 0
    assert second.party.secure.aligned().data_digest == first.party.secure.aligned().data_digest
    alignments[0] = 0
    _driver(path, cfg, tmp_path).party.secure.aligned()
    assert alignments[0] == 0


def _paper_config(max_rows):
    return from_preset(
        "default", record_sets="equal",
        epsilon=2.0, delta=1e-6, spec=DomainSpec.from_dict(SIZES), parties=PARTIES,
        method="secure", secure_pipeline="paper", max_rows=max_rows,
    )  # fmt: skip


def _paper_party(path, cfg):
    """Party A of the paper pipeline over its table read into memory, as a step command
    makes it in a new process."""
    table, ids = read_party_table(path, cfg.spec.subset(["a0", "a1"]), "id", party="A")
    peers = {q: KEYS[q].public() for q in ("B", "C")}
    return Party("A", table, cfg, SECRET, keypair=KEYS["A"], peers=peers, ids=ids, seed=5)


def test_the_paper_pipeline_keeps_its_in_memory_records_for_later_processes(tmp_path, alignments):
    cfg, path = _paper_config(600), _data(tmp_path / "A.csv")
    folder = tmp_path / "state" / "aligned"
    first = _paper_party(path, cfg)
    first.keep_aligned(folder)  # before the secure product is set up: applied once it is
    message = first.release(noisy_count=first.release_count())
    alignments[0] = 0
    commitment = first.commit()
    assert alignments[0] > 0 and isinstance(first.secure.aligned(), KeptAligned)
    memory = first.secure.aligned()
    alignments[0] = 0
    second = _paper_party(path, cfg)  # a later step: set up on the kept local message
    second.keep_aligned(folder)
    second.resume_release(message)
    aligned = second.secure.aligned()
    assert alignments[0] == 0 and isinstance(aligned, KeptAligned)
    assert second.commit() == commitment
    plan = secure_plan(cfg)
    offsets = np.array([0, 4])
    assert (aligned.n, aligned.record_digest) == (memory.n, memory.record_digest)
    np.testing.assert_array_equal(
        aligned.columns(0, plan.rows, offsets), memory.columns(0, plan.rows, offsets)
    )
    unkept = _paper_party(path, cfg)  # the same records aligned in memory, nothing kept
    unkept.resume_release(message)
    np.testing.assert_array_equal(
        unkept.secure.aligned().columns(0, plan.rows, offsets),
        aligned.columns(0, plan.rows, offsets),
    )
    assert unkept.commit() == commitment


def test_the_paper_pipeline_aligns_a_corrected_table_again(tmp_path, alignments):
    cfg, path = _paper_config(600), _data(tmp_path / "A.csv")
    folder = tmp_path / "state" / "aligned"
    first = _paper_party(path, cfg)
    first.keep_aligned(folder)
    message = first.release(noisy_count=first.release_count())
    first.commit()
    _data(path, flip=True)  # one corrected record: another binding
    second = _paper_party(path, cfg)
    second.keep_aligned(folder)
    second.resume_release(message)
    alignments[0] = 0
    assert second.commit() != first.commit()
    assert alignments[0] > 0


def test_a_paper_step_command_keeps_the_aligned_records_in_its_state(tmp_path):
    cfg, path = _paper_config(600), _data(tmp_path / "A.csv")

    def driver():
        transport = DirectoryTransport(tmp_path / "inbox", tmp_path / "outbox")
        return PartyDriver(_paper_party(path, cfg), transport, state_dir=tmp_path / "state")

    driver().run_step("local")
    second = driver()  # a new process: the commit step sets up the secure product
    second.run_step("commit")
    assert isinstance(second.party.secure.aligned(), KeptAligned)
    kept = run_folder(tmp_path / "state", cfg.config_hash()) / "aligned"
    assert (kept / "aligned.json").is_file()
