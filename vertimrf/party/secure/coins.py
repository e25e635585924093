"""A party's coins (cross_noise "coins"): for each release, fair bits per cross cell toward
each peer, sent masked (bits - C) under the pairwise key, and its share of every cell's
centred coin sum, sum(a XOR b) - N/2, through the product backend. Neither party, nor the
dealer, knows a coin; design notes in docs/accounting.md ("Coins")."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vertimrf.crypto.schedule import derive
from vertimrf.errors import ConfigError, MessageError
from vertimrf.party.secure.features import SealedBlobs, bound, seal_rows
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.masks import coin_bits
from vertimrf.protocol.secure.deal import CoinDeal
from vertimrf.protocol.secure.features import COIN_ROUNDS, blob_nonce, open_feature_blocks
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT
from vertimrf.protocol.secure.widths import MASK_BLOCK_WORDS
from vertimrf.protocol.seeds import seeded_coins


def coin_purpose(release: str) -> int:
    """The purpose of ``release``'s coin blobs in their associated data."""
    return COIN_ROUNDS[1 if release == SELECT else 2]


def _deal(data: StepData, release: str) -> CoinDeal:
    """The coin randomness of ``release``: the deal's (first release) or the round-2 deal's."""
    return data.opened().coins if release == SELECT else data.round_two()[0].coins


def release_request(session: PartySession, data: StepData, release: str) -> Request:
    """The request ``release`` measures: the plan's first release, or the round-2 one."""
    if release == SELECT:
        return Request(tuple(session.plan.first_release()))
    if data.group_request is None:
        raise ConfigError("open the round-2 deal (groups or open_group_deal) first.")
    return data.group_request


def coin_label(
    session: PartySession, data: StepData, release: str, request: Request, peer: str
) -> tuple[str, ...]:
    """What this party's coins toward ``peer`` in ``release`` of ``request`` are bound to:
    the run, the party, its data and deal (:func:`bound`), the release, the peer, the
    request and (in a re-measurement) the round-2 deal."""
    extra = () if release == SELECT else (data.group_deal_hash,)
    return bound(session, data, "coins", release, peer, request.digest(), *extra)


def coin_key(
    session: PartySession, label: tuple[str, ...], release: str, request: Request, peer: str
) -> bytes:
    """The key of this party's coins toward ``peer`` in ``release`` of ``request``: under
    its local secret, bound to ``label`` (:func:`coin_label`); seeded (experiments), from the
    run's seed, bound to the party, the release, the peer and the request only, so that a
    seeded run gives the same table whatever the key pairs (anyone with the seed has its
    coins)."""
    if session.seed is None:
        return derive(session.local, "coin-bits", *label)
    seeded = seeded_coins(session.seed, session.name)
    return derive(seeded, "coin-bits", session.name, release, peer, request.digest())


def coin_shapes(
    session: PartySession, release: str, request: Request
) -> dict[str, tuple[int, int]]:
    """(cells, coins a cell) toward each peer in ``release`` of ``request`` ((0, 0): no
    cross cells with it, as for every peer when the request has no cross marginal at all;
    none at all with split noise)."""
    plan, p = session.plan, session.index
    if not plan.cross_noise.weight:
        return {}
    shapes = plan.coin_shapes(release, request.marginals, request.bins)
    out = {}
    for q, peer in enumerate(plan.names):
        if q != p:
            out[peer] = shapes.get((min(p, q), max(p, q)), (0, 0))
    return out


def _checked(coins: CoinDeal, peer: str, lower: bool, cells: int) -> bytes:
    """This party's coin mask seed toward ``peer`` (b"" without cells); MessageError when
    the deal lacks the coin randomness of the pair (the seed, and W_C where this party is
    the lower one, Z_C of ``cells`` words where it is the higher)."""
    if not cells:
        return b""
    z = coins.z.get(peer)
    ok = peer in coins.seeds_c and (peer in coins.seeds_w if lower else z is not None)
    if not ok or (not lower and z is not None and z.shape != (cells,)):
        raise MessageError(
            f"the deal lacks this party's coin randomness for {peer!r}: use the deal the "
            "server made for this config (cross_noise 'coins')."
        )
    return coins.seeds_c[peer]


