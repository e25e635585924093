"""method="secure" in two rounds and in the smallest safe ring: the round-2 blocks of the
shares are exact, a round-2 blob holds only the requested groups, every view stays uniform,
and the ring is 32 bits exactly when no count plus its noise can leave it."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secure_runs import (
    P_REJECT,
    exact_product,
    joint,
    round_two,
    split,
    uniform_bytes,
)
from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.errors import MessageError
from vertimrf.party.secure.shares import grow
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.secure.features import open_features, seal_features
from vertimrf.protocol.secure.plan import RING_MIN_REQUEST, RING_TAIL
from vertimrf.protocol.secure.wire import DIGEST_BYTES, PACK_WORDS
from vertimrf.server.secure.oracle import SecureOracle
from vertimrf.server.secure.session import randomness
from vertimrf.server.secure.session import tables as summed_tables


@settings(max_examples=12, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.lists(st.integers(1, 4), min_size=2, max_size=3), min_size=2, max_size=3),
    n=st.integers(0, 30),
    pad=st.integers(0, 5),
    seed=st.integers(0, 2**16),
    shape=st.sampled_from(["left", "right", "both"]),
)
def test_grown_shares_sum_to_the_exact_product(sizes, n, pad, seed, shape):
    """With round-2 groups on the lower party's side, the higher's, or both, every pair's
    two grown share matrices sum to [X_p | G_pq]^T [X_q | G_qp] exactly (in the ring), for
    random tables, paddings and row orders: the round-1 block, and blocks A and B."""
    cfg, *_ = split(sizes, 1, seed, rows=64)
    plan = secure_plan(cfg)
    p0, p1 = plan.attrs[0], plan.attrs[1]
    g = p0[:2] if shape in ("left", "both") else p0[:1]
    h = p1[:2] if shape in ("right", "both") else p1[:1]
    marginals = [g + h, (p0[0], p1[0])]
    rows = n + pad + 1
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, n, seed, marginals, rows=rows
    )
    layout = plan.layout(request.marginals)
    grown = {
        name: grow(m.session, m._step, m._step.shares, layout, request, inbox[name], groups[name])
        for name, m in members.items()
    }
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = grown[plan.names[p]][key] + grown[plan.names[q]][key]
        exact = exact_product(plan, layout, codes, spec.names, p, q)
        np.testing.assert_array_equal(plan.signed(total), exact)


def test_a_round_two_blob_holds_only_the_requested_groups_and_looks_uniform():
    """P0 needs one group (2 x 3 = 6 columns) toward P1 and none toward P2: its round-2
    blob to P1 holds rows x 6 ring words (uniform bytes: its simulator draws uniform words),
    and its blob to P2 holds no words at all."""
    sizes = [[2, 3, 4], [64], [5]]
    cfg, *_ = split(sizes, 1, 0, rows=4096)
    plan = secure_plan(cfg)
    marginals = [(0, 1, 3), (0, 4), (3, 4)]
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, 3000, 5, marginals, rows=4096
    )
    overhead = DIGEST_BYTES + NONCE_BYTES + TAG_BYTES
    assert len(groups["P1"]["P0"]) == plan.word_bytes * 4096 * 6 + overhead
    assert len(groups["P2"]["P0"]) == overhead
    assert len(groups["P0"]["P1"]) == overhead  # P1's part (3,) is a single: nothing to send
    m = members["P1"]
    words, _ = open_features(
        m.session.keys["P0"], groups["P1"]["P0"], m.session.context, "P0", "P1", (4096, 6),
        word=plan.word, round_=2, word_bytes=plan.word_bytes,
    )  # fmt: skip
    assert uniform_bytes(words, plan.word_bytes) > P_REJECT


def test_a_round_one_blob_is_not_accepted_as_a_round_two_blob():
    """The round is in the blob's associated data: a relayed round-1 blob of the right size
    does not open as round 2."""
    sizes = [[2, 3], [6]]
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, 50, 1, [(0, 1, 2)], rows=64
    )
    m, plan = members["P1"], members["P1"].plan
    with pytest.raises(Exception, match="not from this peer"):
        open_features(
            m.session.keys["P0"], inbox["P1"]["P0"], m.session.context, "P0", "P1", (64, 5),
            word=plan.word, round_=2, word_bytes=plan.word_bytes,
        )  # fmt: skip


def test_the_measured_three_way_cross_marginal_is_the_exact_one_plus_the_charged_noise():
    """A 3-way cross marginal through round 2: the server's sum minus the exact table has
    mean near 0 and variance 1.5 sigma^2 (three N_Z(0, sigma^2 / 2) components; 6 standard
    errors, sqrt(2 / cells) relative for the variance, sigma / sqrt(cells) for the mean)."""
    sizes = [[6, 5], [8]]
    marginals = [(0, 1, 2)]
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, 400, 2, marginals, rows=512
    )
    releases = [m.measure(request, inbox[n], groups[n]) for n, m in members.items()]
    plan = server.plan
    tables = summed_tables(server.session, "measure", request.marginals, releases, randomness(
        server.session, "measure", releases)[0])  # fmt: skip
    exact = joint(codes, spec.names, plan.sizes, (0, 1, 2)).ravel()
    resid = tables.values[(0, 1, 2)] - exact
    sigma = plan.sigma("measure", request.marginals)
    cells = resid.size
    assert abs(resid.mean()) < 6 * math.sqrt(1.5) * sigma / math.sqrt(cells)
    assert abs(resid.var() / (1.5 * sigma**2) - 1) < 6 * math.sqrt(2 / cells)


def test_measure_without_the_peers_round_two_blobs_names_what_is_missing():
    sizes = [[2, 3], [6]]
    members, server, codes, spec, request, inbox, groups = round_two(
        sizes, 50, 1, [(0, 1, 2)], rows=64
    )
    before = list(members["P0"].ledger.releases)
    with pytest.raises(MessageError, match="feature blobs of both rounds"):
        members["P0"].measure(request, inbox["P0"], {})
    assert list(members["P0"].ledger.releases) == before  # nothing charged


@pytest.mark.parametrize(
    ("word", "word_bytes"), [(np.uint32, 2), (np.uint32, 3), (np.uint32, 4), (np.uint64, 5)]
)
def test_a_blob_holds_each_value_in_the_rings_bytes(word, word_bytes):
    """A blob packs each value's low ``word_bytes`` bytes (little-endian) and nothing else:
    its size is exact, and it opens to the values reduced into Z_2^(8 word_bytes), over
    several packing blocks with a partial last one. Another width or a flipped byte is
    refused."""
    rows, k = PACK_WORDS // 3 + 5, 7
    top = np.iinfo(word).max
    values = np.random.default_rng(word_bytes).integers(0, top, (rows, k), word, endpoint=True)
    key, digest = bytes(range(32)), b"d" * DIGEST_BYTES
    args = (b"ctx", "P0", "P1")
    blob = seal_features(key, values, *args, digest, nonce=bytes(12), word_bytes=word_bytes)
    assert len(blob) == DIGEST_BYTES + NONCE_BYTES + word_bytes * rows * k + TAG_BYTES
    out, got = open_features(key, blob, *args, (rows, k), word=word, word_bytes=word_bytes)
    ring = word((1 << (8 * word_bytes)) - 1)
    assert out.dtype == word and got == digest
    np.testing.assert_array_equal(out, values & ring)
    with pytest.raises(MessageError, match="holds"):
        open_features(key, blob, *args, (rows, k), word=word, word_bytes=word_bytes - 1)
    blob[DIGEST_BYTES + NONCE_BYTES + 5] ^= 1
    with pytest.raises(Exception, match="not from this peer"):
        open_features(key, blob, *args, (rows, k), word=word, word_bytes=word_bytes)


@pytest.mark.parametrize(
    ("rows", "bits"), [(1000, 16), (1 << 20, 24), (1 << 24, 32), ((1 << 31) - 1, 40)]
)
def test_the_ring_is_the_fewest_bytes_that_hold_every_count_plus_its_noise(rows, bits):
    """r is the smallest of 16, 24, ..., 64 with max_rows + RING_TAIL sigma < 2^(r-1), sigma
    the larger of the first release's and a re-measurement's of RING_MIN_REQUEST marginals
    (so one byte less would not hold it). The tail bound: three N_Z(0, sigma^2 / 2) sum to a
    1.5 sigma^2-subgaussian, P(|noise| >= t) <= 2 exp(-t^2 / (3 sigma^2)) <= 2^-128 at
    t = RING_TAIL sigma."""
    assert 2 * math.exp(-(RING_TAIL**2) / 3) <= 2.0**-128 * (1 + 1e-9)
    cfg, *_ = split([[3, 4], [5]], 1, 0, rows=rows, max_memory_gb=1e6)
    plan = secure_plan(cfg)
    sigma = max(
        plan.sigma("select", plan.all_pairs()), plan.nominal_sigma("measure", RING_MIN_REQUEST)
    )
    need = rows + RING_TAIL * sigma
    assert plan.ring_bits == bits and need < 2 ** (bits - 1)
    assert bits == 16 or need >= 2 ** (bits - 9)
    assert plan.word is (np.uint32 if bits <= 32 else np.uint64) and plan.word_bytes == bits // 8
    assert plan.max_request is not None and plan.max_request >= RING_MIN_REQUEST - 1
    assert f"ring: Z_2^{bits} (masked values in {bits // 8}-byte words" in str(run_plan(cfg))


def test_a_request_past_a_cap_is_refused_and_the_selection_keeps_within_the_caps():
    """Width 20 leaves P0 (singles 3 + 4 + 5) 8 round-2 columns and P1 (6) 14: a group of
    P0's (at least 12 cells) is refused, one of P1's fits; the server's own selection on
    such a run never asks past a cap (it splits what does not fit into 2-way blocks)."""
    cfg, *_ = split([[3, 4, 5], [6, 2]], 1, 0, rows=1 << 10, secure_feature_width=20)
    plan = secure_plan(cfg)
    assert plan.group_caps == (8, 12)
    with pytest.raises(MessageError, match="round-2 columns of party 'P0'"):
        plan.check_request([(0, 1, 3)])
    assert plan.layout(plan.check_request([(0, 3, 4)]).marginals).width(1, 0) == 12
    assert plan.max_request is not None and plan.max_request >= RING_MIN_REQUEST - 1
    out = SecureOracle(plan).measurable([(0, 1, 3, 4)], set())
    plan.layout(plan.check_request(out).marginals)  # within every cap
    cross = [m for m in out if plan.kind(m) == "cross"]
    assert (0, 1) in out and cross == [(0, 3, 4), (1, 3, 4)]  # P0's part split, P1's kept
