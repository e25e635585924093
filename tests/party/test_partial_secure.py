"""Partial record sets through the secure roles in one process: commit, the server's admit
digest, each party's tokens, the deal and its slot map, features and shares. Every pair's
shares sum to the counts over exactly the records both parties hold (brute force), the
server publishes one noisy count per region, and a re-run on the same inputs deals and
lays out the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

from tests.secure_runs import (
    P_REJECT,
    PARTIAL_SERVER_KEY,
    exchange,
    partial_deals,
    partial_parties,
    uniform_bytes,
)
from vertimrf.errors import ChannelError, ConfigError, MessageError
from vertimrf.party.secure.shares import shares
from vertimrf.protocol.regions import regions_of
from vertimrf.protocol.secure.slot_map import slot_map_bytes
from vertimrf.server.secure import SecureServer


def test_shares_count_the_records_both_parties_hold_and_the_regions_are_published():
    cfg, members, public, held, codes, _ = partial_parties()
    server, deals = partial_deals(members, public)
    for name, blobs in exchange(members, deals).items():
        members[name]._step.shares = shares(members[name].session, members[name]._step, blobs)
    plan, layout = server.plan, server.plan.layout()
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = plan.signed(
            members[plan.names[p]]._step.shares[key] + members[plan.names[q]]._step.shares[key]
        )
        exact = np.zeros(layout.shape(p, q), np.int64)
        for a in plan.attrs[p]:
            for b in plan.attrs[q]:
                r0, c0 = layout.offset(p, q, (a,)), layout.offset(q, p, (b,))
                for r in np.flatnonzero(held[:, p] & held[:, q]):
                    exact[r0 + codes[r, a], c0 + codes[r, b]] += 1
        np.testing.assert_array_equal(total, exact)
    released = server.record_sets.released
    assert released is not None and sorted(released) == list(regions_of(3))
    noise = plan.regions
    for t, r in released.items():  # r = c + Z + zeta, |Z| <= offset, zeta a discrete Gaussian
        exact = int(np.sum(np.all(held == [bool(t >> i & 1) for i in range(3)], axis=1)))
        assert abs(r - exact) <= noise.offset + 6 * noise.sigma


def test_the_same_inputs_deal_the_same_bytes_and_other_data_fresh_ones():
    """New objects for the same run, data and keys (new processes): the same admit digest,
    tokens, slots, region counts and deal bytes. A party that holds one record fewer
    changes its commitment, so the admit digest, every party's dummies and every deal."""
    cfg, members, public, _, _, keys = partial_parties()
    server, deals = partial_deals(members, public)
    _, again, _, _, _, _ = partial_parties(keys=keys, nonce=cfg.run_nonce)
    server2, deals2 = partial_deals(again, public)
    assert deals == deals2 and server.record_sets.released == server2.record_sets.released
    _, fewer, _, _, _, _ = partial_parties(n=149, keys=keys, nonce=cfg.run_nonce)
    server3, deals3 = partial_deals(fewer, public)
    assert all(deals3[name] != deals[name] for name in deals)
    commitments = {name: m.commitment() for name, m in fewer.items()}
    admit = server3.admit(commitments, public).digest
    b = next(iter(fewer))
    before = server.admit({n: m.commitment() for n, m in members.items()}, public).digest
    assert admit != before
    assert not set(fewer[b].tokens(admit).tolist()) & set(members[b].tokens(before).tolist())


def test_a_party_cannot_lay_out_before_the_deal():
    _, members, _, _, _, _ = partial_parties()
    member = next(iter(members.values()))
    with pytest.raises(ConfigError, match="open the deal first"):
        member.aligned()


def test_a_deal_without_its_own_slot_map_is_refused_with_one_line():
    """A party given no slot map, another party's, or its own altered: refused (one line),
    and nothing laid out, so its own opens afterwards."""
    _, members, public, _, _, _ = partial_parties()
    _, deals = partial_deals(members, public)
    (a, (deal, slot_map)), (_, (_, other)) = list(deals.items())[:2]
    altered = bytearray(slot_map)
    altered[-40] ^= 1
    for given, error in ((None, MessageError), (other, ChannelError), (altered, ChannelError)):
        with pytest.raises(error) as caught:
            members[a].open_deal(deal, given)
        assert "\n" not in str(caught.value)
    members[a].open_deal(deal, slot_map)


def test_the_deal_and_the_slot_map_are_ciphertext_of_public_lengths():
    """Every deal and slot map the server sends: uniform bytes past the public headers (a
    slot map's 32-byte assignment digest and 12-byte nonce; bounds as in
    test_every_view_is_uniform), the slot map of the plan's public length."""
    _, members, public, _, _, _ = partial_parties()
    server, deals = partial_deals(members, public)
    most = server.plan.max_tokens
    for deal, slot_map in deals.values():
        assert len(slot_map) == slot_map_bytes(most)
        for data in (deal[64:], slot_map[44:]):
            body = np.frombuffer(data, np.uint8)
            assert uniform_bytes(body[: body.size // 8 * 8].view(np.uint64)) > P_REJECT


def test_a_server_that_did_not_deal_makes_round_two_only_on_the_kept_slots():
    """A new server object (a new process) for a request that grows the pair P0-P1: it
    refuses to make the round-2 deal without the slot assignment's digest (one line), and
    with the deal's kept region counts and digest restored it makes the dealing server's
    bytes (its masks are round 1's)."""
    _, members, public, _, _, _ = partial_parties()
    server, _ = partial_deals(members, public)
    request = server.plan.check_request([(0, 1, 2)])
    assert server.plan.layout(request.marginals).grows(0, 1)
    server.data.request = request  # the server's selection, fixed by the test
    config = next(iter(members.values())).config
    again = SecureServer(config, seed=4, keypair=PARTIAL_SERVER_KEY)
    again.admit({name: m.commitment() for name, m in members.items()}, public)
    again.data.request = request
    with pytest.raises(MessageError, match="slot assignment") as caught:
        again.group_deals(public)
    assert "\n" not in str(caught.value)
    again.record_sets.restore(server.record_sets.kept())
    assert again.group_deals(public) == server.group_deals(public)