def _blocks(cells: int, coins: int) -> Iterator[tuple[int, int]]:
    """Blocks of whole cells, about MASK_BLOCK_WORDS coins each (public: from the shape)."""
    step = max(1, MASK_BLOCK_WORDS // max(1, coins))
    for c0 in range(0, cells, step):
        yield c0, min(cells, c0 + step)


def coin_blobs(session: PartySession, data: StepData, release: str) -> SealedBlobs:
    """This party's coins of ``release`` toward each peer, masked by its coin mask from the
    deal and sealed for the peer, block by block (a mapping that seals a blob when read, the
    same bytes every time: the bits are a PRF of :func:`coin_label`)."""
    request = release_request(session, data, release)
    shapes, coins = coin_shapes(session, release, request), _deal(data, release)
    word = session.plan.word

    def blob(peer: str, out: Any) -> None:
        cells, n = shapes[peer]
        label = coin_label(session, data, release, request, peer)
        key = coin_key(session, label, release, request, peer)
        seed = _checked(coins, peer, session.index < session.plan.names.index(peer), cells)

        def rows() -> Iterator[np.ndarray]:
            for c0, c1 in _blocks(cells, n):
                bits = coin_bits(key, c0, c1, n)
                yield session.cross().coin_sent(bits, seed, c0, word)

        nonce = derive(session.local, "coin-nonce", *label)[:12]
        seal_rows(session, data, rows(), peer, out, coin_purpose(release), (cells, n), nonce)

    return SealedBlobs(session, blob, lambda peer: shapes[peer])


def coin_shares(
    session: PartySession, data: StepData, release: str, request: Request,
    blobs: Mapping[str, Blob],
) -> dict[str, np.ndarray]:  # fmt: skip
    """This party's share of each cell's centred coin sum in ``release`` of ``request``, by
    pair name (the cells in the order of the pair's cross blocks), from the peers' coin
    ``blobs``; each blob's nonce is recorded in the step's inputs (it keys the noise).
    Empty with split noise."""
    plan, p, word = session.plan, session.index, session.plan.word
    shapes = coin_shapes(session, release, request)
    coins = _deal(data, release) if shapes else CoinDeal()
    out: dict[str, np.ndarray] = {}
    for peer, (cells, n) in shapes.items():
        if not cells:
            continue
        q = plan.names.index(peer)
        _checked(coins, peer, p < q, cells)
        label = coin_label(session, data, release, request, peer)
        key = coin_key(session, label, release, request, peer)
        if peer not in blobs:
            raise MessageError(
                f"party {session.name!r} has no coin blob from {peer!r} for the {release} "
                f"release: pass every peer's {peer}-to-{session.name} coin blob."
            )
        blob = blobs[peer]
        data.inputs[f"coin-nonce/{release}/{peer}"] = blob_nonce(blob).hex()
        _, received = open_feature_blocks(
            session.keys[peer], blob, session.context, peer, session.name, (cells, n),
            max(1, MASK_BLOCK_WORDS // n), word=word, round_=coin_purpose(release),
            word_bytes=plan.word_bytes,
        )  # fmt: skip
        share = np.empty(cells, np.uint64)
        for c0, c1, words in received:  # the same blocks as _blocks(cells, n)
            bits = coin_bits(key, c0, c1, n)
            if p < q:
                seeds = (coins.seeds_c[peer], coins.seeds_w[peer])
                share[c0:c1] = session.cross().coin_lower(bits, seeds, words, c0, word)
            else:
                share[c0:c1] = session.cross().coin_higher(bits, coins.z[peer][c0:c1], words)
        out[plan.pair_name(min(p, q), max(p, q))] = share
    return out
