"""A party's releases: the first measurement of every 2-way marginal, and those the
server requests; design notes in docs/design/party.md."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.party.secure.backends import product_steps
from vertimrf.party.secure.features import bound, checked_request, nonce
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.privacy.mechanisms import discrete_laplace_count
from vertimrf.privacy.numeric import noisy_fine
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, randomness
from vertimrf.protocol.bins import bin_axes
from vertimrf.protocol.masks import pad
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import COUNT_MECHANISM, MEASURE, SELECT, Layout
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.seeds import role_seed


def release(
    session: PartySession, data: StepData, blobs: Mapping[str, Blob],
    coins: Mapping[str, Blob] | None = None, replies: Mapping[str, Blob] | None = None,
) -> SecureRelease:  # fmt: skip
    """Step 2: shares of every product (kept in ``data``), then the first release (the plan's
    :meth:`~vertimrf.protocol.secure.plan.SecurePlan.first_release`: every 2-way marginal,
    or a workload's) with the noisy count at the count party; with coins, the peers' coin
    blobs of the first release (``coins``); with product "paillier", the peers' replies."""
    plan, name, ledger = session.plan, session.name, session.ledger
    # checks every blob before anything is released
    kept = product_steps(session).shares(session, data, blobs, replies)
    marginals = plan.first_release()
    first = Request(tuple(marginals))
    tossed = product_steps(session).coins(
        session, data, SELECT, first, _coin_blobs(session, coins), replies
    )
    noise = sampler(session, data, SELECT, first)
    with ledger.transaction():
        count = None
        if name == plan.count_party and plan.rho_count > 0:
            n, epsilon = session.records.aligned().n, plan.count_epsilon
            count = discrete_laplace_count(n, epsilon, noise=noise, ledger=ledger, party=name)
        out = _released(session, data, SELECT, marginals, count, noise, kept, tossed)
    data.shares = kept
    cuts = {c: list(session.spec[c].cuts or ()) for c in plan.quantile_columns(session.index)}
    return dataclasses.replace(out, cuts=cuts)  # the cuts it drew before encoding its table


def measure(
    session: PartySession, data: StepData, request: Request | Sequence[Marginal],
    blobs: Mapping[str, Blob] | None, group_blobs: Mapping[str, Blob] | None,
    fine: Callable[[], Mapping[str, np.ndarray]], coins: Mapping[str, Blob] | None = None,
    group_replies: Mapping[str, Blob] | None = None,
) -> SecureRelease:  # fmt: skip
    """Step 4: the re-measurement of the server's requested marginals (a :class:`Request`,
    whose bin maps are applied to the exact counts and shares before the noise; a plain
    list means no bins), with the fine histograms (exact counts: ``fine()``) the plan has,
    from the shares in ``data`` (from :func:`release` or its state), or from the peers'
    ``blobs`` after the deal is opened. A pair whose layout grows (round-2 groups) needs
    the peer's ``blobs`` and ``group_blobs``, after the round-2 deal is opened. With coins,
    the peers' coin blobs of the re-measurement (``coins``), after the round-2 deal is
    opened. With product "paillier", the peers' round-2 replies (``group_replies``)."""
    kept = data.shares
    if kept is None:
        if blobs is None or data.deal is None:
            raise ConfigError(
                "measure(request) needs the shares: run release(blobs) first, or "
                "load_state(path) with the state release saved, or open_deal(deal) and "
                "pass the peers' blobs."
            )
        kept = product_steps(session).shares(session, data, blobs, None)
    request = checked_request(session, request)
    layout = session.plan.layout(request.marginals)
    grown = product_steps(session).grow(
        session, data, kept, layout, request, blobs, group_blobs, group_replies
    )
    tossed = product_steps(session).coins(
        session, data, MEASURE, request, _coin_blobs(session, coins), group_replies
    )
    exact = fine()  # read before anything is charged
    noise = sampler(session, data, MEASURE, request)
    with session.ledger.transaction():
        marginals = request.marginals
        out = _released(
            session, data, MEASURE, marginals, None, noise, grown, tossed, request, layout
        )
        noisy = {
            r.params["column"]: noisy_fine(r, exact[r.params["column"]], noise, session.ledger)
            for r in session.plan.fine_releases(session.name)
        }
    data.shares = kept
    return dataclasses.replace(out, fine=noisy)


def sampler(session: PartySession, data: StepData, step: str, request: Request) -> NoiseSampler:
    """The noise of one step. Unseeded: exact samplers on a keystream derived from this
    party's local secret, the run, the step, the request (canonical) and the digest of
    every input the step used (``data.inputs``: its data, the deal and the commitments
    it was made for, every peer blob read, the round-2 deal and blobs), so a re-run of
    the step on the same inputs draws the same noise and spends nothing new, and a
    changed statistic never gets the same noise. Seeded (experiments): its own stream
    per step, so that the steps give the same output in one process or in separate
    commands."""
    if session.seed is None:
        inputs = json.dumps(data.inputs, sort_keys=True)
        keyed = bound(session, data, step, request.digest(), inputs)
        return KeyedSampler(session.local, "party-noise", *keyed)
    return randomness(role_seed(session.seed, f"{session.name}/{step}"))[0]


def _pad_binding(
    session: PartySession, data: StepData, peer: str, request: Request, grown: bool
) -> str:
    """What the pad of this party's shares with ``peer`` is keyed by, the same at both
    ends: the request (canonical) and the nonces of the pair's blobs in both directions
    (round 1, and round 2 where the pair grows). Each nonce is a PRF of its sender's
    data, deal and (round 2) round-2 deal and request, so a share that changes gets a
    fresh pad."""
    inputs, q = data.inputs, session.plan.names.index(peer)
    h = hashlib.sha256(request.digest().encode())
    for round_, kind in ((1, "blob"), (2, "group-blob"))[: 1 + grown]:
        mine, theirs = nonce(session, data, peer, round_).hex(), inputs[f"{kind}-nonce/{peer}"]
        h.update((f"/{mine}/{theirs}" if session.index < q else f"/{theirs}/{mine}").encode())
    return h.hexdigest()


def _coin_blobs(session: PartySession, coins: Mapping[str, Blob] | None) -> Mapping[str, Blob]:
    """The peers' coin blobs (ConfigError when the run's noise needs them and none came)."""
    if coins is None and session.plan.cross_noise.weight:
        raise ConfigError(
            "cross_noise 'coins' needs the peers' coin blobs with the release: pass coins="
        )
    return coins or {}


def _released(
    session: PartySession, data: StepData, release: str, marginals: Sequence[Marginal],
    count: int | None, noise: NoiseSampler, shares: Mapping[str, np.ndarray],
    coins: Mapping[str, np.ndarray], request: Request | None = None,
    layout: Layout | None = None,
) -> SecureRelease:  # fmt: skip
    """The ``release`` of ``marginals`` from this party's records and ``shares`` in
    ``layout``, with ``noise``, each pair's ``coins`` (shares of the centred coin sums; none
    with split noise) and each pair's pad, charged to its ledger (module doc)."""
    plan, p, name = session.plan, session.index, session.name
    request = request or Request(tuple(marginals))
    layout = layout or plan.layout()
    for r in plan.releases(release, marginals, request.bins):
        if r.mechanism == COUNT_MECHANISM:
            continue  # charged by discrete_laplace_count as it was drawn
        if r.party == name or name in (r.party or "").split("+"):
            session.ledger.charge(r)
    sigma = plan.sigma(release, marginals, request.bins)
    local = {a: j for j, a in enumerate(plan.attrs[p])}
    own = [m for m in marginals if plan.kind(m) == "within" and plan.owner[m[0]] == p]
    counts = session.records.aligned().histograms(
        [tuple(local[a] for a in m) for m in own], tuple(session.spec.domain.sizes)
    )
    within = {}
    for m, h in zip(own, counts, strict=True):
        exact = bin_axes(h, request.maps(m)).ravel()
        within[m] = exact + noise.discrete_gaussian(sigma, exact.shape)
    cross = {}
    s = plan.cross_noise.component(sigma)
    for a, b in plan.pairs():
        if p not in (a, b):
            continue
        key = plan.pair_name(a, b)
        blocks = plan.cross_blocks(marginals, a, b)
        if not blocks:
            continue
        peer = plan.names[b if p == a else a]
        shape = layout.shape(a, b)
        binding = _pad_binding(session, data, peer, request, layout.grows(a, b))
        pads = pad(session.keys[peer], release, plan.names[a], plan.names[b], binding, shape)
        share, coin, start = shares[key], coins.get(key), 0
        parts = []
        for m in blocks:
            r0, r1, c0, c1 = layout.block(m)
            block = share[r0:r1, c0:c1].reshape(plan.shape(m))
            cells = bin_axes(block, request.maps(m)).ravel()
            eta = noise.discrete_gaussian(s, cells.shape).astype(np.uint64) if s else 0
            if coin is not None:  # this block's coin shares: the pair's cells in block order
                cells, start = cells + coin[start : start + cells.size], start + cells.size
            padded = pads[r0:r1, c0:c1].ravel()[: cells.size]  # the block's own pad words
            out = cells + eta + padded if p == a else cells + eta - padded
            parts.append(out & plan.ring_mask)  # uniform in the ring, nothing above it
        cross[key] = np.concatenate(parts)
    return SecureRelease(
        name,
        release,
        session.config.config_hash(),
        data.digest.hex(),
        within,
        cross,
        count,
        data.inputs.get("commit-set", ""),
        seeded=session.seed is not None,
    )
