"""method="secure": marginals re-measured on bins (the server's rule, the parties' binned
shares and counts, the request format, the ledger), fitted as bin sums."""

from __future__ import annotations

import json
import math
from itertools import product

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.secure_runs import commitments, cross_tab, exchange, secure_parties
from vertimrf import simulate
from vertimrf.domain import DomainSpec
from vertimrf.driver.codec import read_request, request_bytes
from vertimrf.errors import MessageError
from vertimrf.protocol.bins import bin_axes
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import MEASURE
from vertimrf.server.binning import binned_error, choose_bins, recover
from vertimrf.server.secure.session import randomness
from vertimrf.server.secure.session import tables as summed_tables


def _brute_bin(table: np.ndarray, maps) -> np.ndarray:
    """The binned table by a loop over every cell (the reference of bin_axes)."""
    shape = [t if m is None else int(max(m)) + 1 for t, m in zip(table.shape, maps, strict=True)]
    out = np.zeros(shape, dtype=table.dtype)
    with np.errstate(over="ignore"):  # uint64 words wrap, as in the ring Z_{2^64}
        for cell in product(*(range(t) for t in table.shape)):
            to = tuple(c if m is None else m[c] for c, m in zip(cell, maps, strict=True))
            out[to] += table[cell]
    return out


@st.composite
def _tables_and_maps(draw):
    dims = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    maps = []
    for u in dims:
        if draw(st.booleans()):
            maps.append(None)
            continue
        k = draw(st.integers(1, u))
        raw = draw(st.lists(st.integers(0, k - 1), min_size=u, max_size=u))
        used = sorted(set(raw))  # relabel the bins 0..k'-1, each used
        maps.append(np.array([used.index(x) for x in raw], np.int64))
    seed = draw(st.integers(0, 2**16))
    return dims, maps, seed


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_tables_and_maps())
def test_bin_axes_equals_the_cell_by_cell_sum_and_commutes_with_shares(case):
    """bin_axes against a loop over cells, on int64 and on uint64 words near 2^64 (which
    wrap): the binned shares of two parties sum to the binned exact table mod 2^64."""
    dims, maps, seed = case
    rng = np.random.default_rng(seed)
    exact = rng.integers(0, 50, dims).astype(np.int64)
    np.testing.assert_array_equal(bin_axes(exact, maps), _brute_bin(exact, maps))
    share_a = rng.integers(0, 2**64, dims, dtype=np.uint64, endpoint=False)
    share_b = exact.astype(np.uint64) - share_a  # wraps mod 2^64
    summed = bin_axes(share_a, maps) + bin_axes(share_b, maps)
    np.testing.assert_array_equal(summed.view(np.int64), bin_axes(exact, maps))
    np.testing.assert_array_equal(bin_axes(share_a, maps), _brute_bin(share_a, maps))


def _diagonal(u: int, count: float) -> np.ndarray:
    return np.eye(u) * count


def test_rule_keeps_the_full_domain_for_structure_inside_the_bins():
    """A copy (value = value) has all its structure inside any bins: HisRec's squared bias is
    large, so without first-release noise the rule keeps the full domain; a table whose only
    structure is between bins (constant within bin blocks) has no bias, and binning wins
    exactly when sigma^2 sum w^2 < cells sigma^2."""
    u = 16
    ones = [np.full(u, 10.0), np.full(u, 10.0)]
    assert choose_bins(_diagonal(u, 10.0), 0.0, 1.0, ones, (0.0, 0.0), (0, 1)) is None
    blocky = np.kron(np.eye(4) * 5.0 + 1.0, np.ones((4, 4)))  # constant on 4 x 4 blocks
    ones = [blocky.sum(1), blocky.sum(0)]
    choice = choose_bins(blocky, 0.0, 1.0, ones, (0.0, 0.0), (0, 1))
    assert choice is not None
    # Bins of 4 recover the table exactly (bias 0); the noise of a recovered value is its bin
    # cell's times 1/16, so sigma^2 * 256 / 256 = 1 < the full domain's 256 (2 bins: bias).
    assert choice.maps == (tuple(np.repeat(range(4), 4)),) * 2
    assert choice.error == pytest.approx(1.0) and choice.full_error == pytest.approx(256.0)
    binned = bin_axes(blocky, [np.asarray(b) for b in choice.maps])
    np.testing.assert_allclose(recover(binned, choice.maps, ones, (0, 1)), blocky)


