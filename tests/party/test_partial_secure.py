"""Partial record sets through the secure roles in one process: commit, the server's admit
digest, each party's tokens, the deal with its slots, features and shares. Every pair's
shares sum to the counts over exactly the records both parties hold (brute force), the
server publishes one noisy count per region, and a re-run on the same inputs deals and
lays out the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.secure_runs import exchange, split
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.party.secure import SecureParty
from vertimrf.protocol.regions import regions_of
from vertimrf.server.secure import SecureServer

SIZES = [[2, 3], [3], [4, 2]]


def _holders(n, m, rng):
    held = rng.random((n, m)) < 0.6
    held[rng.random(n) < 0.5] = True
    held[~held.any(axis=1), 0] = True
    return held


def _parties(n=150, seed=4, keys=None, nonce=""):
    cfg, spec, frame, parties = split(SIZES, n, seed, rows=4000, record_sets="partial")
    cfg = cfg.with_changes(run_nonce=nonce) if nonce else cfg
    held = _holders(n, len(parties), np.random.default_rng(seed))
    keys = keys or {name: KeyPair.generate(name) for name, _ in parties}
    public = {name: k.public() for name, k in keys.items()}
    members = {}
    for i, (name, names) in enumerate(parties):
        part = frame[names].assign(id=np.arange(n))[held[:, i]].sample(frac=1.0, random_state=i)
        peers = {q: k for q, k in public.items() if q != name}
        members[name] = SecureParty(name, part, cfg, SECRET, keys[name], peers, seed=seed)
    codes = TableEncoder(spec).table(frame).codes.astype(np.int64)
    return cfg, members, public, held, codes, keys


SERVER_KEY = KeyPair.generate("server")


def _dealt(members, public, seed=4):
    config = next(iter(members.values())).config
    server = SecureServer(config, seed=seed, keypair=SERVER_KEY)
    commitments = {name: m.commitment() for name, m in members.items()}
    admit = server.admit(commitments)
    tokens = {name: m.tokens(admit) for name, m in members.items()}
    return server, server.deal(public, commitments, tokens)


def test_shares_count_the_records_both_parties_hold_and_the_regions_are_published():
    cfg, members, public, held, codes, _ = _parties()
    server, deals = _dealt(members, public)
    for name, blobs in exchange(members, deals).items():
        members[name]._state["shares"] = members[name]._shares(blobs)
    plan, layout = server.plan, server.plan.layout()
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = plan.signed(
            members[plan.names[p]]._state["shares"][key]
            + members[plan.names[q]]._state["shares"][key]
        )
        exact = np.zeros(layout.shape(p, q), np.int64)
        for a in plan.attrs[p]:
            for b in plan.attrs[q]:
                r0, c0 = layout.offset(p, q, (a,)), layout.offset(q, p, (b,))
                for r in np.flatnonzero(held[:, p] & held[:, q]):
                    exact[r0 + codes[r, a], c0 + codes[r, b]] += 1
        np.testing.assert_array_equal(total, exact)
    released = server.regions_released
    assert released is not None and sorted(released) == list(regions_of(3))
    noise = plan.regions
    for t, r in released.items():  # r = c + Z + zeta, |Z| <= offset, zeta a discrete Gaussian
        exact = int(np.sum(np.all(held == [bool(t >> i & 1) for i in range(3)], axis=1)))
        assert abs(r - exact) <= noise.offset + 6 * noise.sigma


def test_the_same_inputs_deal_the_same_bytes_and_other_data_fresh_ones():
    """New objects for the same run, data and keys (new processes): the same admit digest,
    tokens, slots, region counts and deal bytes. A party that holds one record fewer
    changes its commitment, so the admit digest, every party's dummies and every deal."""
    cfg, members, public, _, _, keys = _parties()
    server, deals = _dealt(members, public)
    _, again, _, _, _, _ = _parties(keys=keys, nonce=cfg.run_nonce)
    server2, deals2 = _dealt(again, public)
    assert deals == deals2 and server.regions_released == server2.regions_released
    _, fewer, _, _, _, _ = _parties(n=149, keys=keys, nonce=cfg.run_nonce)
    server3, deals3 = _dealt(fewer, public)
    assert all(deals3[name] != deals[name] for name in deals)
    commitments = {name: m.commitment() for name, m in fewer.items()}
    admit = server3.admit(commitments)
    b = next(iter(fewer))
    assert admit != server.admit({n: m.commitment() for n, m in members.items()})
    assert set(fewer[b].tokens(admit).tolist()) - set(
        members[b].tokens(server.admit({n: m.commitment() for n, m in members.items()})).tolist()
    )


def test_a_party_cannot_lay_out_before_the_deal():
    _, members, _, _, _, _ = _parties()
    member = next(iter(members.values()))
    with pytest.raises(ConfigError, match="open the deal first"):
        member.aligned()
