"""Every keyed stream is bound to every input of its step:
the noise to every blob and deal read and the canonical request, the deal to every party's
data commitment, a round-2 nonce to the request and its layout; a request is canonical."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.secure_runs import commitments, exchange, round_two, secure_parties
from vertimrf.errors import MessageError, RunChangedError
from vertimrf.party.secure.features import nonce
from vertimrf.party.secure.release import sampler
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT, SecurePlan
from vertimrf.protocol.secure.request import request_text

SIZES = [[3, 2, 2], [2, 3]]


def _marginals(plan: SecurePlan) -> list[tuple[int, ...]]:
    p0, p1 = plan.attrs
    return [p0[:2] + p1[:1], (p0[0], p1[1]), (p0[2], p1[0]), p0[1:3]]


def test_a_request_in_another_order_is_one_request_with_one_digest_and_layout():
    """The same statistics in another order: equal requests, one digest, one layout, the same
    request file, so the same bytes and never a second, independent measurement."""
    cfg, *_ = secure_parties(SIZES, 20, 1)
    plan = secure_plan(cfg)
    marginals = _marginals(plan)
    one = plan.check_request(marginals)
    two = plan.check_request(list(reversed(marginals)))
    assert one == two and one.digest() == two.digest()
    assert Request(tuple(marginals)).digest() == Request(tuple(reversed(marginals))).digest()
    assert plan.layout(one.marginals) == plan.layout(two.marginals)
    assert request_text("h", one) == request_text("h", two)


def test_round_two_nonces_bind_the_request_and_a_deal_opens_for_its_request_only():
    """A round-2 deal made for one request is refused with another; each request's own deal
    gives nonces of its own (the request and the layout are bound in), while the same
    request in another order gives the same nonce (one canonical request)."""
    cfg, *_ = secure_parties(SIZES, 30, 2)
    plan = secure_plan(cfg)
    p0, p1 = plan.attrs
    first = [p0[:2] + p1[:1], (p0[0], p1[1])]
    members, server, _, _, request, _, _ = round_two(SIZES, 30, 2, first, rows=40)
    member = members["P0"]
    first_nonce = nonce(member.session, member._step, "P1", 2)
    other = plan.check_request([p0[1:3] + p1[:1], (p0[2], p1[1])])
    server.data.request = other
    deals = server.group_deals()
    with pytest.raises(MessageError, match="does not open for this request"):
        member.open_group_deal(deals["P0"], request)  # the deal of another request
    member.open_group_deal(deals["P0"], other)
    assert nonce(member.session, member._step, "P1", 2) != first_nonce
    server.data.request = request
    again = server.group_deals()["P0"]
    member.open_group_deal(again, list(reversed(request.marginals)))  # another order
    assert nonce(member.session, member._step, "P1", 2) == first_nonce


def test_the_noise_is_keyed_by_every_input_of_the_step():
    """After the first release a party's inputs name its data, the deal, the commitments
    the deal was made for and every peer blob it read (its digest and nonce); a change in
    any of them gives other noise."""
    cfg, spec, members, server, public, _ = secure_parties(SIZES, 40, 3)
    inbox = exchange(members, server.deal(public, commitments(members)))
    member = members["P0"]
    member.release(inbox["P0"])
    inputs = dict(member._step.inputs)
    assert set(inputs) == {"data", "deal", "commit-set", "blob/P1", "blob-nonce/P1"}
    member.session = dataclasses.replace(member.session, seed=None)  # the keyed sampler
    request = Request(tuple(member.plan.all_pairs()))

    def draws() -> np.ndarray:
        return sampler(member.session, member._step, SELECT, request).discrete_gaussian(4.0, (64,))

    base = draws()
    assert np.array_equal(base, draws())  # the same inputs: the same noise
    for key in inputs:
        member._step.inputs[key] = "0" * 64
        assert not np.array_equal(base, draws()), key
        member._step.inputs[key] = inputs[key]


def test_the_deal_changes_with_any_partys_data_and_refuses_other_data():
    """The deal is made for every party's data commitment: another table at any one party
    gives other masks for every party; a deal made for the old data is refused."""
    cfg, spec, members, server, public, _ = secure_parties(SIZES, 40, 4)
    before = server.deal(public, commitments(members))
    _, _, changed, other_server, _, _ = secure_parties(SIZES, 41, 4)  # another table, other keys
    other = dict(commitments(members))
    other["P1"] = changed["P1"].commitment()
    after = server.deal(public, other)
    assert before["P0"] != after["P0"] and before["P1"] != after["P1"]
    members["P0"].open_deal(after["P0"])  # P0's own data: its commitment is in the deal
    with pytest.raises(RunChangedError, match="a corrected table needs a new config"):
        members["P1"].open_deal(after["P1"])  # made for another table of P1