def test_squared_bias_estimate_is_unbiased_under_first_release_noise():
    """The rule's squared-error estimate is noise + (sum R^2 - sum var) with R = T1 -
    HisRec(bin(T1)); over 400 first releases T1 = T + N(0, s1^2) its mean is the exact
    noise + squared bias of T within 6 standard errors (the floor at 0 is not reached: the
    bias is large). Fixed seed."""
    rng = np.random.default_rng(11)
    u, s1, sigma = 12, 3.0, 2.0
    truth = rng.gamma(2.0, 20.0, (u, u))
    ones = [truth.sum(1), truth.sum(0)]
    maps = (tuple(np.arange(u) // 3), None)
    arrays = [np.asarray(maps[0]), None]
    bias2 = float(((truth - recover(bin_axes(truth, arrays), maps, ones, (0, 1))) ** 2).sum())
    weight = (ones[0] / np.bincount(arrays[0], ones[0])[arrays[0]])[:, None] * np.ones((1, u))
    want = sigma**2 * float((weight**2).sum()) + bias2
    draws = [
        binned_error(truth + rng.normal(0, s1, truth.shape), s1, sigma, maps, ones, (0, 0), (0, 1))[
            0
        ]
        for _ in range(400)
    ]
    assert min(draws) > sigma**2 * float((weight**2).sum())  # the floor at 0 never bit
    assert abs(np.mean(draws) - want) < 6 * np.std(draws) / math.sqrt(len(draws))


def _large_domain_run(binning: str, epsilon: float = 0.5):
    """Two parties, one 48-value attribute each, equal on coarse blocks of 12 values and
    uniform inside them (structure between bins only), plus a binary column each."""
    rng = np.random.default_rng(5)
    n = 3000
    block = rng.integers(0, 4, n)
    df = pd.DataFrame(
        {
            "a": block * 12 + rng.integers(0, 12, n),
            "a2": rng.integers(0, 2, n),
            "b": block * 12 + rng.integers(0, 12, n),
            "b2": rng.integers(0, 2, n),
        }
    )
    spec = DomainSpec.from_dict({"a": 48, "a2": 2, "b": 48, "b2": 2})
    return df, simulate(
        df, spec, [["a", "a2"], ["b", "b2"]], epsilon, 1e-5, seed=3, secure_binning=binning
    )


def test_large_domain_cross_pair_is_measured_on_bins_and_fitted_as_bin_sums():
    """On the 48 x 48 cross pair the full domain is mostly noise at this epsilon: the rule
    bins it, the report says so, the ledger stays within the budget, and the synthetic
    table's 2-way error on (a, b) is lower than with binning off (same seed)."""
    df, (synth, report) = _large_domain_run("auto")
    _, (synth_off, report_off) = _large_domain_run("off")
    assert ("a", "b") in report.binned and not report_off.binned
    for r in (report, report_off):
        assert r.ledger.total_epsilon(r.delta) <= 0.5 + 1e-9

    def tvd_ab(s: pd.DataFrame) -> float:
        t = cross_tab(df["a"].to_numpy(), df["b"].to_numpy(), 48, 48) / len(df)
        v = cross_tab(s["a"].to_numpy(), s["b"].to_numpy(), 48, 48) / len(s)
        return 0.5 * float(np.abs(t - v).sum())

    assert tvd_ab(synth) < tvd_ab(synth_off)
    assert "measured on bins" in str(report)


def test_binned_release_is_the_exact_binned_counts_plus_the_charged_noise():
    """A request that bins a cross pair and an own pair: each party bins its share (mod 2^64)
    or its exact counts before the noise; the server's sum is the exact binned table plus
    noise of variance 1.5 sigma^2 (cross) or sigma^2 (own), each cell within 6 sigma, and
    the ledger's cross entry counts the binned cells."""
    cfg, spec, members, server, public, codes = secure_parties(
        [[20, 6], [30]], 1500, 2, epsilon=2.0, rows=1600
    )
    blobs = exchange(members, server.deal(public, commitments(members)))
    server.select([m.release(blobs[n]) for n, m in members.items()])
    plan = server.plan
    names = spec.names
    bins_a = tuple(i // 5 for i in range(20))  # 4 bins of attribute 0 (20 values)
    bins_b = tuple(i % 3 for i in range(30))  # 3 bins (not contiguous) of attribute 2
    request = plan.check_request(
        [(0, 2), (0, 1)], {(0, 2): (bins_a, bins_b), (0, 1): (bins_a, None)}
    )
    releases = [m.measure(request) for m in members.values()]
    noise = randomness(server.session, "test", releases)[0]
    tables = summed_tables(
        server.session, MEASURE, request.marginals, releases, noise, request.bins
    )
    sigma = plan.sigma(MEASURE, request.marginals, request.bins)
    a, b = (np.asarray(x) for x in (bins_a, bins_b))
    for m, maps, sd in (((0, 2), [a, b], sigma * math.sqrt(1.5)), ((0, 1), [a, None], sigma)):
        exact = cross_tab(codes[names[m[0]]], codes[names[m[1]]], *(plan.sizes[x] for x in m))
        want = bin_axes(exact, maps).ravel()
        assert tables.values[m].shape == want.shape
        assert np.all(np.abs(tables.values[m] - want) < 6 * sd)
    (cross,) = [r for r in plan.releases(MEASURE, request.marginals, request.bins)
                if r.mechanism == "distributed_discrete_gaussian"]  # fmt: skip
    assert cross.params["cells"] == 4 * 3
    # The count party (P0) pays for every release here: the count once, the first release
    # and both re-measured marginals, exactly its budget (it used to charge the count twice).
    ledger = members["P0"].ledger
    assert [r.mechanism for r in ledger.releases].count("discrete_laplace") == 1
    assert ledger.total_rho == pytest.approx(plan.rho, rel=1e-6)


@pytest.mark.parametrize(
    "bins, pattern",
    [
        ({(0, 2): ((0, 1),)}, "one map"),
        ({(0, 2): ((0, 1, 2), None)}, "must send each"),  # wrong length
        ({(0, 2): (tuple([0, 2] * 10), None)}, "must send each"),  # bin 1 unused
        ({(0, 2): (tuple(range(20)), None)}, "must send each"),  # as many bins as values
        ({(0, 2): ((True, False) * 10, None)}, "must send each"),  # booleans
        ({(0, 2): (None, None)}, "map no attribute"),
        ({(2, 0): ((0,) * 30, None)}, "canonical order"),
        ({(1, 2): ((0, 1) * 3, None)}, "canonical order"),  # not listed
    ],
)
def test_bad_bins_in_a_request_are_refused(bins, pattern):
    cfg, spec, members, server, public, codes = secure_parties([[20, 6], [30]], 10, 0, rows=16)
    with pytest.raises(MessageError, match=pattern):
        server.plan.check_request([(0, 2), (0, 1)], bins)


def test_request_round_trip_and_refusals():
    cfg, spec, members, server, public, codes = secure_parties([[20, 6], [30]], 10, 0, rows=16)
    plan, digest = server.plan, cfg.config_hash()
    request = plan.check_request(
        [(0, 2), (0, 1)], {(0, 2): (tuple(i // 5 for i in range(20)), None)}
    )
    data = request_bytes(request, digest)
    back = read_request(data, plan, digest)
    assert back == request and isinstance(back, Request)
    parsed = json.loads(data)
    for bins in ([[0, parsed["bins"][0][1]], [0, parsed["bins"][0][1]]], [[5, [None, None]]], [3]):
        bad = json.dumps({**parsed, "bins": bins}).encode()
        with pytest.raises(MessageError, match="bins"):
            read_request(bad, plan, digest)


def test_error_from_noisy_within_bin_shares_matches_monte_carlo():
    """The rule's share term: HisRec with 1-way counts carrying N(0, v) noise errs by the
    bin count times the error of each value's share c_v / C_bin. Its first-order variance
    (summed over cells) agrees with 2000 draws within 5%: the counts are large against
    sqrt(v), so the first order holds; the Monte Carlo's relative SE is about 3%. Fixed
    seed; no first-release noise and sigma = 0, so the share term is the whole error less
    the bias, which is measured exactly from the true counts."""
    rng = np.random.default_rng(2)
    u, v = 12, 25.0
    truth = rng.gamma(3.0, 30.0, (u, 4))
    ones = [truth.sum(1), truth.sum(0)]
    maps = (tuple(np.arange(u) // 4), None)
    arrays = [np.asarray(maps[0]), None]
    exact = recover(bin_axes(truth, arrays), maps, ones, (0, 1))
    bias2 = float(((truth - exact) ** 2).sum())
    error, _ = binned_error(truth, 0.0, 0.0, maps, ones, (v, 0.0), (0, 1))
    draws = []
    for _ in range(2000):
        noisy = [ones[0] + rng.normal(0, math.sqrt(v), u), ones[1]]
        draws.append(
            float(((recover(bin_axes(truth, arrays), maps, noisy, (0, 1)) - exact) ** 2).sum())
        )
    assert abs((error - bias2) / np.mean(draws) - 1) < 0.05
