"""A party cannot overspend, and the server verifies instead of trusting: every declared
mechanism parameter and every array is checked against the config."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tests.helpers import SECRET, make_config, party_frames, release_all, small_adult
from vertimrf.errors import MessageError, PrivacyBudgetError
from vertimrf.party import LocalParty as Party
from vertimrf.protocol.bins import BinMap
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.methods import expected_releases, party_rho
from vertimrf.server import PaperServer as Server

PARTIES = [["0", "2", "4", "6"], ["1", "3", "5", "7"]]


@pytest.fixture(scope="module", params=["fo", "fm"])
def run(request):
    df, spec = small_adult(2000, 8)
    cfg, members, messages = release_all(df, spec, PARTIES, seed=7, method=request.param)
    return df, spec, cfg, members, messages


def _forge_release(message, mechanism, **params):
    releases = []
    for r in message.releases:
        if r.mechanism == mechanism:
            r = dataclasses.replace(r, params={**r.params, **params})
        releases.append(r)
    return dataclasses.replace(message, releases=tuple(releases))


def _refused(cfg, messages, match):
    with pytest.raises(MessageError, match=match) as err:
        Server(cfg, progress=False).receive(messages)
    return str(err.value)


def test_honest_messages_pass_and_the_ledger_is_the_config_s(run):
    _, _, cfg, _, messages = run
    ledger = Server(cfg, progress=False).receive(messages).ledger
    budget = ProtocolBudget.from_config(cfg)
    for m in messages:
        mine = [r for r in ledger.releases if r.party == m.party]
        outside = [r for r in mine if not r.mechanism.startswith("privmrf.")]
        assert outside == expected_releases(cfg, m.party)
        local = sum(r.rho for r in mine if r.mechanism.startswith("privmrf."))
        assert local == pytest.approx(budget.rho_locmrf_party, rel=1e-9)
    assert ledger.total_rho <= ledger.budget_rho * (1 + 1e-9)


def test_halving_a_declared_noise_scale_is_refused(run):
    _, _, cfg, _, messages = run
    count = messages[0]
    (release,) = [r for r in count.releases if r.mechanism == "discrete_laplace"]
    forged = _forge_release(count, "discrete_laplace", scale=release.params["scale"] / 2)
    text = _refused(cfg, [forged, messages[1]], "scale")
    assert repr(count.party) in text and "discrete_laplace" in text
    # Declaring a larger epsilon (less noise) with a consistent rho is refused too.
    eps = 2 * release.params["epsilon"]
    forged = dataclasses.replace(
        count,
        releases=tuple(
            dataclasses.replace(r, params={**r.params, "epsilon": eps}, rho=eps * eps / 2)
            if r.mechanism == "discrete_laplace"
            else r
            for r in count.releases
        ),
    )
    _refused(cfg, [forged, messages[1]], "discrete_laplace")


def test_a_bin_histogram_of_the_wrong_length_is_refused(run):
    _, _, cfg, _, messages = run
    m = next(x for x in messages if x.bins)
    name, bm = next(iter(m.bins.items()))
    short = BinMap(bm.value_to_bin[:-1], bm.noisy_counts[:-1])
    forged = dataclasses.replace(m, bins={**m.bins, name: short})
    others = [x for x in messages if x.party != m.party]
    text = _refused(cfg, [forged, *others], "discrete_laplace_hist")
    assert repr(m.party) in text


def test_a_bin_map_that_its_counts_do_not_give_is_refused(run):
    _, _, cfg, _, messages = run
    m = next(x for x in messages if x.bins)
    name, bm = next(iter(m.bins.items()))
    other_map = np.zeros_like(bm.value_to_bin)
    other_map[-1] = bm.value_to_bin.max()
    forged = dataclasses.replace(m, bins={**m.bins, name: BinMap(other_map, bm.noisy_counts)})
    others = [x for x in messages if x.party != m.party]
    _refused(cfg, [forged, *others], "bin map")


def test_a_local_model_that_spent_another_share_is_refused(run):
    _, _, cfg, _, messages = run
    m = messages[1]
    dropped = tuple(r for r in m.releases if r.mechanism != "privmrf.r_scores")
    _refused(cfg, [messages[0], dataclasses.replace(m, releases=dropped)], "privmrf")
    sigma_halved = _forge_release(
        m,
        "privmrf.marginals",
        sigma=next(r for r in m.releases if r.mechanism == "privmrf.marginals").params["sigma"] / 2,
    )
    _refused(cfg, [messages[0], sigma_halved], "privmrf.marginals")


def test_local_real_queries_must_be_discrete_and_charged_for_their_scale(run):
    # The local model's R-scores and error queries are released as round(s q) + discrete
    # Gaussian noise: their declared sensitivity must be ceil(s Delta) for the declared s,
    # and a float (continuous Gaussian) sampler is refused.
    _, _, cfg, _, messages = run
    m = messages[1]
    (scores,) = [r for r in m.releases if r.mechanism == "privmrf.r_scores"]
    scale = scores.params["scale"]
    assert scores.params["sampler"] == "discrete_gaussian"
    assert scores.params["sensitivity"] == 2 * scale
    for forged in (
        {"sampler": "gaussian"},
        {"sensitivity": 2.0},  # the real query's, not the rounded one's
        {"scale": 2 * scale},  # would need sensitivity 4 s
        {"scale": 0},
    ):
        _refused(cfg, [messages[0], _forge_release(m, "privmrf.r_scores", **forged)], "r_scores")


def test_encoded_arrays_are_checked_against_the_mechanism(run):
    _, _, cfg, _, messages = run
    m = messages[1]
    if cfg.method == "fo":
        grr = m.grr.astype(np.int64)  # a signed dtype, so that a negative code can be sent
        grr[0, 0] = -1
        _refused(cfg, [messages[0], dataclasses.replace(m, grr=grr)], "grr")
        _refused(
            cfg, [messages[0], dataclasses.replace(m, grr_epsilon=m.grr_epsilon * 2)], "GRR eps"
        )
        _refused(cfg, [messages[0], dataclasses.replace(m, grr=m.grr[:-1])], "rows")
    else:
        noise = dataclasses.replace(m.sketch.noise, alpha_min=m.sketch.noise.alpha_min - 1)
        forged = dataclasses.replace(m, sketch=dataclasses.replace(m.sketch, noise=noise))
        _refused(cfg, [messages[0], forged], "alpha_min")


def test_a_party_encodes_once_and_cannot_overspend(run):
    df, spec, cfg, members, messages = run
    with pytest.raises(PrivacyBudgetError, match="once per run"):
        members[1].release(noisy_count=messages[0].noisy_count)
    for party in members:
        assert party.ledger.budget_rho == pytest.approx(party_rho(cfg, party.name), rel=1e-12)
        assert party.ledger.total_rho == pytest.approx(party.ledger.budget_rho, rel=1e-9)
        with pytest.raises(PrivacyBudgetError):
            party.ledger.charge_pure("discrete_laplace", 0.01, party=party.name)
    # The local models use the protocol's one noisy count: one count release in all.
    kinds = [r.mechanism for m in messages for r in m.releases]
    assert kinds.count("discrete_laplace") == 1 and "privmrf.count" not in kinds


def test_keys_and_row_order_are_bound_to_the_run():
    df, spec = small_adult(600, 8)
    frames = party_frames(df, PARTIES, seed=1)
    out = {}
    for method in ("fm", "fo"):
        for nonce in ("a" * 32, "b" * 32):
            cfg = make_config(spec, PARTIES, method=method, run_nonce=nonce, t=64)
            party = Party("party0", frames[0], cfg, SECRET, id_column="rid", seed=0, progress=False)
            msg = party.release()
            out[method, nonce] = msg
    assert out["fm", "a" * 32].key_fingerprint != out["fm", "b" * 32].key_fingerprint
    # Same seeds, same data: only the run-bound order differs between the two FO runs.
    assert not np.array_equal(out["fo", "a" * 32].grr, out["fo", "b" * 32].grr)
