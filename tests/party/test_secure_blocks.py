"""A party's masked features, shares and releases are exact whatever its one-hot width, the
public max_rows, the row, pack and deal block sizes, the record sets and the order in which
the config lists the party's columns (the plan lays the one-hot columns out in the spec's
order, and a party encodes its table in that order whatever its listing)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.helpers import SECRET
from tests.secure_runs import commitments, exact_product, exchange, joint, partial_deals
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.party.secure import SecureParty
from vertimrf.party.secure.shares import grow
from vertimrf.privacy.samplers import NoiseSampler
from vertimrf.product import dealer
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.secure import wire
from vertimrf.protocol.secure.plan import SecurePlan
from vertimrf.protocol.secure.widths import MASK_BLOCK_WORDS
from vertimrf.server.secure import SecureServer
from vertimrf.threads import get_num_threads, set_num_threads

# Tables of a few records warn that their synthetic data will be noise; these runs check counts.
pytestmark = pytest.mark.filterwarnings("ignore::vertimrf.domain.SmallTableWarning")

# Few dummies per region, so that partial record sets fit in 2^10 slots.
EPSILON = 16.0
HELD_ROWS = 1 << 10  # the padded rows a run of the property test holds


@dataclass(frozen=True)
class Case:
    """A run: each party's column ``sizes`` in the order its config lists them, the
    spec's order of all columns (``spec_order``: positions in that flat listing), ``n``
    records, the public ``max_rows`` and the record sets."""

    sizes: tuple[tuple[int, ...], ...]
    spec_order: tuple[int, ...]
    n: int
    max_rows: int
    record_sets: str
    seed: int = 0
    fixed: tuple[tuple[str, int], ...] = ()  # columns whose every record has this code


@dataclass
class Run:
    """A case dealt and exchanged: the plan, the members, the server, the public keys, the
    blobs each member received, which parties hold each record, every record's codes (by
    column name) and the spec's column names."""

    plan: SecurePlan
    members: dict[str, SecureParty]
    server: SecureServer
    public: dict
    inbox: dict
    held: np.ndarray
    codes: dict[str, np.ndarray]
    names: tuple[str, ...]

    def both(self, p: int, q: int) -> dict[str, np.ndarray]:
        """The codes of the records both parties p and q hold."""
        rows = self.held[:, p] & self.held[:, q]
        return {c: v[rows] for c, v in self.codes.items()}


def dealt(case: Case) -> Run:
    """``case``'s parties, dealt by the server, with every round-1 blob exchanged."""
    rng = np.random.default_rng(case.seed)
    listed = [[f"p{p}c{j}" for j in range(len(s))] for p, s in enumerate(case.sizes)]
    flat = [
        (c, u)
        for cols, s in zip(listed, case.sizes, strict=True)
        for c, u in zip(cols, s, strict=True)
    ]
    spec = DomainSpec.from_dict({flat[i][0]: flat[i][1] for i in case.spec_order})
    frame = pd.DataFrame({c: rng.integers(0, u, case.n) for c, u in flat}).assign(
        **{c: np.full(case.n, code) for c, code in case.fixed}
    )
    parties = [(f"P{p}", cols) for p, cols in enumerate(listed)]
    cfg = from_preset(
        "default", epsilon=EPSILON, delta=1e-6, spec=spec, parties=parties, method="secure",
        max_rows=case.max_rows, record_sets=case.record_sets,
    )  # fmt: skip
    held = np.ones((case.n, len(parties)), bool)
    if case.record_sets == "partial":
        held = rng.random(held.shape) < 0.7
        held[~held.any(axis=1), 0] = True
    keys = {name: KeyPair.generate(name) for name, _ in parties}
    public = {name: k.public() for name, k in keys.items()}
    members = {}
    for i, (name, cols) in enumerate(parties):
        part = frame[cols].assign(id=np.arange(case.n))[held[:, i]]
        peers = {q: k for q, k in public.items() if q != name}
        members[name] = SecureParty(name, part, cfg, SECRET, keys[name], peers, seed=case.seed)
    if case.record_sets == "partial":
        server, deals = partial_deals(members, public)
    else:
        server = SecureServer(cfg, seed=case.seed)
        deals = server.deal(public, commitments(members))
    table = TableEncoder(spec).table(frame).codes.astype(np.int64)
    codes = {c: table[:, i] for i, c in enumerate(spec.names)}
    inbox = exchange(members, deals)
    return Run(server.plan, members, server, public, inbox, held, codes, spec.names)


