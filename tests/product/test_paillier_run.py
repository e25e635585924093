"""Product "paillier" as a run option: the parties' steps (features, reply, release,
groups, group-reply, measure) give shares that sum to the brute-force cross counts in both
rounds, whichever party of a pair encrypts; a seeded run gives the dealer run's synthetic
table (its noise does not depend on how the shares were made); the same inputs give the
same bytes; and what the product does not run yet is refused before any budget is spent."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.secure_runs import commitments, exact_product, secure_parties, split
from vertimrf.crypto.keys import KeyPair
from vertimrf.datasets import load_dataset
from vertimrf.driver.inprocess import local_run
from vertimrf.errors import ConfigError
from vertimrf.party.secure import paillier as party_paillier
from vertimrf.party.secure import paillier_coins
from vertimrf.party.secure.coins import coin_key, coin_label, coin_shapes
from vertimrf.protocol import from_preset
from vertimrf.protocol.masks import coin_bits
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.plan import check_plan, run_plan, size
from vertimrf.protocol.schedule import Kind, schedule
from vertimrf.protocol.secure import paillier as pw
from vertimrf.protocol.secure.features import coin_shape
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT

FIELDS = {"product": "paillier", "cross_noise": "split"}


def _round_one(sizes, n, seed, rows):
    """Features, replies and releases of a random run; the members, the server, the codes
    and every party's round-1 blobs and replies by receiver."""
    cfg, spec, members, server, public, codes = secure_parties(sizes, n, seed, rows=rows, **FIELDS)
    deals = server.deal(public, commitments(members))
    sent = {name: m.features(deals[name]) for name, m in members.items()}
    inbox = {r: {s: sent[s][r] for s in members if s != r} for r in members}
    back = {name: m.replies(inbox[name]) for name, m in members.items()}
    replies = {r: {s: back[s][r] for s in members if s != r} for r in members}
    for name, m in members.items():
        m.release(inbox[name], replies=replies[name])
    return cfg, spec, members, server, public, codes, inbox, replies


def _sum(members, plan, key):
    a, b = key.split("+")
    return members[a]._step.shares[key] + members[b]._step.shares[key]


@pytest.mark.parametrize(
    ("sizes", "seed"), [([[3, 2], [4]], 1), ([[30, 20], [3]], 2), ([[2], [3, 2], [2, 2]], 3)]
)
def test_round_one_shares_sum_to_the_exact_product(sizes, seed):
    """Each pair's shares sum to X_a^T X_b; the parametrisation puts E on both sides (the
    wider party's peer encrypts) and has three parties, so one is E toward one peer and G
    toward the other."""
    cfg, spec, members, server, *_, codes, inbox, replies = _round_one(sizes, 40, seed, 64)
    plan = server.plan
    who = {pw.pair_encrypter(plan, a, b) == a for a, b in plan.pairs()}
    if len(sizes) == 2:
        assert who == {seed == 1}  # [[3, 2], [4]]: the lower encrypts; [[30, 20], [3]]: not
    for a, b in plan.pairs():
        key = plan.pair_name(a, b)
        exact = exact_product(plan, plan.layout(), codes, spec.names, a, b)
        np.testing.assert_array_equal(plan.signed(_sum(members, plan, key)), exact)


