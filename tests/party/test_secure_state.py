"""method="secure": the party's private state between release and measure, and the
block-wise products (masks expanded a block of rows at a time)."""

from __future__ import annotations

import io
import os
import stat
import zipfile

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.secure_runs import (
    assert_shares_sum_to_the_exact_product,
    commitments,
    exchange,
    secure_parties,
)
from vertimrf.errors import ConfigError, MessageError, PrivacyBudgetError
from vertimrf.party.secure import SecureParty
from vertimrf.party.secure.step_data import StepData
from vertimrf.product import dealer
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.protocol.secure.widths import feature_width

SIZES = [[2, 3, 4], [3, 2], [4, 2]]


def _released(n=60, seed=3, **kwargs):
    """A 3-party run up to the first release: config, members, server, deals, blobs."""
    cfg, spec, members, server, public, codes = secure_parties(SIZES, n, seed, rows=n + 5, **kwargs)
    deals = server.deal(public, commitments(members))
    blobs = exchange(members, deals)
    firsts = [m.release(blobs[name]) for name, m in members.items()]
    request = server.select(firsts)
    return cfg, members, deals, blobs, request


def _twin(member: SecureParty, **changes) -> SecureParty:
    """A new SecureParty object for the same party, data and keys (a new process)."""
    config = changes.get("config", member.config)
    keys = {q: k for q, k in changes.get("peers", member._peers).items()}
    return SecureParty(
        member.name,
        changes.get("data", member._table_frame),
        config,
        SECRET,
        member.session.keypair,
        keys,
        seed=member.session.seed,
    )


@pytest.fixture()
def run(monkeypatch):
    # Keep what a new process needs to rebuild a party (its input frame and peer keys).
    original = SecureParty.__init__

    def init(self, name, data, config, secret, keypair, peers, **kw):
        original(self, name, data, config, secret, keypair, peers, **kw)
        self._table_frame, self._peers = data, dict(peers)

    monkeypatch.setattr(SecureParty, "__init__", init)
    return _released()


def _same_release(a, b):
    assert a.party == b.party and a.release == b.release and a.digest == b.digest
    assert a.within.keys() == b.within.keys() and a.cross.keys() == b.cross.keys()
    for m in a.within:
        np.testing.assert_array_equal(a.within[m], b.within[m])
    for k in a.cross:
        np.testing.assert_array_equal(a.cross[k], b.cross[k])


def test_measure_from_the_state_equals_measure_in_process_and_from_the_blobs(run, tmp_path):
    cfg, members, deals, blobs, request = run
    for name, member in members.items():
        path = tmp_path / f"{name}.state.vmrf"
        member.save_state(path, binding="inputs")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        with zipfile.ZipFile(path) as zf:
            assert not any(n.endswith(".pkl") or n.endswith(".pickle") for n in zf.namelist())
        from_state = _twin(member)
        from_state.load_state(path, deal=deals[name], binding="inputs")
        from_blobs = _twin(member)
        from_blobs.open_deal(deals[name])
        expected = member.measure(request)
        _same_release(from_state.measure(request), expected)
        _same_release(from_blobs.measure(request, blobs[name]), expected)
        # The state marks the first release as done: no second one from it.
        with pytest.raises((PrivacyBudgetError, ConfigError)):
            from_state.release(blobs[name])
        with pytest.raises(PrivacyBudgetError):
            from_state.measure(request)


def test_a_foreign_state_is_refused(run, tmp_path):
    cfg, members, deals, blobs, request = run
    a, b = members["P0"], members["P1"]
    path = tmp_path / "P0.state.vmrf"
    a.save_state(path, binding="x")
    # another party's state
    b_path = tmp_path / "P1.state.vmrf"
    b.save_state(b_path, binding="x")
    with pytest.raises(MessageError, match="another party"):
        _twin(a).load_state(b_path, binding="x")
    # another run (another config: another nonce)
    other = _twin(a, config=cfg.with_changes(run_nonce="cd" * 16))
    with pytest.raises(MessageError, match="another run"):
        other.load_state(path, binding="x")
    # another data set (one record fewer)
    fewer = _twin(a, data=a._table_frame.iloc[1:])
    with pytest.raises(MessageError, match="another data set"):
        fewer.load_state(path, binding="x")
    # another deal, and other input files
    with pytest.raises(MessageError, match="another deal"):
        _twin(a).load_state(path, deal=deals["P1"], binding="x")
    with pytest.raises(MessageError, match="other input files"):
        _twin(a).load_state(path, binding="y")
    # an altered file
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2] ^= 1
    bad = tmp_path / "altered.vmrf"
    bad.write_bytes(bytes(raw))
    with pytest.raises(MessageError):
        _twin(a).load_state(bad, binding="x")
    # the right one loads
    twin = _twin(a)
    twin.load_state(path, deal=deals["P0"], binding="x")
    assert SELECT in twin._step.done


def test_the_step_data_writes_the_state_files_bytes_and_reads_them_back(run, tmp_path):
    """The step data saved to a buffer holds the state file's bytes, and a new step data
    reads the same shares, record-set digest and steps back from those bytes."""
    _, members, deals, _, _ = run
    member = members["P0"]
    path = tmp_path / "P0.state.vmrf"
    member.save_state(path, binding="x")
    buffer = io.BytesIO()
    member._step.save(buffer, member.session, "x")
    assert buffer.getvalue() == path.read_bytes()
    step = StepData()
    step.load(io.BytesIO(buffer.getvalue()), member.session, "x", deals["P0"])
    assert step.digest == member._step.digest and step.done == member._step.done
    assert step.shares is not None and member._step.shares is not None
    assert step.shares.keys() == member._step.shares.keys()
    for key, share in member._step.shares.items():
        np.testing.assert_array_equal(step.shares[key], share)


def test_save_state_needs_the_release(run, tmp_path):
    _, members, deals, _, _ = run
    fresh = _twin(members["P0"])
    fresh.open_deal(deals["P0"])
    with pytest.raises(ConfigError, match="release"):
        fresh.save_state(tmp_path / "s.vmrf")


def test_block_wise_products_give_the_exact_cross_counts(monkeypatch):
    """With tiny blocks (many partial ones, and blocks that start mid AES block), every
    pair's shares still sum to X^T Y exactly."""
    monkeypatch.setattr(wire, "ROW_BLOCK_WORDS", 7)
    monkeypatch.setattr(dealer, "DEAL_BLOCK_WORDS", 11)
    assert_shares_sum_to_the_exact_product(SIZES, 37, 1, rows=45)


@pytest.mark.parametrize(
    ("max_rows", "width"),
    [(1, 576), (32768, 576), (65536, 576), (65537, 512), (131072, 512), (131073, 256),
     (262144, 256),
     (1 << 20, 64), (1_000_000, 64), (1 << 22, 16), (1 << 23, 10), (1 << 30, 10)],
)  # fmt: skip
def test_auto_feature_width_from_max_rows(max_rows, width):
    cfg, *_ = secure_parties([[2, 10], [3]], 5, 0)
    # A memory limit above any of these runs' estimates (2^30 rows need ~100 GB per party).
    cfg = cfg.with_changes(max_rows=max_rows, max_memory_gb=1e4)
    assert cfg.options.feature_width == "auto"
    assert feature_width(cfg) == width
    assert feature_width(cfg.with_changes(secure_feature_width=48)) == 48
