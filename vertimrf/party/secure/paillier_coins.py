"""A party's coins with the dealer-free product (cross_noise "coins", coin_weight 1, product
"paillier"): the bits are the secure method's (:mod:`~vertimrf.party.secure.coins`); E sends
its coins encrypted (with its features or groups), a slot column of cells at a time, a
ciphertext a coin; G reads them a block at a time and appends to its reply one masked
accumulator a cell, whose slot of that cell holds the inner product of the two parties'
coins of it. Neither holds more than one column's coins and one block of ciphertexts.
Each party's share of a cell's centred XOR sum follows
(:func:`~vertimrf.product.paillier.centred_coin_shares`). No role deals a coin."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from vertimrf.crypto.paillier_slots import aggregator_shares, draw_masks
from vertimrf.crypto.schedule import derive
from vertimrf.errors import MessageError
from vertimrf.logs import progress_bar
from vertimrf.party.secure import paillier as steps
from vertimrf.party.secure.coins import (
    coin_key,
    coin_label,
    coin_purpose,
    coin_shapes,
    release_request,
)
from vertimrf.party.secure.features import SealedBlobs
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.product import paillier as pp
from vertimrf.protocol.masks import coin_bits
from vertimrf.protocol.secure import paillier as pw
from vertimrf.protocol.secure.features import REPLY_ROUNDS, blob_nonce
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import SELECT

BIT_BLOCK = 1 << 24  # coin bits drawn at a time when summing them


def _key(session: PartySession, data: StepData, release: str, request: Request, peer: str) -> bytes:
    return coin_key(session, coin_label(session, data, release, request, peer), release, request,
                    peer)  # fmt: skip


def _ones(key: bytes, shape: tuple[int, int]) -> np.ndarray:
    """Each cell's number of coins that are 1 (``shape``: cells x coins), drawn a block of
    cells at a time."""
    cells, coins = shape
    out = np.zeros(cells, np.uint64)
    step = max(1, BIT_BLOCK // max(coins, 1))
    for c0 in range(0, cells, step):
        c1 = min(cells, c0 + step)
        out[c0:c1] = coin_bits(key, c0, c1, coins).sum(axis=1, dtype=np.uint64)
    return out


def _rows(session: PartySession, release: str, request: Request, peer: str) -> int:
    """Ciphertexts in this party's coin blob toward ``peer``."""
    p, q = session.index, session.plan.party_index(peer)
    shape = coin_shapes(session, release, request).get(peer, (0, 0))
    return pw.coin_rows(session.plan, p, q, shape)


def coin_blobs(session: PartySession, data: StepData, release: str) -> SealedBlobs:
    """This party's coins of ``release`` toward each peer: E's encrypted (its stream
    ``paillier-randomisers``, bound to the coins' label) a block of coins at a time, an
    empty blob from G; sealed when read, the same bytes every time."""
    request = release_request(session, data, release)
    shapes = coin_shapes(session, release, request)

    def encrypted(peer: str) -> Iterator[np.ndarray]:
        """E's coins a slot column of cells at a time (its coins drawn whole), a block of
        COIN_BLOCK coins encrypted at a time."""
        label = coin_label(session, data, release, request, peer)
        cells, n = shapes[peer]
        public = steps.private_key(session, data, peer).public
        key = pp.stream_key(session.local, pp.RANDOMISERS, *label)
        bits_key = _key(session, data, release, request, peer)
        rand = pp.computed(steps.owner_table(session, data, peer), key)
        slots = pw.slot_layout(session.plan)
        desc = f"{session.name}: encrypting coins for {peer}"
        for j in progress_bar(range(slots.per_row(cells)), desc=desc):
            c0, c1 = j * slots.slots, min(cells, (j + 1) * slots.slots)
            bits = coin_bits(bits_key, c0, c1, n)
            for k0 in range(0, n, pw.COIN_BLOCK):
                rows = pp.coin_rows(bits[:, k0 : k0 + pw.COIN_BLOCK])
                raw = pp.encrypted_rows(public, rand, slots, rows, c1 - c0, j * n + k0)
                yield steps.ciphertexts(raw)

    def seal(peer: str, out: Any) -> None:
        label = coin_label(session, data, release, request, peer)
        rows_out = _rows(session, release, request, peer)
        blocks = encrypted(peer) if rows_out else iter(())
        once = derive(session.local, "coin-nonce", *label)[:12]
        steps.write(session, data, peer, out, blocks, rows_out, coin_purpose(release), once)

    def rows(peer: str) -> int:
        return _rows(session, release, request, peer)

    return steps.sealed(session, seal, rows)


