"""method="secure" spends its whole budget at every epsilon: each release's noise scale is
the smallest at which its ledger entries cost its share (``SecurePlan.sigma``), and every
role derives that scale from the config and the public request."""

from __future__ import annotations

import math

import pytest

from tests.secure_runs import commitments, exchange, secure_parties
from vertimrf import load_dataset, simulate
from vertimrf.driver import codec
from vertimrf.privacy.split import first_share
from vertimrf.privacy.zcdp import epsilon_to_rho
from vertimrf.protocol.secure.plan import MEASURE

# Summing the count's, the first release's and the re-measurement's costs (each at most its
# share, the shares' sum at most rho) may round up by a few units in the last place.
ROUNDING = 4 * 2.0**-52


@pytest.mark.parametrize("epsilon", [0.4, 1.6, 60.0])
def test_the_ledger_spends_the_configs_rho_and_never_more(epsilon):
    """NLTCS's first 3,000 rows over two parties (8 and 8 binary columns): the server's
    ledger totals the config's rho to 1e-9 relative. At epsilon 60 a noise floor on the
    re-measurement left 46% of rho unspent before (NLTCS in full: 38.9 of 60 spent)."""
    df, spec = load_dataset("nltcs")
    names = list(spec.names)
    _, report = simulate(
        df.iloc[:3000], spec, [names[:8], names[8:]], epsilon, 1e-6, seed=3, max_rows=4096
    )
    rho = epsilon_to_rho(epsilon, 1e-6)
    spent = report.ledger.total_rho
    assert spent == pytest.approx(rho, rel=1e-9, abs=0.0)
    assert spent <= rho * (1 + ROUNDING)
    measured = [r for r in report.ledger.releases if r.description.startswith("measure:")]
    share = 1.0 - 0.001 - first_share(spec.domain.sizes, rho, 4096)  # shares "auto"
    assert measured and math.fsum(r.rho for r in measured) <= share * rho * (1 + ROUNDING)


def test_the_parties_and_the_server_derive_the_same_noise_scale_for_a_request():
    """At epsilon 60 (where the KLS tau term sets sigma, so it depends on the cells): a
    request that bins a cross and an own pair goes to the parties as bytes; each party's
    ledger entries of the re-measurement equal the server's, sigma and rho, to the bit, and
    the release costs the re-measurement's share."""
    cfg, spec, members, server, public, codes = secure_parties(
        [[20, 6], [30]], 1500, 2, epsilon=60.0, rows=1600
    )
    blobs = exchange(members, server.deal(public, commitments(members)))
    server.select([m.release(blobs[n]) for n, m in members.items()])
    plan = server.plan
    bins_a = tuple(i // 5 for i in range(20))
    request = plan.check_request(
        [(0, 2), (0, 1), (1, 2)], {(0, 2): (bins_a, None), (0, 1): (bins_a, None)}
    )
    server.data.request = request  # the server's selection, fixed by the test
    wire = codec.request_bytes(request, cfg.config_hash())
    releases = []
    for m in members.values():
        releases.append(m.measure(codec.read_request(wire, m.plan, cfg.config_hash())))
    server.fit(releases)
    sigma = plan.sigma(MEASURE, request.marginals, request.bins)
    assert sigma < plan.sigma(MEASURE, request.marginals)  # the bins' fewer cells count
    theirs = [r for r in server.ledger.releases if r.description.startswith("measure:")]
    assert {r.params["sigma"] for r in theirs} == {sigma}
    assert math.fsum(r.rho for r in theirs) == pytest.approx(plan.rho_measure, rel=1e-12)
    for name, m in members.items():
        own = [r for r in m.ledger.releases if r.description.startswith("measure:")]
        assert own and own == [r for r in theirs if name in (r.party or "").split("+")]
