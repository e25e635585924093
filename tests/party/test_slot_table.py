"""Partial record sets through the real secure product: each party's tokens, the server's
slots, each party's records laid out at its slots; every pair's two shares (the noiseless
sum, read from the parties' state: the test hook) equal X_p^T X_q over exactly the records
both parties hold, by brute force. Overlaps 100%, 80%, 30%, one record and none; 2 and 3
parties."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.secure_runs import commitments, exchange, split
from vertimrf.crypto.keys import KeyPair
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.slot_table import SlotAligned, SlotTable
from vertimrf.party.records.tokens import TokenKeys, make_tokens, order_tokens, record_slots
from vertimrf.party.secure import SecureParty
from vertimrf.party.secure.shares import shares
from vertimrf.protocol.regions import RegionNoise
from vertimrf.server.secure import SecureServer
from vertimrf.server.slots import assign_slots

RUN, ADMIT, SERVER = b"run", bytes(32), bytes(range(1, 33))


def _holders(n, m, overlap, rng):
    """Which parties hold each of n records: all of them with probability ``overlap``,
    else one or more at random (never none)."""
    held = rng.random((n, m)) < 0.5
    held[rng.random(n) < overlap] = True
    held[~held.any(axis=1), 0] = True
    return held


def _run(sizes, n, held, seed):
    m = len(sizes)
    cfg, spec, frame, parties = split(sizes, n, seed, rows=4 * n + 400)
    plan_rows = cfg.max_rows
    noise = RegionNoise(m, 0.5, 1e-6, 1e-6)
    keys = {name: KeyPair.generate(name) for name, _ in parties}
    public = {name: k.public() for name, k in keys.items()}
    encoded, fps, tokens = {}, {}, {}
    for i, (name, names) in enumerate(parties):
        rows = np.flatnonzero(held[:, i])
        encoded[name] = TableEncoder(spec.subset(names)).table(frame.iloc[rows][names])
        fps[name] = record_fingerprints(rows)
        own = TokenKeys(SECRET, bytes([i + 1]) * 32, RUN)
        tokens[name] = make_tokens(order_tokens(fps[name], own), own, ADMIT, noise, i)
    slots = assign_slots({i: tokens[name].sorted for i, (name, _) in enumerate(parties)},
                         noise, plan_rows, SERVER, RUN)  # fmt: skip
    members = {}
    for i, (name, _) in enumerate(parties):
        table = SlotTable(encoded[name], fps[name], record_slots(tokens[name], slots.of(i)),
                          slots.digest)  # fmt: skip
        peers = {q: k for q, k in public.items() if q != name}
        members[name] = SecureParty(name, table, cfg, SECRET, keys[name], peers, seed=seed)
    server = SecureServer(cfg, seed=seed)
    for name, blobs in exchange(members, server.deal(public, commitments(members))).items():
        members[name]._step.shares = shares(members[name].session, members[name]._step, blobs)
    codes = TableEncoder(spec).table(frame).codes.astype(np.int64)
    return server.plan, spec, members, codes


@pytest.mark.parametrize("sizes", [[[2, 3], [3, 2]], [[2, 3], [3], [4, 2]]])
@pytest.mark.parametrize("case", ["100%", "80%", "30%", "one record", "none"])
def test_shares_sum_to_the_counts_over_the_records_both_parties_hold(sizes, case):
    n, m = 120, len(sizes)
    rng = np.random.default_rng(len(case) + m)
    if case in ("one record", "none"):
        held = np.zeros((n, m), bool)
        held[:, 0] = rng.random(n) < 0.5  # each record held by party 0 or by party 1 alone
        held[~held[:, 0], 1] = True
        if case == "one record":
            held[7] = True  # record 7 is every party's
    else:
        held = _holders(n, m, {"100%": 1.0, "80%": 0.8, "30%": 0.3}[case], rng)
    plan, spec, members, codes = _run(sizes, n, held, seed=m)
    layout = plan.layout()
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = plan.signed(
            members[plan.names[p]]._step.shares[key] + members[plan.names[q]]._step.shares[key]
        )
        both = held[:, p] & held[:, q]
        exact = np.zeros(layout.shape(p, q), np.int64)
        for a in plan.attrs[p]:  # brute force: one record at a time
            r0 = layout.offset(p, q, (a,))
            for b in plan.attrs[q]:
                c0 = layout.offset(q, p, (b,))
                for r in np.flatnonzero(both):
                    exact[r0 + codes[r, a], c0 + codes[r, b]] += 1
        np.testing.assert_array_equal(total, exact, err_msg=f"{case}: pair {key}")
        if case == "none":
            assert not total.any()


def test_one_slot_given_twice_is_refused():
    codes = np.zeros((2, 1), np.int32)
    with pytest.raises(ConfigError, match="one slot"):
        SlotAligned(codes, np.arange(2, dtype=np.uint64), np.array([3, 3]), bytes(32))