def _mask_key(
    session: PartySession, data: StepData, release: str, request: Request, peer: str, coins: Blob
) -> bytes:
    """G's masks of its coin reply, bound to the coins' label and E's coin blob's nonce."""
    label = coin_label(session, data, release, request, peer)
    return steps.mask_key(session, data, "coins", *label, blob_nonce(coins).hex())


def coin_reply(
    session: PartySession, data: StepData, release: str, peer: str, features: Blob,
    coins: Mapping[str, Blob] | None,
) -> bytes:  # fmt: skip
    """G's coin reply to E (``features``: E's blob of round 1, which holds its key): one
    masked accumulator a cell; empty without coins toward ``peer``."""
    request = release_request(session, data, release)
    shape = coin_shapes(session, release, request).get(peer, (0, 0))
    p, q = session.index, session.plan.party_index(peer)
    if not shape[0] or not pw.coin_rows(session.plan, q, p, shape):
        return b""
    blob = _blob(coins, peer)
    rows = pw.coin_rows(session.plan, q, p, shape)
    read = steps.read(session, data, peer, blob, rows, coin_purpose(release), "coins",
                      pw.COIN_BLOCK)  # fmt: skip
    desc = f"{session.name}: summing {peer}'s coins"
    received = (
        (i0, i1, block.tobytes())
        for i0, i1, block in progress_bar(read, desc=desc, total=-(-rows // pw.COIN_BLOCK))
    )
    public = steps.public_key(session, data, peer, features)
    table = steps.public_table(session, data, peer, features)
    bits_key = _key(session, data, release, request, peer)
    key = _mask_key(session, data, release, request, peer, blob)
    reply, _ = pp.coin_reply(
        public, table, pw.slot_layout(session.plan), received,
        lambda c0, c1: coin_bits(bits_key, c0, c1, shape[1]), shape, key,
    )  # fmt: skip
    return reply


def coin_shares(
    session: PartySession, data: StepData, release: str, request: Request,
    coins: Mapping[str, Blob], replies: Mapping[str, Blob] | None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """This party's share of each cell's centred coin sum in ``release``, by pair name (the
    cells in the order of the pair's cross blocks): E decrypts the tail of G's reply, G
    draws its masks again. Every coin blob's nonce is kept among the step's inputs."""
    plan, p = session.plan, session.index
    out: dict[str, np.ndarray] = {}
    for peer, shape in coin_shapes(session, release, request).items():
        cells, n = shape
        if not cells:
            continue
        q = plan.party_index(peer)
        a, b = min(p, q), max(p, q)
        blob = _blob(coins, peer)
        data.inputs[f"coin-nonce/{release}/{peer}"] = blob_nonce(blob).hex()
        steps.check(steps.read(session, data, peer, blob, pw.coin_rows(plan, q, p, shape),
                               coin_purpose(release), "coins"))  # fmt: skip
        slots = pw.slot_layout(plan)
        if pw.pair_encrypter(plan, a, b) == p:
            tail = _coin_tail(session, data, release, peer, replies, cells)
            private = steps.private_key(session, data, peer)
            inner = pp.coin_shares(private, slots, tail, cells)
        else:
            key = _mask_key(session, data, release, request, peer, blob)
            masks = draw_masks(slots, key, (cells, slots.slots))
            inner = aggregator_shares(masks[np.arange(cells), np.arange(cells) % slots.slots])
        ones = _ones(_key(session, data, release, request, peer), shape)
        out[plan.pair_name(a, b)] = pp.centred_coin_shares(ones, n, inner, first=p == a)
    return out


def _coin_tail(
    session: PartySession, data: StepData, release: str, peer: str,
    replies: Mapping[str, Blob] | None, cells: int,
) -> bytes:  # fmt: skip
    """E: the coin reply at the end of G's reply of ``release`` (``cells`` ciphertexts),
    the reply read through and checked."""
    plan, p, q = session.plan, session.index, session.plan.party_index(peer)
    if release == SELECT:
        rows, purpose, kind = pw.reply_rows(plan, q, p), REPLY_ROUNDS[1], "reply"
    else:
        layout = data.round_two()[1]
        rows, purpose, kind = (
            pw.group_reply_rows(plan, q, p, layout),
            REPLY_ROUNDS[2],
            "group-reply",
        )
    if replies is None or peer not in replies:
        raise MessageError(f"no {kind} from {peer!r}; the server must relay it before this step.")
    raw = steps.drain(steps.read(session, data, peer, replies[peer], rows + cells, purpose, kind))
    return raw[rows * pw.CIPHERTEXT :]


def _blob(blobs: Mapping[str, Blob] | None, peer: str) -> Blob:
    if blobs is None or peer not in blobs:
        raise MessageError(
            f"no coin blob from {peer!r}; the server must relay it before this step."
        )
    return blobs[peer]
