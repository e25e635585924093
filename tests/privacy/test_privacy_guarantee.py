"""The privacy guarantee the library prints must hold: FM is refused unless the user accepts
that it is not DP, and then labelled; FO and Centralized are DP; seeded runs say so."""

from __future__ import annotations

import math

import pytest

from tests.helpers import NONCE, make_config, small_adult
from vertimrf import PrivMRF, simulate
from vertimrf.errors import PrivacyError, VertimrfError
from vertimrf.privacy.fm import fm_noise
from vertimrf.privacy.fm_gap import fm_delta_lower_bound
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.protocol import ProtocolConfig, from_preset
from vertimrf.protocol.budget import ProtocolBudget
from vertimrf.protocol.report import fm_worst_case

PARTIES = [["0", "1", "2", "3"], ["4", "5", "6", "7"]]


@pytest.fixture(scope="module")
def table():
    return small_adult(1500, 8)


@pytest.mark.parametrize(
    "settings",
    [{"method": "fm"}, {"method": "fm", "hash": "xxh64"}],
)
def test_non_dp_settings_are_refused_without_the_opt_in(table, settings):
    _, spec = table
    with pytest.raises(PrivacyError, match="allow_non_dp") as err:
        from_preset("default", epsilon=1.0, delta=1e-5, spec=spec, parties=PARTIES, **settings)
    assert isinstance(err.value, VertimrfError)
    if settings["method"] == "fm":
        # The message says why, with the design note's finding in words.
        assert "share randomness" in str(err.value) and "not differentially private" in str(
            err.value
        )


def test_simulate_refuses_fm_without_the_opt_in(table):
    df, spec = table
    with pytest.raises(PrivacyError):
        simulate(df, spec, PARTIES, 1.0, 1e-5, method="fm", seed=0)


def test_fm_with_the_opt_in_is_labelled_not_dp(table):
    df, spec = table
    _, report = simulate(
        df,
        spec,
        PARTIES,
        1.6,
        1e-5,
        method="fm",
        allow_non_dp=True,
        seed=0,
        t=256,
        server_iters=20,
    )
    assert report.dp_guarantee is False and report.total_epsilon is None
    text = str(report)
    assert "NOT differentially private" in text
    assert "delta >=" in text and "seeded run: reproducible noise, not for release" in text
    with pytest.raises(PrivacyError):
        report.ledger.total_epsilon()
    assert "total (epsilon, delta) =" not in report.ledger.report()
    d = report.to_dict()
    assert d["dp_guarantee"] is False and d["total_epsilon"] is None
    bound = d["fm_delta_lower_bound"]
    # The printed bound is the calculator's value at the config's own sketch parameters.
    cfg = make_config(spec, PARTIES, t=256)
    eps_prime = ProtocolBudget.from_config(cfg).eps_prime
    noise = fm_noise(eps_prime)
    want = fm_delta_lower_bound(256, eps_prime, noise.k_p, noise.alpha_min, 1.0, 8, 1.6)
    assert bound["delta_all"] == pytest.approx(want, rel=1e-12)
    assert bound["delta_all"] > 1e-5  # far above the delta the user asked for


def test_the_demo_config_bound_is_the_design_note_figure():
    """Adult demo (eps 1.6, delta 1/n, t 2000, 15 columns over two parties): the design note
    gives delta >= 6.4e-4 (two rare columns) and 0.76 (all columns)."""
    from vertimrf.datasets import load_dataset

    df, spec = load_dataset("adult")
    names = list(spec.names)
    cfg = from_preset(
        "paper",
        epsilon=1.6,
        delta=1 / len(df),
        spec=spec,
        parties=[names[:8], names[8:]],
        method="fm",
        allow_non_dp=True,
    )
    b = fm_worst_case(cfg)
    assert (b.t, b.k_p, b.alpha_min) == (2000, 728, 10)
    assert float(f"{b.delta_two:.2g}") == 6.4e-4
    assert float(f"{b.delta_all:.2g}") == 0.76


