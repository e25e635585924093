"""method="secure" streams every feature blob in and out by row blocks: a party's peak
memory in each step is set by the block size (and the blobs it sends, unless its driver
writes them to its state as they are sealed), not by max_rows, and the block size changes
no byte of any output."""

from __future__ import annotations

import io
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import SECRET
from tests.secure_runs import commitments, split
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.errors import ChannelError
from vertimrf.party.secure import SecureParty
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.features import (
    block_rows,
    feature_blob_bytes,
    open_feature_blocks,
    open_features,
    seal_feature_blocks,
    seal_features,
    write_feature_blocks,
)
from vertimrf.server.secure import SecureServer

SIZES = [[8, 8, 4, 4], [8, 8, 4]]  # widths 24 and 20: wide rows, few columns per row
WIDE = [[16, 16], [4, 4]]  # P0: 32 values a row in 2 columns
# The blocks of the memory tests: at the default (2^20 values) a block holds every row of a
# 2^14-row run, and the growth from 2^14 to 2^17 rows would be the blocks' own.
TEST_BLOCK = 1 << 16
N = 200
SEED = 3
STEPS = ("features", "release", "groups", "measure")


class _Run:
    """A seeded two-round run of SIZES at ``rows`` whose parties' steps can be traced; the
    run nonce, key pairs and the server's deals are taken from ``like`` when given, so
    that two runs can be compared byte for byte."""

    def __init__(self, rows: int, like: _Run | None = None) -> None:
        nonce = {} if like is None else {"run_nonce": like.cfg.run_nonce}
        cfg, _, frame, parties = split(SIZES, N, SEED, rows=rows, **nonce)
        self.cfg = cfg
        if like is None:
            self.keys = {name: KeyPair.generate(name) for name, _ in parties}
        else:
            self.keys = like.keys
        public = {name: k.public() for name, k in self.keys.items()}
        self.plan = secure_plan(cfg)
        self.members = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SmallTableWarning)
            for name, names in parties:
                part = frame[names].assign(id=np.arange(N)).sample(frac=1.0, random_state=SEED)
                others = {q: k for q, k in public.items() if q != name}
                self.members[name] = SecureParty(
                    name, part, cfg, SECRET, self.keys[name], others, seed=SEED
                )
        server = SecureServer(cfg, seed=SEED)
        self.deals = server.deal(public, commitments(self.members)) if like is None else like.deals
        p0, p1 = self.plan.attrs
        self.request = self.plan.check_request([p0[2:4] + p1[1:3], (p0[0], p1[0])])
        server.data.request = self.request  # the server's selection, fixed by the test
        self.group_deals = server.group_deals(public) if like is None else like.group_deals
        self.peaks: dict[tuple[str, str], int] = {}
        self.out: dict[tuple[str, str], object] = {}

    def _traced(self, step: str, name: str, fn, *args):
        tracemalloc.start()
        try:
            out = fn(*args)
            self.peaks[step, name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        self.out[step, name] = out

    def run(self) -> _Run:
        ms = self.members
        for name, m in ms.items():
            self._traced("features", name, lambda m, d: dict(m.features(d)), m, self.deals[name])
        inbox = {n: {q: self.out["features", q][n] for q in ms if q != n} for n in ms}
        for name, m in ms.items():
            self._traced("release", name, lambda m, b: m.release(b).fingerprint(), m, inbox[name])
        for name, m in ms.items():
            deal = self.group_deals[name]
            self._traced("groups", name, lambda m, d: dict(m.groups(d, self.request)), m, deal)
        second = {n: {q: self.out["groups", q][n] for q in ms if q != n} for n in ms}
        for name, m in ms.items():
            blobs = (inbox[name], second[name])
            self._traced(
                "measure", name, lambda m, b: m.measure(self.request, *b).fingerprint(), m, blobs
            )
        return self


def _sent(run: _Run, step: str, name: str) -> int:
    """The bytes of the blobs ``name`` sends in ``step`` (none in release and measure)."""
    out = run.out[step, name]
    return sum(len(b) for b in out.values()) if isinstance(out, dict) else 0


def test_a_partys_peak_memory_is_set_by_the_block_size_not_by_max_rows(monkeypatch):
    """tracemalloc peaks of each step at max_rows 2^14 and 2^17 (same 200 records, same
    request). What the code still holds in proportion to max_rows: the blob it sends
    (features, groups) and the aligned columns, 8 d_p bytes a row (made by features); every
    other array is a block of at most ROW_BLOCK_WORDS ring values or a k_p x k_q share.
    So the growth is at most the sent blobs' growth, plus the columns' in features, plus
    the block buffers at 2^17 (ROW_BLOCK_WORDS 8-byte words).
    Measured (MB, P0 / P1, growth from 2^14 to 2^17, blocks of TEST_BLOCK values): features
    12.4 / 10.0, release 0.05 / 0.07, groups 5.8 / 11.6, measure 0.07 / 0.11; before
    streaming (5c7e61c), where each step held R x k matrices of words: 23.5 / 19.1, 20.2 /
    11.1, 13.0 / 26.3, 47.9 / 23.9.
    """
    monkeypatch.setattr(wire, "ROW_BLOCK_WORDS", TEST_BLOCK)
    _Run(256).run()  # the kernels loaded before anything is traced
    small, large = _Run(1 << 14).run(), _Run(1 << 17).run()
    block = 8 * wire.ROW_BLOCK_WORDS
    for p, name in enumerate(small.plan.names):
        d_p = len(small.plan.attrs[p])
        columns = 8 * d_p * ((1 << 17) - (1 << 14))
        for step in STEPS:
            growth = large.peaks[step, name] - small.peaks[step, name]
            sent = _sent(large, step, name) - _sent(small, step, name)
            bound = sent + (columns if step == "features" else 0) + block
            assert growth < bound, (step, name, growth, bound)
    # The slack is less than one R x k matrix of words, which each step held before.
    words = np.dtype(large.plan.word).itemsize * ((1 << 17) - (1 << 14)) * min(large.plan.widths)
    assert block < words


@pytest.fixture(scope="module")
def reference() -> _Run:
    """A run at 211 rows (a prime above N) with the default blocks, which hold every row."""
    return _Run(211).run()


@pytest.mark.parametrize(
    "words", [1, *(pytest.param(w, marks=pytest.mark.slow) for w in (7, 1 << 30))]
)
def test_the_block_size_changes_no_output_byte(monkeypatch, reference, words):
    """Every blob and every release of both rounds is the same byte for byte whether the
    blocks hold one row (1, 7 values: fewer than a row), a few, or all rows."""
    rows = 211  # as the reference; 7 values: one row
    monkeypatch.setattr(wire, "ROW_BLOCK_WORDS", words)
    assert block_rows(24) == max(1, words // 24)
    again = _Run(rows, reference).run()
    for key, value in reference.out.items():
        if isinstance(value, dict):
            assert {q: bytes(b) for q, b in value.items()} == {
                q: bytes(b) for q, b in again.out[key].items()
            }, key
        else:
            assert value == again.out[key], key


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    rows=st.integers(0, 40),
    width=st.integers(0, 5),
    step=st.integers(1, 45),
    wide=st.booleans(),
    data=st.data(),
)
def test_blocks_seal_and_open_as_one_matrix(rows, width, step, wide, data):
    """Sealing row blocks, in memory or to a file, gives the bytes of sealing the stacked
    matrix; reading blocks of any size gives its rows in order, and an altered byte fails
    only once every block has been read (ChannelError), so nothing made of the blocks may
    be kept before."""
    word = np.uint64 if wide else np.uint32
    word_bytes = data.draw(st.integers(1, np.dtype(word).itemsize))
    rng = np.random.default_rng(rows * 64 + width)
    values = rng.integers(0, 1 << (8 * word_bytes), (rows, width), dtype=np.uint64).astype(word)
    key, digest, nonce = bytes(32), bytes(range(32)), bytes(12)
    args = (b"run", "A", "B")
    whole = seal_features(key, values, *args, digest, nonce=nonce, word_bytes=word_bytes)
    cuts = [values[r : r + step] for r in range(0, rows, step)]
    shape = (rows, width)
    sealed = seal_feature_blocks(
        key, cuts, shape, *args, digest, word=word, nonce=nonce, word_bytes=word_bytes
    )
    assert sealed == whole
    written = io.BytesIO()
    write_feature_blocks(
        written, key, iter(cuts), shape, *args, digest, word=word, nonce=nonce,
        word_bytes=word_bytes,
    )  # fmt: skip
    assert written.getvalue() == whole
    assert len(whole) == feature_blob_bytes(shape, word, word_bytes)
    got, blocks = open_feature_blocks(
        key, whole, *args, shape, step, word=word, word_bytes=word_bytes
    )
    read = [(r0, r1, block.copy()) for r0, r1, block in blocks]
    assert got == digest
    assert [(r0, r1) for r0, r1, _ in read] == [
        (r, min(rows, r + step)) for r in range(0, rows, step)
    ]
    if rows:
        np.testing.assert_array_equal(np.vstack([b for *_, b in read]), values)
    bad = bytearray(whole)
    bad[-1] ^= 1  # the tag
    _, blocks = open_feature_blocks(key, bad, *args, shape, step, word=word, word_bytes=word_bytes)
    seen = 0
    with pytest.raises(ChannelError):
        for _ in blocks:
            seen += 1
    assert seen == len(read)  # every block was handed out before the tag failed
    np.testing.assert_array_equal(
        open_features(key, whole, *args, shape, word=word, word_bytes=word_bytes)[0], values
    )


def _driven_features(tmp_path, rows: int, *, state: bool) -> tuple[int, int]:
    """Party P0's traced peak in the driver's features step (a state folder or none; every
    message through files) and the length of its blob, for a table of WIDE."""
    cfg, _, frame, parties = split(WIDE, N, SEED, rows=rows, run_nonce="cd" * 16)
    data = {name: frame[names].assign(id=np.arange(N)) for name, names in parties}
    where = tmp_path / f"{rows}-{state}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallTableWarning)
        run = local_run(
            data, cfg, SECRET, seed=SEED, message_dir=where / "mail",
            state_dir=where / "state" if state else None,
        )  # fmt: skip
    for driver in run.parties:
        driver.run_step("commit")
    run.server.run_step("deal")
    (party,) = [d for d in run.parties if d.name == "P0"]
    tracemalloc.start()
    try:
        party.run_step("features")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    blob = run_plan(cfg).blob_bytes["P0"]
    assert (where / "mail" / "P1" / "P0.features").stat().st_size == blob
    return peak, blob


def test_a_party_with_a_state_writes_each_blob_as_it_is_sealed(tmp_path, monkeypatch):
    """With a state folder, the features step writes each blob to its kept copy while
    sealing it, so from max_rows 2^14 to 2^17 its peak grows by the aligned columns (8 d_p
    bytes a row, d_p = 2) and one row block at most, not by a blob (3 bytes a value at
    2^17, k_P0 = 32: 96 bytes a row); without a state the step makes each blob in memory,
    and its peak grows by at least the blob's growth. Measured growth (MB): 1.83 with a
    state (the columns: 1.83), 13.4 without; blob growth 11.5."""
    monkeypatch.setattr(wire, "ROW_BLOCK_WORDS", TEST_BLOCK)
    _driven_features(tmp_path, 256, state=True)  # the kernels loaded before anything is traced
    small, small_blob = _driven_features(tmp_path, 1 << 14, state=True)
    large, blob = _driven_features(tmp_path, 1 << 17, state=True)
    columns = 8 * 2 * ((1 << 17) - (1 << 14))
    block = 8 * wire.ROW_BLOCK_WORDS
    assert large - small < columns + block < blob - small_blob
    in_memory = _driven_features(tmp_path, 1 << 17, state=False)[0]
    in_memory -= _driven_features(tmp_path, 1 << 14, state=False)[0]
    assert in_memory > blob - small_blob
