"""cross_noise "coins" through whole secure releases: each viewer faces the coins' whole
variance (with A's, B's or the dealer's keys fixed), the config and the plan carry the
setting, and a run with coins is exact but for its noise."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.secure_runs import P_REJECT, cross_tab, driven, split, uniform_bytes
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ConfigError
from vertimrf.party.secure import SecureParty
from vertimrf.product.dealer import DealerProduct
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.cross_noise import COIN_MECHANISM
from vertimrf.protocol.secure.features import COIN_ROUNDS, open_features
from vertimrf.protocol.secure.plan import MEASURE, SELECT
from vertimrf.protocol.secure.product import PRODUCTS
from vertimrf.server.secure import SecureServer

U = 64  # each party's one attribute: the first release's cross marginal has U * U cells
N_ROWS = 500
ROUNDS = 3
EPSILON = 6.0  # sigma about 3.3 over one cross marginal: 44 coins a cell


class NoCrossTerm(DealerProduct):
    """The product with the coins' cross term dropped: each party adds its own coins'
    centred sum, so a release carries sum a + sum b - N, half of which each party knows."""

    def coin_lower(self, bits, seeds, received, c0, word):
        return bits.sum(axis=1, dtype=np.uint64) - np.uint64(bits.shape[1] // 2)

    def coin_higher(self, bits, dealt, received):
        return bits.sum(axis=1, dtype=np.uint64) - np.uint64(bits.shape[1] // 2)


@pytest.fixture
def nocross(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PRODUCTS, "nocross", f"{__name__}:NoCrossTerm")


def _released_noise(cfg, frame, parties, keys, server_keys):
    """One first release of the pair under ``keys`` (by party) and the server's
    ``server_keys``: each cross cell's released noise (the two padded values summed, less
    the exact count). With coins at w = 1 the split components are 0, so the noise is the
    coins' centred sum alone."""
    public = {name: k.public() for name, k in keys.items()}
    members = {
        name: SecureParty(
            name,
            frame[cols].assign(id=np.arange(len(frame))),
            cfg,
            SECRET,
            keys[name],
            {q: k for q, k in public.items() if q != name},
            seed=0,
        )  # fmt: skip
        for name, cols in parties
    }
    server = SecureServer(cfg, seed=0, keypair=server_keys)
    deals = server.deal(public, {n: m.commitment() for n, m in members.items()})
    blobs = {n: m.features(deals[n]) for n, m in members.items()}
    coins = {n: m.coins(SELECT) for n, m in members.items()}
    inbox = {n: {q: blobs[q][n] for q in members if q != n} for n in members}
    coin_inbox = {n: {q: coins[q][n] for q in members if q != n} for n in members}
    released = [m.release(inbox[n], coin_inbox[n]) for n, m in members.items()]
    plan = secure_plan(cfg)
    total = plan.signed(released[0].cross["P0+P1"] + released[1].cross["P0+P1"])
    exact = cross_tab(frame["p0c0"].to_numpy(), frame["p1c0"].to_numpy(), U, U).ravel()
    return (total - exact).astype(np.float64), plan


def _mean_square(fixed: str, product: str = "dealer") -> tuple[float, int]:
    """The released noise's mean square over ROUNDS releases in which ``fixed`` (the lower
    party P0, the higher P1, or the dealer) keeps its key pair, so its coins, or its masks'
    secret, stay the same, and every other key pair is drawn afresh; and the coins a cell."""
    cfg, _, frame, parties = split([[U], [U]], N_ROWS, 5, epsilon=EPSILON, rows=N_ROWS,
                                   cross_noise="coins", product=product)  # fmt: skip
    kept = {"P0": KeyPair.generate("P0"), "P1": KeyPair.generate("P1")}
    server_kept = KeyPair.generate("server")
    squares, coins = [], 0
    for _ in range(ROUNDS):
        keys = {n: kept[n] if fixed == n else KeyPair.generate(n) for n in kept}
        server_keys = server_kept if fixed == "dealer" else KeyPair.generate("server")
        noise, plan = _released_noise(cfg, frame, parties, keys, server_keys)
        squares.append(noise**2)
        coins = plan.cross_noise.coins(plan.sigma(SELECT, plan.first_release()))
    return float(np.mean(squares)), coins