def assert_round_one_is_exact(run: Run) -> None:
    """With the noise off, every member's release runs, each pair's shares sum to
    X_p^T X_q over the records both hold, and each pair's released cross marginals (the pads
    cancel) are their exact counts."""
    plan = run.plan
    releases = {name: m.release(run.inbox[name]) for name, m in run.members.items()}
    for p, q in plan.pairs():
        a, b, key = plan.names[p], plan.names[q], plan.pair_name(p, q)
        both = run.both(p, q)
        shares = run.members[a]._step.shares[key] + run.members[b]._step.shares[key]
        exact = exact_product(plan, plan.layout(), both, run.names, p, q)
        np.testing.assert_array_equal(plan.signed(shares), exact)
        released = plan.signed(releases[a].cross[key] + releases[b].cross[key])
        blocks = plan.cross_blocks(plan.first_release(), p, q)
        counts = [joint(both, run.names, plan.sizes, m).ravel() for m in blocks]
        np.testing.assert_array_equal(released, np.concatenate(counts))


def assert_round_two_is_exact(run: Run, marginal: tuple[int, ...]) -> None:
    """After the round-1 release, a request for ``marginal`` grows its pair: the round-2
    blobs are exchanged and each pair's grown shares sum to [X_p | G_pq]^T [X_q | G_qp] over
    the records both hold."""
    plan, server, members = run.plan, run.server, run.members
    request = plan.check_request([marginal])
    layout = plan.layout(request.marginals)
    server.data.request = request  # the server's selection, fixed by the test
    deals = server.group_deals(run.public)
    sent = {name: m.groups(deals[name], request) for name, m in members.items()}
    groups = {n: {q: sent[q][n] for q in members if q != n} for n in members}
    grown = {
        name: grow(
            m.session, m._step, m._step.shares, layout, request, run.inbox[name], groups[name]
        )
        for name, m in members.items()
    }
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = grown[plan.names[p]][key] + grown[plan.names[q]][key]
        exact = exact_product(plan, layout, run.both(p, q), run.names, p, q)
        np.testing.assert_array_equal(plan.signed(total), exact)


@contextmanager
def one_thread() -> Iterator[None]:
    """The kernels on one thread: with blocks of a few rows, starting a parallel kernel
    costs more than its work (results do not depend on the thread count)."""
    before = get_num_threads()
    set_num_threads(1)
    try:
        yield
    finally:
        set_num_threads(before)


@pytest.fixture
def no_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every discrete Gaussian draw is 0."""
    monkeypatch.setattr(
        NoiseSampler, "discrete_gaussian", lambda self, sigma, size: np.zeros(size, np.int64)
    )


@pytest.mark.parametrize("record_sets", ["equal", "partial"])
def test_a_party_listing_its_columns_out_of_spec_order_masks_and_counts_them_exactly(
    record_sets, monkeypatch, no_noise
):
    """P0 lists b (1 value) before a (2 values), the spec a before b: the plan puts a's
    one-hot columns at 0..1 and b's at 2 of P0's width 3. Every record has a = 1, so a
    party that gave its first code column (b) a's offset and its second (a) b's would put
    a at column 2 + 1 = 3, past the row. With one row per block (ROW_BLOCK_WORDS = the
    width) every record lies on a block's last row, where that column is past the block's
    mask (features raised IndexError); on another row it counted the record in the next
    row's cells. Features, shares and the release are exact."""
    monkeypatch.setattr(wire, "ROW_BLOCK_WORDS", 3)
    n = 4
    rows = n if record_sets == "equal" else 128  # partial: room for the dummies
    run = dealt(Case(((1, 2), (2,)), (1, 0, 2), n, rows, record_sets, fixed=(("p0c1", 1),)))
    assert run.plan.widths[0] == 3 and run.names == ("p0c1", "p0c0", "p1c0")
    with one_thread():
        assert_round_one_is_exact(run)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Case, int]:
    """A run with P0 of one-hot width 1..300 (in 1 to 3 columns), P1 of two small columns,
    maybe P2 of one, the columns in a random spec order (so each party's listing in a
    random order too), and log2 of a max_rows of 2^10 to 2^20."""
    width = draw(st.integers(1, 300))
    count = draw(st.integers(1, min(3, width)))
    cut = st.integers(1, max(1, width - 1))
    cuts = draw(st.lists(cut, min_size=count - 1, max_size=count - 1, unique=True))
    bounds = [0, *sorted(cuts), width]
    sizes = [tuple(hi - lo for lo, hi in zip(bounds, bounds[1:], strict=False))]
    sizes.append((draw(st.integers(2, 4)), draw(st.integers(2, 4))))
    if draw(st.booleans()):
        sizes.append((draw(st.integers(2, 5)),))
    order = tuple(draw(st.permutations(range(sum(map(len, sizes))))))
    record_sets = draw(st.sampled_from(["equal", "partial"]))
    n, seed = draw(st.integers(1, 60)), draw(st.integers(0, 2**16))
    return Case(tuple(sizes), order, n, HELD_ROWS, record_sets, seed), draw(st.integers(10, 20))