@pytest.mark.parametrize("method", ["fo"])
def test_fo_is_dp_and_its_total_is_within_budget(table, method):
    df, spec = table
    _, report = simulate(df, spec, PARTIES, 1.0, 1e-5, method=method, server_iters=20)
    assert report.dp_guarantee is True  # unseeded: a seeded run claims no guarantee
    assert report.total_epsilon <= 1.0 * (1 + 1e-9)
    # The released count in the report is the integer the discrete Laplace sampler drew.
    assert isinstance(report.n_hat, int) and isinstance(report.to_dict()["n_hat"], int)
    assert all(r.params.get("scale") for r in report.ledger.releases if "laplace" in r.mechanism)
    assert "NOT differentially private" not in str(report)
    assert "differentially private; budget" in str(report)


def test_centralized_is_dp_and_seeded_runs_say_so(table):
    df, spec = table
    fit = PrivMRF(1.0, 1e-5, seed=0, progress=False).fit(df, spec)
    rep = fit.report
    assert fit.ledger.dp_guarantee and rep.epsilon_zcdp <= 1.0 * (1 + 1e-9)
    assert rep.seeded and "seeded run: reproducible noise, not for release" in str(rep)


def _spy_on_noise(monkeypatch) -> list[str]:
    """Record the class of every sampler that draws noise (both public draws of every one)."""
    drawn: list[str] = []
    for name in ("discrete_laplace", "discrete_gaussian"):
        draw = getattr(NoiseSampler, name)

        def spy(self, *args, _draw=draw, **kwargs):
            drawn.append(type(self).__name__)
            return _draw(self, *args, **kwargs)

        monkeypatch.setattr(NoiseSampler, name, spy)
    return drawn


def test_unseeded_runs_use_the_secure_sampler(table, monkeypatch):
    df, spec = table
    drawn = _spy_on_noise(monkeypatch)
    fit = PrivMRF(1.0, 1e-5, progress=False).fit(df.iloc[:300], spec)
    assert not fit.report.seeded and "seeded run" not in str(fit.report)
    assert not math.isnan(fit.n_hat)
    # Every noisy value (the count and each measurement) came from the OpenDP sampler.
    assert drawn and set(drawn) == {"SecureSampler"}, drawn
    drawn.clear()  # the spy sees the other sampler when a seed is given
    PrivMRF(1.0, 1e-5, seed=0, progress=False).fit(df.iloc[:300], spec)
    assert drawn and set(drawn) == {"SeededSampler"}, drawn


def test_t_auto_is_resolved_once_from_public_max_rows(table):
    _, spec = table
    cfg = make_config(spec, PARTIES, t="auto", max_rows=50_000)
    assert isinstance(cfg.options.t, int) and cfg.max_rows == 50_000
    back = ProtocolConfig.from_dict(cfg.to_dict())
    assert back == cfg and back.config_hash() == cfg.config_hash()
    with pytest.raises(VertimrfError, match="max_rows"):
        make_config(spec, PARTIES, t="auto")
    raw = cfg.to_dict()
    raw["options"]["t"] = "auto"
    with pytest.raises(VertimrfError, match="resolved when the config is made"):
        ProtocolConfig.from_dict(raw)


def test_every_new_config_is_a_new_run(table):
    _, spec = table
    kw = {"epsilon": 1.0, "delta": 1e-5, "spec": spec, "parties": PARTIES, "max_rows": 50000}
    a = from_preset("default", **kw)
    b = from_preset("default", **kw)
    assert a.run_nonce != b.run_nonce and a.run_context() != b.run_context()
    assert ProtocolConfig.from_dict(a.to_dict()).run_context() == a.run_context()
    fixed = from_preset("default", run_nonce=NONCE, **kw)
    assert fixed.run_nonce == NONCE
    with pytest.raises(VertimrfError, match="hex"):
        from_preset("default", run_nonce="not-hex", **kw)