def _standard_error(coins: int) -> float:
    """Over M samples of a centred Bin(N, 1/2), the mean square's standard error is
    sqrt((E X^4 - (E X^2)^2) / M), E X^2 = N / 4, E X^4 = 3 N^2 / 16 - N / 8 (theory)."""
    return float(np.sqrt((coins**2 / 8 - coins / 8) / (U * U * ROUNDS)))


@pytest.mark.parametrize("fixed", ["P0", "P1", "dealer"])
def test_each_viewer_faces_the_coins_whole_variance(fixed, nocross):
    """With one viewer's key pair kept over 3 releases (its coins, or the dealer's mask
    secret, fixed) and the rest fresh, the released noise's mean square is N/4 = sigma^2
    within 3 standard errors (from theory, above; 12,288 cells). With the cross term dropped
    (product "nocross") it is not: the release then carries sum a + sum b - N, whose mean
    square is about N/2, half of it known to each party."""
    got, coins = _mean_square(fixed)
    assert coins >= 40
    assert abs(got - coins / 4) <= 3 * _standard_error(coins)
    dropped, _ = _mean_square(fixed, "nocross")
    assert abs(dropped - coins / 4) > 3 * _standard_error(coins)


def test_the_config_carries_coins_only_for_method_secure_and_only_when_set():
    cfg, *_ = split([[3], [2]], 10, 0, cross_noise="coins", coin_weight=0.5)
    assert cfg.to_dict()["cross_noise"] == "coins" and cfg.to_dict()["coin_weight"] == 0.5
    plain, *_ = split([[3], [2]], 10, 0)
    assert "cross_noise" not in plain.to_dict() and "coin_weight" not in plain.to_dict()
    for bad, match in (
        ({"cross_noise": "bits"}, "cross_noise must be"),
        ({"cross_noise": "coins", "coin_weight": 0.0}, "coin_weight must be"),
        ({"cross_noise": "coins", "coin_weight": 1.5}, "coin_weight must be"),
        ({"coin_weight": 0.5}, "coin_weight applies"),
    ):
        with pytest.raises(ConfigError, match=match):
            split([[3], [2]], 10, 0, **bad)


def test_a_run_with_coins_spends_within_its_budget_and_says_what_each_viewer_faces():
    """A seeded three-party run through both rounds with coins at w = 1/2: every cross entry
    is the coins' mechanism, the ledger's epsilon (its failure charged to delta) is within
    the budget, no viewer exceeds the ledger, and the report says what a cross count carries."""
    cfg, _, server, _ = driven(
        [[3, 4], [5], [2, 3]], 200, 1, epsilon=8.0, cross_noise="coins", coin_weight=0.5
    )
    cross = [r for r in server.ledger.releases if "+" in (r.party or "")]
    assert cross and {r.mechanism for r in cross} == {COIN_MECHANISM}
    assert all(r.params["coins"] > 0 and r.params["weight"] == 0.5 for r in cross)
    assert 0 < server.ledger.failure_delta <= 0.01 * cfg.delta
    assert server.ledger.total_epsilon(cfg.delta) <= cfg.epsilon * (1 + 1e-9)
    report = dataclasses.replace(server.report(), seeded_roles=())  # its guarantee, unseeded
    assert all(rho <= server.ledger.total_rho * (1 + 1e-12) for rho in report.viewers.values())
    assert "cross counts (coins, w = 0.5)" in str(report) and "carries 1.25 sigma^2" in str(report)


