"""In-process secure runs shared by the secure method's tests: a random table split over
parties, their SecureParty objects and the server, the round-1 and round-2 exchanges, the
exact products and marginals the shares must sum to, the uniformity test of a view, and
record IDs that overflow a bucket."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from tests.helpers import SECRET
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec, SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.encoding import TableEncoder
from vertimrf.party.records.aligned import order_keys
from vertimrf.party.registers import keyed_prf
from vertimrf.party.secure import SecureParty
from vertimrf.party.secure.shares import shares
from vertimrf.protocol.buckets import bucket_of
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.server.secure import SecureServer

# A view is uniform if a chi-square test over its bytes does not reject at p < 1e-6 (either
# tail): a truly uniform view fails with probability below 2e-6.
P_REJECT = 1e-6


def assert_shares_sum_to_the_exact_product(sizes_by_party, n, seed, *, rows, **fields):
    """Deal, exchange and compute the shares of a random run (the config with any other
    ``fields``); every pair's two shares must sum to X_p^T X_q exactly (in the ring: read
    as signed words)."""
    cfg, spec, members, server, public, codes = secure_parties(
        sizes_by_party, n, seed, rows=rows, **fields
    )
    for name, blobs in exchange(members, server.deal(public, commitments(members))).items():
        members[name]._step.shares = shares(members[name].session, members[name]._step, blobs)
    plan = server.plan
    for p, q in plan.pairs():
        key = plan.pair_name(p, q)
        total = members[plan.names[p]]._step.shares[key] + members[plan.names[q]]._step.shares[key]
        exact = exact_product(plan, plan.layout(), codes, spec.names, p, q)
        np.testing.assert_array_equal(plan.signed(total), exact)


def uniform_bytes(words: np.ndarray, word_bytes: int | None = None) -> float:
    """Two-sided chi-square p-value of the bytes of ``words`` (of each word's low
    ``word_bytes`` bytes, the ring's, if given) against uniform."""
    little = np.ascontiguousarray(words).ravel()
    little = little.astype(little.dtype.newbyteorder("<"), copy=False)
    data = little.view(np.uint8).reshape(little.size, -1)[:, :word_bytes]
    counts = np.bincount(data.ravel(), minlength=256)
    stat, _ = stats.chisquare(counts)
    upper = stats.chi2.sf(stat, 255)
    return min(1.0, 2 * min(upper, 1 - upper))


def split(sizes_by_party, n, seed, *, epsilon=1.0, rows=None, **fields):
    """A random table over the parties' columns, the config (with any other ``fields``) and
    each party's columns."""
    rng = np.random.default_rng(seed)
    spec_dict, parties, cols = {}, [], {}
    for p, sizes in enumerate(sizes_by_party):
        names = [f"p{p}c{j}" for j in range(len(sizes))]
        for name, u in zip(names, sizes, strict=True):
            spec_dict[name] = u
            cols[name] = rng.integers(0, u, n)
        parties.append((f"P{p}", names))
    spec = DomainSpec.from_dict(spec_dict)
    cfg = from_preset(
        "default", epsilon=epsilon, delta=1e-6, spec=spec, parties=parties, method="secure",
        max_rows=rows or max(1, n), **{"record_sets": "equal", **fields},
    )  # fmt: skip
    return cfg, spec, pd.DataFrame(cols), parties


def secure_parties(
    sizes_by_party, n, seed, *, epsilon=1.0, rows=None, shuffle=True, id_shift=None, **fields
):
    """A random table split over parties (the config with any other ``fields``), their
    SecureParty objects and the server; ``id_shift`` (by party) is added to its IDs."""
    cfg, spec, frame, parties = split(sizes_by_party, n, seed, epsilon=epsilon, rows=rows, **fields)
    keys = {name: KeyPair.generate(name) for name, _ in parties}
    public = {name: k.public() for name, k in keys.items()}
    members = {}
    for name, names in parties:
        part = frame[names].assign(id=np.arange(n) + (id_shift or {}).get(name, 0))
        if shuffle:
            part = part.sample(frac=1.0, random_state=seed)
        with warnings.catch_warnings():  # 0- and 1-row tables are built on purpose here
            warnings.simplefilter("ignore", SmallTableWarning)
            members[name] = SecureParty(
                name, part, cfg, SECRET, keys[name],
                {q: k for q, k in public.items() if q != name}, seed=seed,
            )  # fmt: skip
    server = SecureServer(cfg, seed=seed)
    table = TableEncoder(spec).table(frame).codes
    codes = {c: table[:, i].astype(np.int64) for i, c in enumerate(spec.names)}
    return cfg, spec, members, server, public, codes


def driven(sizes_by_party, n, seed, *, epsilon=1.0, rows=None, before=None, **fields):
    """A seeded run of the drivers in one process (each party's rows in its own order; the
    config with any other ``fields``), up to the step ``before`` (default: to the end); the
    config, the server's SecureServer and the exact codes."""
    cfg, spec, frame, parties = split(sizes_by_party, n, seed, epsilon=epsilon, rows=rows, **fields)
    data = {
        name: frame[names].assign(id=np.arange(n)).sample(frac=1.0, random_state=seed)
        for name, names in parties
    }
    run = local_run(data, cfg, SECRET, seed=seed)
    run.run(before=before)
    table = TableEncoder(spec).table(frame).codes
    codes = {c: table[:, i].astype(np.int64) for i, c in enumerate(spec.names)}
    assert run.server.server.secure is not None
    return cfg, spec, run.server.server.secure, codes


def commitments(members):
    """Each member's data commitment, by name (what its commit message carries)."""
    return {name: m.commitment() for name, m in members.items()}


def exchange(members, deals):
    """Every member's features from its deal (with partial record sets, a pair of the deal
    and its slot map), as each member's blobs by sender."""
    blobs = {name: m.features(*_pair(deals[name])) for name, m in members.items()}
    return {n: {q: blobs[q][n] for q in members if q != n} for n in members}


def cross_tab(x, y, u, v):
    out = np.zeros((u, v), np.int64)
    np.add.at(out, (x, y), 1)
    return out


def exact_product(plan, layout, codes, names, p, q):
    """[X_p | G_pq]^T [X_q | G_qp] from the plain codes, block by block (``layout``: the
    round-2 groups; ``plan.layout()`` for round 1's X_p^T X_q)."""
    out = np.zeros(layout.shape(p, q), np.int64)
    left = [(a,) for a in plan.attrs[p]] + list(layout.groups(p, q))
    right = [(b,) for b in plan.attrs[q]] + list(layout.groups(q, p))
    for g in left:
        r0 = layout.offset(p, q, g)
        for h in right:
            c0 = layout.offset(q, p, h)
            tab = joint(codes, names, plan.sizes, g + h).reshape(plan.cells(g), plan.cells(h))
            out[r0 : r0 + plan.cells(g), c0 : c0 + plan.cells(h)] = tab
    return out


def joint(codes, names, sizes, attrs):
    """The exact marginal over ``attrs`` (C order over them as given)."""
    out = np.zeros([sizes[a] for a in attrs], np.int64)
    np.add.at(out, tuple(codes[names[a]] for a in attrs), 1)
    return out


def round_two(sizes_by_party, n, seed, marginals, *, rows, **fields):
    """A run up to the round-2 exchange for ``marginals`` (the config with any other
    ``fields``): the members, the server, the codes, the request, the round-1 blobs and the
    round-2 blobs by receiver."""
    cfg, spec, members, server, public, codes = secure_parties(
        sizes_by_party, n, seed, rows=rows, **fields
    )
    inbox = exchange(members, server.deal(public, commitments(members)))
    for name, m in members.items():
        m.release(inbox[name])
    request = server.plan.check_request(marginals)
    server.data.request = request  # the server's selection, fixed by the test
    deals = server.group_deals(public)
    sent = {name: m.groups(deals[name], request) for name, m in members.items()}
    groups = {n_: {q: sent[q][n_] for q in members if q != n_} for n_ in members}
    return members, server, codes, spec, request, inbox, groups


def ids_overflowing(cfg, n, bucket, extra):
    """n record IDs of which capacity + ``extra`` fall in ``bucket`` (by the run's PRF)."""
    plan = secure_plan(cfg)
    candidates = np.arange(200 * n, dtype=np.int64)
    prf = keyed_prf(order_keys(SECRET, cfg.run_context()), candidates.view(np.uint64))
    inside = bucket_of(prf, plan.buckets) == bucket
    want = plan.capacity + extra
    ids = np.concatenate((candidates[inside][:want], candidates[~inside][: n - want]))
    assert ids.size == n
    return ids, plan


PARTIAL_SIZES = [[2, 3], [3], [4, 2]]
PARTIAL_SERVER_KEY = KeyPair.generate("server")


def partial_parties(n=150, seed=4, keys=None, nonce="", keep=None, flip=False):
    """Three parties of ``PARTIAL_SIZES`` over a random table of ``n`` records, each holding
    a random subset (partial record sets, max_rows 4000); with ``keep``, each keeps its
    records in ``keep/<name>``; ``flip`` corrects one of P0's records. Returns the config,
    the SecureParty objects, their public keys, who holds what, the table's codes and the
    key pairs."""
    cfg, spec, frame, parties = split(PARTIAL_SIZES, n, seed, rows=4000, record_sets="partial")
    cfg = cfg.with_changes(run_nonce=nonce) if nonce else cfg
    rng = np.random.default_rng(seed)
    held = rng.random((n, len(parties))) < 0.6
    held[rng.random(n) < 0.5] = True
    held[~held.any(axis=1), 0] = True
    keys = keys or {name: KeyPair.generate(name) for name, _ in parties}
    public = {name: k.public() for name, k in keys.items()}
    members = {}
    for i, (name, names) in enumerate(parties):
        part = frame[names].assign(id=np.arange(n))[held[:, i]].sample(frac=1.0, random_state=i)
        if flip and i == 0:
            first = part.columns[0]
            part.iloc[0, 0] = (part.iloc[0, 0] + 1) % spec.domain.sizes[0]
            assert part.columns[0] == first
        peers = {q: k for q, k in public.items() if q != name}
        members[name] = SecureParty(name, part, cfg, SECRET, keys[name], peers, seed=seed)
        if keep is not None:
            members[name].keep_aligned(keep / name)
    codes = TableEncoder(spec).table(frame).codes.astype(np.int64)
    return cfg, members, public, held, codes, keys


def _pair(deal):
    return deal if isinstance(deal, tuple) else (deal,)


def partial_deals(members, public, seed=4):
    """The server (seeded, ``PARTIAL_SERVER_KEY``) admits the members' commitments, takes
    their tokens and deals; the server and each member's (deal, slot map) pair."""
    config = next(iter(members.values())).config
    server = SecureServer(config, seed=seed, keypair=PARTIAL_SERVER_KEY)
    commitments = {name: m.commitment() for name, m in members.items()}
    admit = server.admit(commitments, public).digest
    tokens = {name: m.tokens(admit) for name, m in members.items()}
    deals = server.deal(public, commitments, tokens)
    maps = server.record_sets.slot_maps()
    return server, {name: (deal, maps[name].read_bytes()) for name, deal in deals.items()}