@pytest.mark.parametrize("sizes", [[[2, 3], [3, 2]], [[20, 3, 2], [3, 2]]])
def test_round_two_blocks_sum_to_the_exact_product(sizes):
    """Round 2 with groups on both sides of the pair: the grown matrices (round 1's, E's
    round-1 rows by G's groups, E's round-2 rows by G's singles and groups) are exact."""
    cfg, spec, members, server, public, codes, inbox, replies = _round_one(sizes, 50, 4, 64)
    plan = server.plan
    p0, p1 = plan.attrs
    request = plan.check_request([p0[:2] + p1[:2], (p0[0], p1[0])])
    server.data.request = request
    deals = server.group_deals(public)
    sent = {name: m.groups(deals[name], request) for name, m in members.items()}
    groups = {r: {s: sent[s][r] for s in members if s != r} for r in members}
    back = {name: m.group_replies(inbox[name], groups[name]) for name, m in members.items()}
    group_replies = {r: {s: back[s][r] for s in members if s != r} for r in members}
    layout = plan.layout(request.marginals)
    assert layout.grows(0, 1) and layout.width(0, 1) and layout.width(1, 0)
    grown = {
        name: party_paillier.grow(
            m.session,
            m._step,
            m._step.shares,
            layout,
            inbox[name],
            groups[name],
            group_replies[name],
        )  # fmt: skip
        for name, m in members.items()
    }
    total = grown["P0"]["P0+P1"] + grown["P1"]["P0+P1"]
    np.testing.assert_array_equal(
        plan.signed(total), exact_product(plan, layout, codes, spec.names, 0, 1)
    )
    assert sum(len(groups["P1" if e == "P0" else "P0"][e]) > 200 for e in ("P0", "P1")) == 1


def _run(sizes, product, *, seed=5, n=300, rows=512, seeded=True, **fields):
    cfg, spec, frame, parties = split(sizes, n, seed, rows=rows, product=product, **fields)
    data = {
        name: frame[names].assign(id=np.arange(len(frame))).sample(frac=1.0, random_state=seed)
        for name, names in parties
    }
    run = local_run(data, cfg, SECRET, seed=seed if seeded else None)
    return run, run.fitted(run.run())


@pytest.mark.parametrize("noise", ["split", "coins"])
def test_a_seeded_run_gives_the_dealer_runs_table(noise):
    """The releases' totals do not depend on the backend (seeded, the noise and the coins'
    bits are the seed's), so under one seed the server fits and samples the same table; the
    parties took the reply steps and sent ciphertexts. With coins, their centred XOR sums
    come through the Paillier product too."""
    sizes = [[3, 2], [4, 2]]
    tables = {}
    for product in ("dealer", "paillier"):
        run, model = _run(sizes, product, cross_noise=noise)
        tables[product] = model.sample().to_csv(index=False)
    names = [s.name for s in run.parties[0].steps()]
    assert names == ["commit", "features", "reply", "release", "groups", "group-reply", "measure"]
    assert tables["dealer"] == tables["paillier"]