def test_each_view_of_the_coins_is_uniform_and_the_shares_too():
    """A peer's view of a party's coins (bits - C, opened with the pairwise key) and the
    server's view of each padded share are uniform words (chi-square over their bytes, as
    tests/simulation/test_secure.py checks the features), though the bits are 0 or 1."""
    cfg, _, frame, parties = split([[U], [U]], N_ROWS, 5, epsilon=EPSILON, rows=N_ROWS,
                                   cross_noise="coins")  # fmt: skip
    keys = {n: KeyPair.generate(n) for n in ("P0", "P1")}
    public = {name: k.public() for name, k in keys.items()}
    members = {
        name: SecureParty(
            name,
            frame[cols].assign(id=np.arange(N_ROWS)),
            cfg,
            SECRET,
            keys[name],
            {q: k for q, k in public.items() if q != name},
        )  # fmt: skip
        for name, cols in parties
    }
    server = SecureServer(cfg)
    deals = server.deal(public, {n: m.commitment() for n, m in members.items()})
    blobs = {n: m.features(deals[n]) for n, m in members.items()}
    coins = {n: m.coins(SELECT) for n, m in members.items()}
    plan = members["P0"].plan
    shape = plan.coin_shapes(SELECT, plan.first_release())[0, 1]
    for sender, receiver in (("P0", "P1"), ("P1", "P0")):
        m = members[receiver]
        words, _ = open_features(
            m.session.keys[sender], coins[sender][receiver], m.session.context, sender,
            receiver, shape, word=plan.word, round_=COIN_ROUNDS[1], word_bytes=plan.word_bytes,
        )  # fmt: skip
        assert words.shape == shape and uniform_bytes(words, plan.word_bytes) > P_REJECT
    inbox = {n: ({q: blobs[q][n] for q in members if q != n}) for n in members}
    coin_inbox = {n: ({q: coins[q][n] for q in members if q != n}) for n in members}
    releases = [m.release(inbox[n], coin_inbox[n]) for n, m in members.items()]
    for r in releases:
        assert uniform_bytes(r.cross["P0+P1"], plan.word_bytes) > P_REJECT


@pytest.mark.parametrize("weight", [1.0, 0.5])
def test_a_remeasurements_coin_blob_is_within_the_schedules_limit(weight):
    """The schedule's bound on a re-measurement's coin blob holds a request of every 2-way
    and 3-way marginal (the most cells) and one of a single cross marginal (the least
    sigma, where the coins' cost ratio to the Gaussian's is largest)."""
    from itertools import combinations

    from vertimrf.protocol.secure.features import coin_blob_bytes, feature_blob_bytes
    from vertimrf.protocol.secure.plan import MEASURE

    cfg, *_ = split([[3, 4], [5], [2, 3]], 10, 0, epsilon=8.0, cross_noise="coins",
                    coin_weight=weight)  # fmt: skip
    plan = secure_plan(cfg)
    attrs = range(len(plan.sizes))
    every = [m for k in (2, 3) for m in combinations(attrs, k) if plan.measurable(m)]
    for request in (every, [(0, 2)]):
        checked = plan.check_request(request)
        for (p, q), shape in plan.coin_shapes(MEASURE, checked.marginals).items():
            sent = feature_blob_bytes(shape, plan.word, plan.word_bytes)
            assert sent <= coin_blob_bytes(plan, plan.names[p], plan.names[q], first=False)


def test_a_remeasurement_with_no_cross_marginal_runs_with_coins(monkeypatch):
    """With coins, a selection that re-measures no cross-party marginal (a thin table's few
    extras can leave none) still runs: every peer's coin blob is empty, not a KeyError. The
    selection is cut to the parties' own marginals here; the run ends with a table."""
    from vertimrf.server.secure import selection

    choose = selection.choose

    def own_only(first, n_hat, plan, oracle, rng):
        choice = choose(first, n_hat, plan, oracle, rng)
        owner = oracle.plan.owner
        own = [m for m in choice.marginals if len({owner[a] for a in m}) == 1]
        return dataclasses.replace(choice, marginals=own)

    monkeypatch.setattr(selection, "choose", own_only)
    _, _, server, _ = driven([[3, 4], [5, 2]], 300, 0, epsilon=2.0, cross_noise="coins")
    plan = server.plan
    request = server.data.request
    assert request is not None and request.marginals
    assert not plan.coin_shapes(MEASURE, request.marginals, request.bins)
    assert server.data.model is not None
