"""method="secure": exact shares, uniform views, the charged noise, accounting and errors."""

from __future__ import annotations

import dataclasses
import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from tests.secure_runs import (
    P_REJECT,
    assert_shares_sum_to_the_exact_product,
    commitments,
    cross_tab,
    driven,
    exchange,
    joint,
    secure_parties,
    uniform_bytes,
)
from vertimrf import simulate
from vertimrf.domain import DomainSpec
from vertimrf.errors import ChannelError, ConfigError, MessageError, PrivacyBudgetError
from vertimrf.privacy.ddg import ddg_rho
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.privacy.zcdp import epsilon_to_rho, rho_to_epsilon
from vertimrf.protocol import from_preset
from vertimrf.protocol.secure.features import open_features
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.server.secure import SecureServer
from vertimrf.server.secure.selection import engine_plan


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    sizes=st.lists(st.lists(st.integers(1, 5), min_size=1, max_size=3), min_size=2, max_size=3),
    n=st.integers(0, 40),
    pad=st.integers(0, 9),
    seed=st.integers(0, 2**16),
)
def test_shares_sum_to_the_exact_cross_counts(sizes, n, pad, seed):
    """For random tables, parties and row padding, every pair's two shares sum to X^T Y
    exactly (in the ring), whatever the row order each party holds."""
    assert_shares_sum_to_the_exact_product(sizes, n, seed, rows=n + pad + 1)


def test_every_view_is_uniform():
    """Each party's view of a peer (the masked features X - U) and the server's view of each
    padded share are uniform words: their simulator draws uniform words. Checked on the
    bytes, i.e. on the rings Z_{2^8} that the words reduce to, with 64-value domains so each
    view has thousands of bytes (expected count per byte value >= 100)."""
    cfg, spec, members, server, public, codes = secure_parties([[64], [64, 2]], 3000, 7, rows=4096)
    deals = server.deal(public, commitments(members))
    blobs = {name: m.features(deals[name]) for name, m in members.items()}
    for sender in members:
        for receiver in members:
            if sender != receiver:
                m = members[receiver]
                plan = m.plan
                shape = (plan.rows, plan.widths[plan.party_index(sender)])
                features, _ = open_features(
                    m.session.keys[sender], blobs[sender][receiver], m.session.context, sender,
                    receiver, shape, word=plan.word, word_bytes=plan.word_bytes,
                )  # fmt: skip
                assert uniform_bytes(features, plan.word_bytes) > P_REJECT
    releases = [m.release({q: blobs[q][n] for q in members if q != n}) for n, m in members.items()]
    plan = members["P0"].plan  # the ring's values: nothing is released above them
    for r in releases:
        for words in r.cross.values():
            assert words.size >= 64 * 64
            assert (words <= plan.ring_mask).all()
            assert uniform_bytes(words, plan.word_bytes) > P_REJECT
    # ... while the sum of the two shares is the noisy count, which is far from uniform.
    pair = releases[0].cross["P0+P1"] + releases[1].cross["P0+P1"]
    assert uniform_bytes(pair, plan.word_bytes) < P_REJECT


def test_released_noise_has_the_charged_variance():
    """The server's sum minus X^T Y is the noise of three N_Z(0, sigma^2 / 2) components:
    variance 1.5 sigma^2 per cell (a discrete Gaussian's variance is within 1e-10 of its
    sigma^2 at sigma >= 2). Own marginals carry N_Z(0, sigma^2). With m cells the sample
    variance has relative standard error sqrt(2 / m); the bounds are 6 standard errors."""
    cfg, spec, server, codes = driven([[40, 30], [50]], 2000, 3, epsilon=0.5, rows=2048)
    plan, first = server.plan, server.data.first
    sigma = plan.sigma(SELECT, plan.all_pairs())
    names = spec.names
    cross, within = [], []
    for (a, b), values in first.values.items():
        exact = cross_tab(codes[names[a]], codes[names[b]], plan.sizes[a], plan.sizes[b])
        (cross if plan.kind((a, b)) == "cross" else within).append(values - exact.ravel())
    for residuals, var in ((np.concatenate(cross), 1.5 * sigma**2),
                           (np.concatenate(within), sigma**2)):  # fmt: skip
        m = residuals.size
        assert abs(residuals.mean()) < 6 * math.sqrt(var / m)
        assert abs(residuals.var() / var - 1) < 6 * math.sqrt(2 / m)


