"""method="secure" with secure_pipeline="paper": the paper's LocMRF -> GraphCom -> InitMRF ->
OptMRF on the secure product's noisy exact counts of every binned cross-party pair."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from vertimrf import simulate
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import Message, codec, local_run
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError, MessageError
from vertimrf.party import LocalParty as Party
from vertimrf.party.secure import SecureParty
from vertimrf.protocol import from_preset
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.server import PaperServer as Server
from vertimrf.server.secure import SecureServer

SECRET = bytes(range(32))
SIZES = {"P0": {"a": 10, "b": 3}, "P1": {"c": 6, "d": 2}}


def _frame(n: int, seed: int) -> tuple[pd.DataFrame, DomainSpec]:
    """Correlated columns: every column is a noisy function of one latent code."""
    rng = np.random.default_rng(seed)
    z = rng.integers(0, 6, n)
    cols = {}
    for sizes in SIZES.values():
        for c, u in sizes.items():
            cols[c] = np.where(rng.random(n) < 0.7, z % u, rng.integers(0, u, n))
    spec = DomainSpec.from_dict({c: u for s in SIZES.values() for c, u in s.items()})
    return pd.DataFrame(cols), spec


def _config(spec: DomainSpec, n: int, epsilon: float = 2.0, **fields) -> ProtocolConfig:
    return from_preset(
        "default", epsilon=epsilon, delta=1e-6, spec=spec,
        parties=[(p, list(s)) for p, s in SIZES.items()], method="secure",
        secure_pipeline="paper", max_rows=n, **fields,
    )  # fmt: skip


def _run_parts(frame: pd.DataFrame, cfg: ProtocolConfig, seed: int):
    """The local messages and the secure releases that reach the server in one
    paper-pipeline run of the drivers (each party's rows in its own order), and a server."""
    data = {
        p.name: frame[list(p.columns)]
        .assign(id=np.arange(len(frame)))
        .sample(frac=1.0, random_state=i)
        for i, p in enumerate(cfg.parties)
    }
    run = local_run(data, cfg, SECRET, seed=seed)
    run.run(before="synthesize")  # every step but the server's last
    inbox = run.server.transport
    server = SecureServer(cfg, seed=seed)
    messages = {
        n: codec.read_message(inbox.receive(Message(n, "server", "local")), cfg) for n in SIZES
    }
    releases = [
        codec.read_release(inbox.receive(Message(n, "server", "release")), server.plan)
        for n in SIZES
    ]
    return messages, releases, server


def test_the_secure_estimates_are_the_exact_binned_cross_counts_plus_the_charged_noise():
    """Each binned cross table is the exact cross tabulation of the parties' binned codes
    plus noise of variance 1.5 sigma^2 (two party shares and the server's, sigma^2 / 2
    each): every cell lies within 6 standard deviations (a Gaussian cell leaves that band
    with probability below 2e-9; 24 + 8 + ... cells), and the noise is not all zero."""
    frame, spec = _frame(3000, 0)
    cfg = _config(spec, 4096)
    messages, releases, server = _run_parts(frame, cfg, 3)
    tables = server.cross_tables(releases)
    plan = server.plan
    codes = TableEncoder(spec).table(frame).codes
    binned = codes.copy()
    for msg in messages.values():
        for c, m in msg.bins.items():
            j = spec.names.index(c)
            binned[:, j] = m.value_to_bin[codes[:, j]]
    sigma = plan.sigma(SELECT, plan.all_pairs())
    assert sorted(tables) == [(0, 2), (0, 3), (1, 2), (1, 3)]  # the cross pairs only
    assert plan.sizes == (4, 3, 4, 2)  # a and c binned to 4 (bins = 4), the rest whole
    for (i, j), table in tables.items():
        exact = np.zeros((plan.sizes[i], plan.sizes[j]))
        np.add.at(exact, (binned[:, i], binned[:, j]), 1)
        assert np.abs(table - exact).max() <= 6 * sigma * math.sqrt(1.5)
        assert np.any(table != exact)


def test_ledger_holds_local_releases_and_one_cross_release_within_the_budget():
    """The one ledger: each party's LocMRF and bin counts, the count, and one distributed
    discrete Gaussian release per pair of parties (no GRR), totalling at most the budget;
    each single viewer's epsilon is at most the total."""
    frame, spec = _frame(1500, 1)
    synth, report = simulate(frame, config=_config(spec, 2048), seed=4)
    mechanisms = {r.mechanism for r in report.ledger.releases}
    assert "grr" not in mechanisms
    assert {"distributed_discrete_gaussian", "discrete_laplace_hist", "discrete_laplace"} <= (
        mechanisms
    )
    cross = [r for r in report.ledger.releases if r.mechanism == "distributed_discrete_gaussian"]
    assert [r.party for r in cross] == ["P0+P1"] and cross[0].count == 4
    assert report.ledger.total_epsilon(report.delta) <= 2.0 * (1 + 1e-9)
    assert report.ledger.total_rho <= report.ledger.budget_rho * (1 + 1e-9)
    for viewer, rho in report.viewers.items():
        if "+" not in viewer:
            assert rho <= report.ledger.total_rho * (1 + 1e-12)
    assert len(synth) == report.n_hat and list(synth.columns) == list(spec.names)


def test_messages_of_the_paper_pipeline_hold_no_raw_values():
    """The local messages carry no GRR rows or sketches; the secure releases carry no
    within-party marginals and no count (the count is the local message's), only the
    padded shares of the cross pairs."""
    frame, spec = _frame(800, 2)
    messages, releases, server = _run_parts(frame, _config(spec, 1024), 5)
    for msg in messages.values():
        assert msg.grr is None and msg.sketch is None
    for release in releases:
        assert release.count is None and not release.within
        assert set(release.cross) == {"P0+P1"}
        assert release.cross["P0+P1"].dtype == np.uint64


def test_the_paper_pipeline_is_reproducible_and_refuses_bad_inputs():
    frame, spec = _frame(600, 3)
    cfg = _config(spec, 1024)
    first, _ = simulate(frame, config=cfg, seed=7)
    again, _ = simulate(frame, config=cfg, seed=7)
    pd.testing.assert_frame_equal(first, again)
    messages, releases, server = _run_parts(frame, cfg, 6)
    with pytest.raises(MessageError, match="secure releases"):
        Server(cfg, progress=False).synthesize(list(messages.values()))
    with pytest.raises(ConfigError, match="bin maps"):
        SecureParty(
            "P0", frame[["a", "b"]].assign(id=np.arange(len(frame))), cfg, SECRET,
            KeyPair.generate("P0"), {"P1": KeyPair.generate("P1").public()},
        )  # fmt: skip
    with pytest.raises(ConfigError, match="local_mrf"):
        _config(spec, 1024, local_mrf=False)
    with pytest.raises(ConfigError, match="SecureParty"):
        Party("P0", frame.assign(id=np.arange(len(frame))), _config(spec, 1024).with_changes(
            secure_pipeline="select"), SECRET)  # fmt: skip
