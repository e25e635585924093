"""Partial record sets, a party's later processes: with a state folder, the records' digest
and sorted tokens are kept at the commitment and their layout at the deal, bound to the run,
the party and its table (and the layout to the admit digest and the assignment). A later
process of the run then reads neither its table nor sorts its records, and writes the same
bytes; a corrected table, or altered kept tokens, are read again."""

from __future__ import annotations

import numpy as np

from tests.secure_runs import PARTIAL_SERVER_KEY, partial_deals, partial_parties
from vertimrf.party.records.kept_aligned import KeptAligned
from vertimrf.server.secure import SecureServer


def test_a_later_process_reads_the_kept_digest_and_layout_and_writes_the_same_bytes(
    tmp_path, monkeypatch
):
    cfg, members, public, _, _, keys = partial_parties(keep=tmp_path)
    server, deals = partial_deals(members, public)
    blobs = {n: m.features(*deals[n]) for n, m in members.items()}
    first = members["P0"]
    assert (tmp_path / "P0" / "partial" / "records.json").is_file()
    assert isinstance(first.aligned(), KeptAligned)  # laid out, then read back as kept

    def refuse(*args, **kwargs):
        raise AssertionError("the records were read again")

    later = partial_parties(keep=tmp_path, keys=keys, nonce=cfg.run_nonce)[1]["P0"]
    monkeypatch.setattr("vertimrf.party.records.memory.MemoryRecords", refuse)
    assert later.commitment() == first.commitment()
    assert later.features(*deals["P0"]) == blobs["P0"]
    rows, offsets = first.plan.rows, np.zeros(2, np.int64)
    np.testing.assert_array_equal(
        later.aligned().columns(0, rows, offsets), first.aligned().columns(0, rows, offsets)
    )


def test_a_corrected_table_is_read_again(tmp_path, monkeypatch):
    cfg, members, public, _, _, keys = partial_parties(keep=tmp_path)
    _, deals = partial_deals(members, public)
    members["P0"].features(*deals["P0"])
    reads = []
    from vertimrf.party.records import memory as state

    real = state.MemoryRecords

    def counted(*args, **kwargs):
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(state, "MemoryRecords", counted)
    corrected = partial_parties(keep=tmp_path, keys=keys, nonce=cfg.run_nonce, flip=True)[1]["P0"]
    assert corrected.commitment() != members["P0"].commitment() and reads


def test_a_later_process_makes_the_token_list_from_the_kept_tokens(tmp_path, monkeypatch):
    cfg, members, public, _, _, keys = partial_parties(keep=tmp_path)
    first = members["P0"]
    admit = (
        SecureServer(cfg, seed=4, keypair=PARTIAL_SERVER_KEY)
        .admit({n: m.commitment() for n, m in members.items()}, public)
        .digest
    )
    tokens = first.tokens(admit)
    assert (tmp_path / "P0" / "partial" / "tokens.npy").is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("the records were read again")

    later = partial_parties(keep=tmp_path, keys=keys, nonce=cfg.run_nonce)[1]["P0"]
    monkeypatch.setattr("vertimrf.party.records.memory.MemoryRecords", refuse)
    np.testing.assert_array_equal(later.tokens(admit), tokens)
    assert later.commitment() == first.commitment()


def test_altered_kept_tokens_are_not_read(tmp_path):
    cfg, members, public, _, _, keys = partial_parties(keep=tmp_path)
    admit = (
        SecureServer(cfg, seed=4, keypair=PARTIAL_SERVER_KEY)
        .admit({n: m.commitment() for n, m in members.items()}, public)
        .digest
    )
    tokens = members["P0"].tokens(admit)
    kept = tmp_path / "P0" / "partial" / "tokens.npy"
    data = bytearray(kept.read_bytes())
    data[-1] ^= 1
    kept.write_bytes(bytes(data))
    later = partial_parties(keep=tmp_path, keys=keys, nonce=cfg.run_nonce)[1]["P0"]
    np.testing.assert_array_equal(later.tokens(admit), tokens)  # made again from the table