@pytest.mark.parametrize("s", [0.6, 1.0, 2.0])
@pytest.mark.parametrize("alpha", [1.5, 4.0, 16.0])
def test_ddg_bound_holds_against_the_exact_divergence(s, alpha):
    """The Renyi divergence of the sum of two N_Z(0, s^2), computed exactly from the pmfs
    (support truncated where the mass is below 1e-300), is below alpha * ddg_rho for a shift
    of 1, and ddg_rho is at least the continuous Gaussian's 1 / (2 * 2 s^2)."""
    k = np.arange(-int(60 * s) - 60, int(60 * s) + 61)
    one = np.exp(-(k.astype(float) ** 2) / (2 * s * s))
    one /= one.sum()
    two = np.convolve(one, one)
    p, q = two[1:], two[:-1]
    keep = (p > 1e-300) & (q > 1e-300)
    logs = alpha * np.log(p[keep]) + (1 - alpha) * np.log(q[keep])
    exact = float(special.logsumexp(logs)) / (alpha - 1)
    rho = ddg_rho(s, 2, 1.0, 1.0, 1)
    assert exact <= alpha * rho * (1 + 1e-9)
    assert rho >= 1 / (4 * s * s) - 1e-15


def test_ledger_is_a_true_bound_and_agrees_with_dp_accounting():
    """The server's ledger stays within the budget, and its epsilon agrees with Google's
    dp-accounting RDP accountant given one Gaussian event per ledger entry (the entry's
    charge as a noise multiplier), so the conversion to (epsilon, delta) is independent."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant

    cfg, spec, server, codes = driven([[4, 3], [5], [2, 2]], 300, 1)
    ledger = server.ledger
    assert ledger.total_rho <= ledger.budget_rho * (1 + 1e-9)
    eps = ledger.total_epsilon(cfg.delta)
    assert eps <= cfg.epsilon * (1 + 1e-9)
    acc = rdp_privacy_accountant.RdpAccountant(
        orders=list(np.linspace(1.01, 200, 4000)),
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
    )
    for r in ledger.releases:
        acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(1 / (2 * r.rho))))
    reference = acc.get_epsilon(cfg.delta)
    assert eps == pytest.approx(reference, rel=0.02)
    assert rho_to_epsilon(ledger.total_rho, cfg.delta) == eps


def test_report_states_the_guarantee_per_viewer():
    """Each viewer's rho re-derived by hand from the release parameters: the server and the
    two parties of a pair face two of its three noise components (Gaussian charge
    K / (2 * 2 s^2) up to KLS's tau term, below 1e-20 here), a third party faces all three.
    No viewer exceeds the ledger's total, and dp-accounting's epsilon of each viewer's events
    agrees with the report's within 2%. There is no coalition entry: the server colluding
    with a party has no guarantee (tests/simulation/test_safety_rails.py recovers a table
    that way)."""
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp import rdp_privacy_accountant

    cfg, spec, server, codes = driven([[4, 3], [5], [2, 2]], 300, 1)
    # The guarantee the run's releases carry: a seeded run prints none, so unseed its report.
    assert server.report().seeded_roles == ("P0", "P1", "P2", "server")
    report = dataclasses.replace(server.report(), seeded_roles=())
    ledger = server.ledger

    def by_hand(viewer):
        total = 0.0
        for r in ledger.releases:
            if r.mechanism != "distributed_discrete_gaussian":
                total += r.rho
                continue
            unknown = 3 - len({viewer} & {"server", *r.party.split("+")})
            total += r.count / (2.0 * unknown * r.params["component_sigma"] ** 2)
        return total

    assert set(report.viewers) == {"server", "P0", "P1", "P2"}
    for viewer, rho in report.viewers.items():
        assert rho == pytest.approx(by_hand(viewer), rel=1e-9, abs=1e-20)
        assert rho <= ledger.total_rho * (1 + 1e-12)
    assert report.viewers["server"] == pytest.approx(ledger.total_rho, rel=1e-12)
    for viewer in ("P2", "server"):
        acc = rdp_privacy_accountant.RdpAccountant(
            orders=list(np.linspace(1.01, 200, 4000)),
            neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
        )
        acc.compose(dp_accounting.GaussianDpEvent(math.sqrt(1 / (2 * report.viewers[viewer]))))
        eps = report.to_dict()["viewers"][viewer]["epsilon"]
        assert eps == pytest.approx(acc.get_epsilon(cfg.delta), rel=0.02)
    text = str(report)
    assert "guarantee per viewer" in text and "server+" not in text
    assert "colludes with no party" in text and "under collusion there is no guarantee" in text


def test_parties_and_server_refuse_bad_inputs():
    """A deal for another party, a blob from another run, a missing blob, different record
    sets, a replayed step and a foreign release raise the documented errors."""
    cfg, spec, members, server, public, codes = secure_parties([[3], [4]], 50, 2)
    deals = server.deal(public, commitments(members))
    with pytest.raises(ChannelError):
        members["P0"].features(deals["P1"])
    exchange(members, deals)
    with pytest.raises(PrivacyBudgetError):
        members["P0"].features(deals["P0"])
    with pytest.raises(MessageError, match="no feature blob"):
        members["P0"].release({})
    # P1's blob for another run (a new config: a new nonce) cannot be opened in this one.
    other_cfg, _, others, other_server, other_public, _ = secure_parties([[3], [4]], 50, 2)
    other_blobs = exchange(others, other_server.deal(other_public, commitments(others)))
    with pytest.raises(ChannelError):
        members["P0"].release({"P1": other_blobs["P0"]["P1"]})


def test_different_record_sets_are_refused():
    _, _, members, server, public, _ = secure_parties([[3], [4]], 50, 2, id_shift={"P1": 1})
    deals = server.deal(public, commitments(members))
    blobs = exchange(members, deals)
    with pytest.raises(MessageError, match="different record sets"):
        members["P0"].release(blobs["P0"])


def test_server_refuses_a_release_of_another_run():
    _, _, members, server, public, _ = secure_parties([[3], [4]], 50, 2)
    blobs = exchange(members, server.deal(public, commitments(members)))
    releases = [m.release(blobs[n]) for n, m in members.items()]
    bad = releases[1].__class__(**{**releases[1].__dict__, "config_hash": "0" * 64})
    with pytest.raises(MessageError, match="replayed or foreign"):
        server.select([releases[0], bad])


def test_simulate_secure_is_dp_and_within_budget():
    """A seeded secure run: n_hat rows, every value in the spec's domain, the ledger within
    the budget, and every 2-way marginal close to the data's, including the dependent
    cross-party pair (c1, c2) that an independent model would miss by a TVD of ~0.53."""
    n = 2000
    rng = np.random.default_rng(0)
    c0 = rng.integers(0, 3, n)
    c1 = np.where(rng.random(n) < 0.8, c0, rng.integers(0, 3, n))
    c2 = np.where(rng.random(n) < 0.8, c1, rng.integers(0, 3, n))
    df = pd.DataFrame(
        {"c0": c0, "c1": c1, "c2": c2, "c3": rng.integers(0, 3, n), "c4": rng.integers(0, 3, n)}
    )
    spec = DomainSpec.from_dict({f"c{j}": 3 for j in range(5)})
    synth, report = simulate(
        df, spec, [["c0", "c1"], ["c2", "c3", "c4"]], 1.0, 1e-5, method="secure", seed=4,
        max_rows=4096,
    )  # fmt: skip
    assert list(synth.columns) == list(df.columns)
    # Rows: n_hat, the pooled noisy count. Each table's sum alone has noise sd
    # sqrt(9 * 1.5) * sigma = 66.5 (sigma = 18.1 here); 200 is 3 sd of one table's sum.
    assert len(synth) == report.n_hat and abs(report.n_hat - n) < 200
    assert all(synth[c].isin(range(3)).all() for c in spec.names)
    assert not report.dp_guarantee and report.ledger.total_epsilon(report.delta) <= 1.0 + 1e-9
    assert report.ledger.total_rho <= epsilon_to_rho(1.0, 1e-5) * (1 + 1e-9)
    assert report.seeded
    assert "distributed_discrete_gaussian" in str(report)
    # Utility (fixed seed). One noisy measurement of a 9-cell table at the largest noise
    # scale (a cross pair: sigma * sqrt(1.5) = 22.2) has an expected TVD of
    # 0.5 * 9 * 22.2 * sqrt(2 / pi) / 2000 = 0.040; drawing n_hat rows adds at most
    # 0.5 * 9 * sqrt(p (1 - p) / n) * sqrt(2 / pi) = 0.025 (p = 1/9); the fit pools two
    # measurements of each pair, so 0.08 holds with margin (observed: at most 0.033 over
    # seeds 0-5).
    for a, b in combinations(spec.names, 2):
        p = df.groupby([a, b]).size() / len(df)
        q = synth.groupby([a, b]).size() / len(synth)
        assert 0.5 * p.sub(q, fill_value=0).abs().sum() < 0.08, (a, b)


def test_messages_hold_only_dp_masked_or_public_values(tmp_path):
    """Every file that leaves a party: the deal and feature blobs are ciphertext (uniform
    bytes); a release's manifest holds only public metadata and the noisy count, its int64
    arrays are noisy marginals (exact + discrete Gaussian, never all exact) and its uint64
    arrays are padded shares (uniform bytes). Bounds as in test_every_view_is_uniform."""
    from vertimrf.container import read_container
    from vertimrf.protocol.secure.release import RELEASE_KIND, SecureRelease

    cfg, spec, members, server, public, codes = secure_parties([[64, 3], [64]], 3000, 5, rows=4096)
    deals = server.deal(public, commitments(members))
    blobs = {name: m.features(deals[name]) for name, m in members.items()}
    for data in [*deals.values(), *(b for out in blobs.values() for b in out.values())]:
        body = np.frombuffer(data[64:], np.uint8)  # past the public headers
        assert uniform_bytes(body[: body.size // 8 * 8].view(np.uint64)) > P_REJECT
    inbox = {n: {q: blobs[q][n] for q in members if q != n} for n in members}
    for name, m in members.items():
        path = tmp_path / f"{name}.vmrf"
        m.release(inbox[name]).save(path)
        meta, arrays = read_container(path, RELEASE_KIND, array_bytes=lambda _: 1 << 30)
        public = {
            "party", "release", "config_hash", "digest", "within", "count", "commit_set", "seeded"
        }  # fmt: skip
        assert set(meta) == public
        assert (meta["count"] is not None) == (name == cfg.count_party)
        plan = server.plan
        for key, values in arrays.items():
            if values.dtype == np.uint64:  # ring words: uniform, nothing above the ring
                assert key.startswith("x/") and (values <= plan.ring_mask).all()
                assert uniform_bytes(values, plan.word_bytes) > P_REJECT
            else:
                assert values.dtype == np.int64 and key.startswith("w")
                marginal = tuple(meta["within"][int(key[1:])])
                exact = joint(codes, spec.names, plan.sizes, marginal).ravel()
                assert values.shape == exact.shape and np.any(values != exact)
        assert SecureRelease.load(path, plan).party == name


@pytest.mark.parametrize("name", ["server", "A+B", "", "a b"])
def test_party_names_that_would_confuse_viewers_or_pairs_are_refused(name):
    spec = DomainSpec.from_dict({"a": 2, "b": 2})
    with pytest.raises(ConfigError, match="not allowed"):
        from_preset(
            "default", epsilon=1.0, delta=1e-6, spec=spec, parties=[(name, ["a"]), ("Q", ["b"])],
            max_rows=8,
        )  # fmt: skip


def test_server_post_processing_of_the_first_release_matches_hand_computation():
    """The server's one-way pooling, record total and scores, on tables small enough to
    compute by hand: inverse-variance weights (a sum over k cells of noise scale s has
    variance k s^2), the discrete Laplace count's variance 2 e^-eps / (1 - e^-eps)^2, and a
    score of 0 for an exactly independent table without noise."""
    from vertimrf.synth.engine.scores import laplace_weight, one_way, pair_scores, record_total
    from vertimrf.synth.engine.tables import Tables

    t01 = np.array([[10.0, 30.0], [20.0, 40.0], [0.0, 0.0]])  # attrs 0 (3 values) x 1 (2)
    t02 = np.array([[12.0, 18.0], [28.0, 42.0], [1.0, -1.0]])  # attrs 0 x 2 (2 values)
    t12 = np.array([[8.0, 22.0], [32.0, 38.0]])  # attrs 1 x 2
    tables = Tables(
        {(0, 1): t01.ravel(), (0, 2): t02.ravel(), (1, 2): t12.ravel()},
        {(0, 1): 1.0, (0, 2): 2.0, (1, 2): 3.0},
    )
    sizes = (3, 2, 2)
    ones = one_way(tables, sizes)
    w01, w02 = 1 / (2 * 1.0), 1 / (2 * 4.0)  # attr 0 from tables over 2 cells each
    want0 = (t01.sum(1) * w01 + t02.sum(1) * w02) / (w01 + w02)
    np.testing.assert_allclose(ones[0], np.maximum(want0, 0))
    w10, w12 = 1 / (3 * 1.0), 1 / (2 * 9.0)
    np.testing.assert_allclose(ones[1], (t01.sum(0) * w10 + t12.sum(1) * w12) / (w10 + w12))

    eps = 0.5
    wc = (1 - math.exp(-eps)) ** 2 / (2 * math.exp(-eps))
    weights = [wc, 1 / 6, 1 / (6 * 4), 1 / (4 * 9)]
    values = [95.0, t01.sum(), t02.sum(), t12.sum()]
    assert laplace_weight(eps) == pytest.approx(wc)
    got = record_total(95, laplace_weight(eps), tables)
    assert got == pytest.approx(np.dot(weights, values) / sum(weights))
    assert record_total(-50, wc) == 1.0  # floored at one record

    tiny = 1e-9  # (almost) no noise, so no debiasing
    independent = Tables({(0, 1): np.outer([30.0, 70.0], [0.4, 0.6]).ravel()}, {(0, 1): tiny})
    assert pair_scores(independent, (2, 2), 100.0)[0, 1] == pytest.approx(0.0, abs=1e-9)
    copy = Tables({(0, 1): np.array([50.0, 0.0, 0.0, 50.0])}, {(0, 1): tiny})
    assert pair_scores(copy, (2, 2), 100.0)[0, 1] == pytest.approx(0.5)  # TVD of a copy

    # Partial record sets: a table over the 40 records its owners both hold, exactly
    # independent, scores 0 against its own population, and 0.3 measured against the 100 of
    # n_hat (1/2 |40 - 100| / 100: a pair of parties would look dependent).
    shared = Tables({(0, 1): np.outer([12.0, 28.0], [0.4, 0.6]).ravel()}, {(0, 1): tiny})
    own = pair_scores(shared, (2, 2), 100.0, {(0, 1): 40.0})[0, 1]
    assert own == pytest.approx(0.0, abs=1e-9)
    assert pair_scores(shared, (2, 2), 100.0)[0, 1] == pytest.approx(0.3)


def test_model_caps_grow_with_the_precision_within_their_bounds():
    """The server's model caps: the floor at low precision, the config's ceiling at high
    precision, and monotone in between."""
    from vertimrf.synth.engine import plan as srv

    caps = []
    # 6.0, not higher: on this 3-attribute domain the first release's noise reaches KLS's
    # s >= 1/2 limit near epsilon 6 (ProtocolConfig refuses larger ones).
    for eps in (0.05, 0.4, 3.2, 6.0):
        cfg, *_ = secure_parties([[4, 3], [5]], 50, 0, epsilon=eps)
        server = SecureServer(cfg)
        caps.append(engine_plan(server.session).model_caps(20000.0))
    assert caps[0] == (srv.MIN_CLIQUE_CELLS, srv.MIN_TOTAL_CELLS)
    assert caps[-1] == (cfg.options.max_clique_cells, cfg.options.max_total_cells)
    assert all(a[1] <= b[1] and a[0] <= b[0] for a, b in zip(caps[:-1], caps[1:], strict=True))


# Parties P0 (attributes 0, 1, 2) and P1 (3, 4); the workload's one marginal (0, 1, 3) holds
# the pairs (0, 1), (0, 3) and (1, 3), and neither 2 nor 4, measured alone.
WORKLOAD_SIZES = [[3, 4, 2], [5, 3]]
WORKLOAD = [["p0c0", "p0c1", "p1c0"]]
WORKLOAD_FIRST = [(0, 1), (0, 3), (1, 3), (2,), (4,)]


def _select_entries(ledger, release=SELECT):
    return [r for r in ledger.releases if r.description.startswith(f"{release}:")]


def test_a_workload_sets_the_first_release_and_the_run_spends_the_budget():
    """With a workload, the server's ledger charges and its first tables hold exactly the
    workload's first release, at the (smaller) noise of its 5 marginals, not the 10 pairs';
    the whole run spends the budget."""
    cfg, spec, server, codes = driven(WORKLOAD_SIZES, 300, 2, secure_workload=WORKLOAD)
    plan = server.plan
    assert plan.first_release() == WORKLOAD_FIRST
    assert sorted(server.data.first.values) == sorted(WORKLOAD_FIRST)
    entries = _select_entries(server.ledger)
    assert sum(r.count for r in entries) == len(WORKLOAD_FIRST)
    sigma = plan.sigma(SELECT, WORKLOAD_FIRST)
    assert {r.params["sigma"] for r in entries} == {sigma}
    assert sigma < plan.sigma(SELECT, plan.all_pairs())
    assert _select_entries(server.ledger, MEASURE)  # the re-measurement ran
    budget = epsilon_to_rho(cfg.epsilon, cfg.delta)
    assert server.ledger.total_rho == pytest.approx(budget, rel=1e-9)
    assert server.ledger.total_rho <= budget * (1 + 1e-12)


def test_a_workloads_first_release_is_the_exact_counts_without_noise(monkeypatch, tmp_path):
    """With the noise off, each party releases (and charges) its within marginals of the
    workload's first release, its 1-way ones included, and its shares of the cross ones,
    nothing else; the server's summed tables are the exact counts, by brute force, and its
    saved state loads them, and their charge, again."""
    monkeypatch.setattr(
        NoiseSampler, "discrete_gaussian", lambda self, sigma, size: np.zeros(size, np.int64)
    )
    cfg, spec, members, server, public, codes = secure_parties(
        WORKLOAD_SIZES, 300, 2, rows=512, secure_workload=WORKLOAD
    )
    inbox = exchange(members, server.deal(public, commitments(members)))
    releases = [m.release(inbox[name]) for name, m in members.items()]
    plan = server.plan
    for r in releases:
        p = plan.party_index(r.party)
        own = [m for m in WORKLOAD_FIRST if {plan.owner[a] for a in m} == {p}]
        assert sorted(r.within) == own
        assert {k: v.size for k, v in r.cross.items()} == {"P0+P1": 3 * 5 + 4 * 5}
        charged = _select_entries(members[r.party].ledger)
        assert sum(e.count for e in charged) == len(own) + 2  # own, then the cross pairs
    server.select(releases)
    assert sorted(server.data.first.values) == sorted(WORKLOAD_FIRST)
    for m, values in server.data.first.values.items():
        np.testing.assert_array_equal(values, joint(codes, spec.names, plan.sizes, m).ravel())
    assert sum(r.count for r in _select_entries(server.ledger)) == len(WORKLOAD_FIRST)
    server.save_state(tmp_path / "server.state")
    again = SecureServer.load_state(cfg, tmp_path / "server.state", seed=2)
    assert sorted(again.data.first.values) == sorted(WORKLOAD_FIRST)
    assert again.ledger.releases == server.ledger.releases


def test_without_a_workload_the_first_release_is_every_pair():
    cfg, *_ = secure_parties(WORKLOAD_SIZES, 10, 0)
    plan = SecureServer(cfg).plan
    assert plan.workload_first is None
    assert (
        plan.first_release()
        == plan.all_pairs()
        == [plan.canonical(m) for m in combinations(range(5), 2)]
    )


@pytest.mark.parametrize("population", ["intersection", "union"])
def test_a_workload_with_partial_record_sets_runs_and_spends_the_budget(population):
    """Partial record sets (the region counts, and over the union the pair populations and
    the union model) under a workload: the first release is the workload's, the run ends
    and spends the budget."""
    cfg, _, server, _ = driven(
        WORKLOAD_SIZES, 300, 2, rows=4000, record_sets="partial", population=population,
        secure_workload=WORKLOAD,
    )  # fmt: skip
    assert cfg.record_sets == "partial" and server.plan.first_release() == WORKLOAD_FIRST
    assert sorted(server.data.first.values) == sorted(WORKLOAD_FIRST)
    assert _select_entries(server.ledger, MEASURE)
    # partial record sets keep part of delta for the region counts' failure probability
    spent = server.ledger.total_epsilon(cfg.delta)
    assert spent == pytest.approx(cfg.epsilon, rel=1e-9) and spent <= cfg.epsilon + 1e-12
