"""A party's coins with the dealer-free product (cross_noise "coins", coin_weight 1, product
"paillier"): the bits are the secure method's (:mod:`~vertimrf.party.secure.coins`); E sends
its coins encrypted, a row a coin and a column a cell (with its features or groups); G
appends to its reply one masked accumulator a cell, whose slot of that cell holds the inner
product of the two parties' coins of it; each party's share of a cell's centred XOR sum
follows (:func:`~vertimrf.product.paillier.centred_coin_shares`). No role deals a coin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vertimrf.crypto.paillier_slots import aggregator_shares, draw_masks
from vertimrf.crypto.schedule import derive
from vertimrf.errors import MessageError
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

COIN_ROWS = 64  # E's coin rows encrypted at a time


def _bits(session: PartySession, data: StepData, release: str, request: Request, peer: str,
          shape: tuple[int, int]) -> np.ndarray:  # fmt: skip
    """This party's coins toward ``peer`` (cells x coins, 0 or 1)."""
    label = coin_label(session, data, release, request, peer)
    return coin_bits(coin_key(session, label, release, request, peer), 0, shape[0], shape[1])


def _rows(session: PartySession, release: str, request: Request, peer: str) -> int:
    """Ciphertexts in this party's coin blob toward ``peer``."""
    p, q = session.index, session.plan.party_index(peer)
    shape = coin_shapes(session, release, request).get(peer, (0, 0))
    return pw.coin_rows(session.plan, p, q, shape)


def coin_blobs(session: PartySession, data: StepData, release: str) -> SealedBlobs:
    """This party's coins of ``release`` toward each peer: E's encrypted (its stream
    ``paillier-randomisers``, bound to the coins' label), an empty blob from G; sealed when
    read, the same bytes every time."""
    request = release_request(session, data, release)
    shapes = coin_shapes(session, release, request)

    def seal(peer: str, out: Any) -> None:
        label = coin_label(session, data, release, request, peer)
        blocks: list[np.ndarray] = []
        if _rows(session, release, request, peer):
            cells, n = shapes[peer]
            public = steps.private_key(session, data, peer).public
            rows = pp.coin_rows(_bits(session, data, release, request, peer, (cells, n)))
            key = pp.stream_key(session.local, pp.RANDOMISERS, *label)
            rand = pp.computed(steps.owner_table(session, data, peer), key)
            slots = pw.slot_layout(session.plan)
            for r0 in range(0, n, COIN_ROWS):
                raw = pp.encrypted_rows(public, rand, slots, rows[r0 : r0 + COIN_ROWS], cells, r0)
                blocks.append(steps.ciphertexts(raw))
        once = derive(session.local, "coin-nonce", *label)[:12]
        rows_out = _rows(session, release, request, peer)
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
    raw = steps.drain(steps.read(session, data, peer, blob, rows, coin_purpose(release), "coins"))
    public = steps.public_key(session, data, peer, features)
    table = steps.public_table(session, data, peer, features)
    bits = _bits(session, data, release, request, peer, shape)
    key = _mask_key(session, data, release, request, peer, blob)
    reply, _ = pp.coin_reply(public, table, pw.slot_layout(session.plan), raw, bits, key)
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
        bits = _bits(session, data, release, request, peer, shape)
        out[plan.pair_name(a, b)] = pp.centred_coin_shares(bits, inner, first=p == a)
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