@settings(max_examples=25, deadline=None, derandomize=True)
@given(cases())
@example(  # P0 of width 157 at max_rows 2^19, partial record sets, three parties
    (Case(((100, 57), (3, 4), (5,)), (1, 2, 0, 3, 4), 60, HELD_ROWS, "partial", 1), 19)
)
@example((Case(((300,), (4, 4), (5,)), (0, 1, 2, 3), 60, HELD_ROWS, "equal", 2), 20))
def test_features_shares_and_releases_are_exact_at_any_width_and_block_size(drawn):
    """A run of max_rows 2^m is held at 2^10 rows with the row, pack and deal block sizes
    divided by 2^(m - 10) too: about as many blocks per blob as at 2^m rows, each of whole
    rows (of a width that need not divide the block's words, the last block short), at up
    to a thousandth of the work. Round 1 (with the noise off: features, shares, the
    release's cross counts) and round 2 (P1's two columns against one of P0's: the grown
    shares) are exact."""
    case, log_rows = drawn
    shift = log_rows - 10
    with pytest.MonkeyPatch.context() as patch, one_thread():
        patch.setattr(wire, "ROW_BLOCK_WORDS", max(1, wire.ROW_BLOCK_WORDS >> shift))
        patch.setattr(wire, "PACK_WORDS", max(1, wire.PACK_WORDS >> shift))
        patch.setattr(dealer, "DEAL_BLOCK_WORDS", max(1, MASK_BLOCK_WORDS >> shift))
        patch.setattr(
            NoiseSampler, "discrete_gaussian", lambda self, sigma, size: np.zeros(size, np.int64)
        )
        run = dealt(case)
        assert_round_one_is_exact(run)
        assert_round_two_is_exact(run, (*run.plan.attrs[1], run.plan.attrs[0][0]))


def test_width_157_at_max_rows_2_19_with_partial_sets_is_exact():
    """A features step that once raised an IndexError, scaled: A of one-hot width 157
    (columns of 77 and 80 values,
    listed against the spec's order), max_rows 524,288 = 2^19, partial record sets, three
    parties. A row block holds 2^20 // 157 = 6,678 rows, a mask of 157 x 6,678 = 1,048,446
    words; a record on a block's last row with code 79 of the 80-value column put its one
    at column 80 + 79 = 159 of a 157-wide row: index 6,677 x 157 + 159 = 1,048,448, the
    IndexError of the finding. Held at 2^10 rows with the block sizes divided by 2^9 (13
    rows a block, the same arithmetic), features, shares and the release are exact."""
    shift = 19 - 10
    case = Case(
        ((77, 80), (3, 4), (5,)), (1, 0, 2, 3, 4), 200, HELD_ROWS, "partial", 5,
        fixed=(("p0c1", 79),),
    )  # fmt: skip
    with pytest.MonkeyPatch.context() as patch, one_thread():
        patch.setattr(wire, "ROW_BLOCK_WORDS", wire.ROW_BLOCK_WORDS >> shift)
        patch.setattr(wire, "PACK_WORDS", max(1, wire.PACK_WORDS >> shift))
        patch.setattr(dealer, "DEAL_BLOCK_WORDS", max(1, MASK_BLOCK_WORDS >> shift))
        patch.setattr(
            NoiseSampler, "discrete_gaussian", lambda self, sigma, size: np.zeros(size, np.int64)
        )
        run = dealt(case)
        rows = wire.ROW_BLOCK_WORDS // 157
        assert run.plan.widths[0] == 157 and rows == (1 << 20) // 157 >> shift
        held = run.members["P0"].session.columns(0, HELD_ROWS)  # -1 on rows A holds no record of
        assert (held[rows - 1 :: rows] >= 0).any(), "no record of A on a block's last row"
        assert_round_one_is_exact(run)


def test_own_marginals_of_a_party_listing_its_columns_out_of_spec_order_are_its_counts(no_noise):
    """P0 lists b before a, the spec a before b: its released marginal (a, b) is the count
    of (a, b), not of (b, a) read in C order."""
    run = dealt(Case(((2, 3), (2,)), (1, 0, 2), 30, 30, "equal"))
    release = run.members["P0"].release(run.inbox["P0"])
    exact = joint(run.codes, run.names, run.plan.sizes, (0, 1)).ravel()
    np.testing.assert_array_equal(release.within[(0, 1)], exact)