def test_the_same_inputs_give_the_same_bytes(tmp_path):
    """Every message of two unseeded runs with the same config, keys and secret is the same
    (E's key, randomisers, G's masks and every nonce are the key schedule's); the re-run
    harness (tests/simulation/test_rerun_harness.py) changes each input in turn."""
    keys = {name: KeyPair.generate(name) for name in ("P0", "P1", "server")}
    runs = []
    for i in range(2):
        cfg, spec, frame, parties = split([[3, 2], [4]], 60, 7, rows=128, run_nonce="ab" * 16,
                                          **FIELDS)  # fmt: skip
        data = {name: frame[names].assign(id=np.arange(60)) for name, names in parties}
        folder = tmp_path / str(i)
        mine = {n: k for n, k in keys.items() if n != "server"}
        local_run(data, cfg, SECRET, message_dir=folder, keys=mine, server_key=keys["server"]).run()
        runs.append({p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.*")})
    kinds = {k.suffix for k in runs[0]}
    assert {".features", ".reply", ".groups", ".group-reply", ".release"} <= kinds
    assert runs[0].keys() == runs[1].keys()
    assert [k for k in runs[0] if runs[0][k] != runs[1][k]] == []


def test_the_schedule_and_limits_are_the_products():
    cfg, *_ = split([[3, 2], [4]], 10, 0, rows=64, **FIELDS)
    sched = schedule(cfg)
    assert sched.step("reply").reads == (Kind.FEATURES, Kind.DEAL)
    assert Kind.REPLY in sched.step("release").reads
    assert Kind.GROUP_REPLY in sched.step("measure").reads
    plan = secure_plan(cfg)
    e = pw.pair_encrypter(plan, 0, 1)
    e_name, g_name = plan.names[e], plan.names[1 - e]
    sizes = {m: sched.limit(m) for m in sched.messages() if m.kind in (Kind.FEATURES, Kind.REPLY)}
    big = {(m.sender, m.kind): v.limit for m, v in sizes.items()}
    assert big[e_name, Kind.FEATURES] == pw.blob_bytes(pw.key_rows(1) + 64)
    assert big[g_name, Kind.REPLY] == pw.blob_bytes(plan.widths[1 - e])
    assert big[g_name, Kind.FEATURES] == big[e_name, Kind.REPLY] == pw.blob_bytes(0)


@pytest.mark.parametrize(
    ("fields", "match"),
    [({"cross_noise": "coins", "coin_weight": 0.5}, "coin_weight 1"),
     ({"dealer": "own"}, "no dealer"), ({"max_rows": 1 << 24}, "lower max_rows")],
)  # fmt: skip
def test_what_it_does_not_run_is_refused_at_config_time(fields, match):
    cfg, *_ = split([[3, 2], [4]], 10, 0, rows=64)
    with pytest.raises(ConfigError, match=match):
        check_plan(
            dataclasses.replace(cfg, **{"product": "paillier", "cross_noise": "split", **fields})
        )


def test_the_report_bounds_the_server_with_each_party():
    """No role deals, so the server with one party is a viewer: it knows two of a cross
    release's three split components, so it faces one (sigma^2 / 2), and the report says
    so; the dealer's report keeps its collusion note and its three viewers."""
    run, model = _run([[3, 2], [4, 2]], "paillier", cross_noise="split", seeded=False)
    viewers = model.report.viewers
    assert set(viewers) == {"server", "P0", "P1", "server+P0", "server+P1"}
    assert viewers["server+P0"] > viewers["server"] > 0  # fewer components unknown
    assert "server+P" in str(model.report)
    plan = secure_plan(run.server.server.config)
    releases = list(model.report.ledger.releases)
    cross = [r for r in releases if r.mechanism == plan.cross_noise.mechanism]
    one = sum(plan.cross_noise.viewer_rho(r, 2) for r in cross)
    rest = sum(r.rho for r in releases if r not in cross)
    assert viewers["server+P0"] == pytest.approx(one + rest, rel=1e-12)
    run, model = _run([[3, 2], [4, 2]], "dealer", cross_noise="split", seeded=False)
    assert set(model.report.viewers) == {"server", "P0", "P1"}
    assert "no guarantee" in str(model.report)


@pytest.mark.parametrize("sizes", [[[3, 2], [4]], [[30, 20], [3]]])
def test_coin_shares_sum_to_each_cells_centred_xor_sum(sizes):
    """cross_noise "coins": E's coins go encrypted with its features, G's coin reply rides
    its reply; the two parties' shares of each cell sum to sum_k (a_k XOR b_k) - N/2,
    computed here from both parties' bits (either party encrypting)."""
    cfg, spec, members, server, public, codes = secure_parties(
        sizes, 40, 1, rows=64, product="paillier", cross_noise="coins"
    )
    deals = server.deal(public, commitments(members))
    sent = {name: m.features(deals[name]) for name, m in members.items()}
    coins = {name: m.coins(SELECT) for name, m in members.items()}
    inbox = {r: {s: sent[s][r] for s in members if s != r} for r in members}
    coin_in = {r: {s: coins[s][r] for s in members if s != r} for r in members}
    back = {name: m.replies(inbox[name], coin_in[name]) for name, m in members.items()}
    replies = {r: {s: back[s][r] for s in members if s != r} for r in members}
    first = Request(tuple(server.plan.first_release()))
    got = {}
    for name, m in members.items():
        m.release(inbox[name], coin_in[name], replies[name])
        got[name] = paillier_coins.coin_shares(
            m.session, m._step, SELECT, first, coin_in[name], replies[name]
        )
    (p0, m0), (p1, m1) = members.items()
    shape = coin_shapes(m0.session, SELECT, first)[p1]
    assert shape[0] > 0 and shape[1] > 0

    def key(m, peer):
        return coin_key(m.session, coin_label(m.session, m._step, SELECT, first, peer), SELECT,
                        first, peer)  # fmt: skip

    a, b = coin_bits(key(m0, p1), 0, *shape), coin_bits(key(m1, p0), 0, *shape)  # all at once
    np.testing.assert_array_equal(paillier_coins._ones(key(m0, p1), shape), a.sum(axis=1))
    want = (a ^ b).sum(axis=1).astype(np.int64) - shape[1] // 2
    total = (got[p0][f"{p0}+{p1}"] + got[p1][f"{p0}+{p1}"]).view(np.int64)
    np.testing.assert_array_equal(total, want)


def test_with_coins_the_server_with_a_party_faces_what_every_viewer_faces():
    """Coins at weight 1 carry all of sigma^2 and no viewer knows them: the coalition's
    bound is the server's, and the plan says so."""
    run, model = _run([[3, 2], [4, 2]], "paillier", cross_noise="coins", seeded=False)
    viewers = model.report.viewers
    assert viewers["server+P0"] == viewers["server+P1"] == viewers["server"] > 0
    cfg = run.server.server.config
    text = run_plan(cfg).describe()
    assert "faces the coins' sigma^2" in text and "the first release's coins add about" in text
    plan = secure_plan(cfg)
    coin_bytes = pw.coin_bytes(plan, "P0", "P1", first=True)
    e = pw.pair_encrypter(plan, 0, 1)
    assert coin_bytes == pw.blob_bytes(pw.coin_rows(plan, e, 1 - e))  # E's encrypted coins
    assert f"{size(coin_bytes)}" in text  # the coins' line counts ciphertexts, not ring words


def _adult(**fields):
    spec = load_dataset("adult")[1]
    names = list(spec.names)
    return from_preset(
        "default", epsilon=0.4, delta=1e-6, spec=spec, max_rows=65536, method="secure",
        parties=[("A", names[:8]), ("B", names[8:])], product="paillier", **fields,
    )  # fmt: skip


def test_the_plan_counts_what_the_products_steps_hold_and_refuses_what_does_not_fit():
    """Every party step of the product has a memory estimate; with coins it counts one slot
    column's coins drawn whole and a block of coin ciphertexts, not all of E's coins (about
    31 GB here, which a party once held); a limit below it refuses the config."""
    split_cfg, coins_cfg = _adult(cross_noise="split"), _adult(cross_noise="coins")
    plan = secure_plan(coins_cfg)
    steps = {"features", "reply", "release", "groups", "group-reply", "measure"}
    for cfg in (split_cfg, coins_cfg):
        for name in ("A", "B"):
            assert steps <= set(run_plan(cfg).role(name).steps)
    cells, n = coin_shape(plan, 0, 1, first=False)
    column = min(cells, pw.slot_layout(plan).slots) * n * pw.COIN_HELD
    e = pw.pair_encrypter(plan, 0, 1)
    every = pw.CIPHERTEXT * pw.coin_rows(plan, e, 1 - e)  # E's coins of the first release
    split, coins = (run_plan(cfg).role("A").peak for cfg in (split_cfg, coins_cfg))
    assert column <= coins - split < every / 8
    limit = (split + coins) / 2 / 2**30
    _adult(cross_noise="split", max_memory_gb=limit)
    with pytest.raises(ConfigError, match=r"memory \(reply\)|memory \(features\)"):
        _adult(cross_noise="coins", max_memory_gb=limit)
