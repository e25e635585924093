"""A party's steps with the dealer-free product (the config's ``product`` "paillier";
messages in :mod:`vertimrf.protocol.secure.paillier`). In each pair the encrypter E sends its
rows encrypted under a Paillier key of its own (``features``, ``groups``); the aggregator G
replies with its masked accumulators (``reply``, ``group-reply``); E's share is what it
decrypts, G's the negated masks, which it draws again from its keyed stream when it
releases. Every key, randomiser, mask and nonce derives from the party's local secret,
bound to the run, the party, its data, the deal and (round 2) the request and its deal."""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np

from vertimrf.crypto.paillier import (
    KEY_BITS,
    Powers,
    PrivateKey,
    PublicKey,
    public_key_bytes,
    randomiser_table,
)
from vertimrf.crypto.paillier_slots import aggregator_shares, draw_masks
from vertimrf.errors import MessageError
from vertimrf.logs import progress_bar
from vertimrf.party.secure.coins import coin_shapes, release_request
from vertimrf.party.secure.features import (
    SealedBlobs,
    bound,
    group_features,
    label_key,
    nonce,
    open_deal,
    open_group_deal,
)
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.shares import read_blob
from vertimrf.party.secure.step_data import StepData
from vertimrf.product import paillier as pp
from vertimrf.protocol.secure import paillier as pw
from vertimrf.protocol.secure.features import REPLY_ROUNDS, blob_nonce, write_feature_blocks
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import MEASURE, SELECT, Layout

# E's rows of one block for G: (r0, r1, their ciphertexts' bytes).
Rows = Iterator[tuple[int, int, bytes]]
# What G appends to its reply to a peer (its coin reply), by the peer's name.
Tail = Callable[[str], bytes]


@dataclass(frozen=True)
class _Pair:
    """This party's product with ``peer`` (index ``q``): the pair a < b, and whether this
    party encrypts in it."""

    a: int
    b: int
    q: int
    peer: str
    encrypts: bool


def _pair(session: PartySession, peer: str) -> _Pair:
    plan, p = session.plan, session.index
    q = plan.party_index(peer)
    a, b = min(p, q), max(p, q)
    return _Pair(a, b, q, peer, pw.pair_encrypter(plan, a, b) == p)


def _peers(session: PartySession) -> list[_Pair]:
    return [_pair(session, q) for q in session.plan.names if q != session.name]


def private_key(session: PartySession, data: StepData, peer: str) -> PrivateKey:
    """E's key toward ``peer``: its stream ``paillier-key`` bound to the run, this party,
    the peer, its data and the deal (made once a process)."""
    key = data.paillier.get(("key", peer))
    if key is None:
        key = pp.run_key(session.local, *bound(session, data, "pair", peer))
        data.paillier["key", peer] = key
    assert isinstance(key, PrivateKey)
    return key


def owner_table(session: PartySession, data: StepData, peer: str) -> Powers:
    table = data.paillier.get(("table", peer))
    if table is None:
        table = randomiser_table(private_key(session, data, peer))
        data.paillier["table", peer] = table
    return table


def mask_key(session: PartySession, data: StepData, *label: str) -> bytes:
    """G's stream ``paillier-masks`` of one reply, bound to ``label`` (its round, the peer,
    and the nonces of E's blobs it aggregates: PRFs of E's inputs) and G's own inputs."""
    return pp.stream_key(session.local, pp.MASKS, *bound(session, data, *label))


def write(
    session: PartySession, data: StepData, peer: str, out: Any, blocks: Iterable[np.ndarray],
    rows: int, purpose: int, once: bytes,
) -> None:  # fmt: skip
    """``rows`` ciphertexts (``blocks`` of them) sealed for ``peer`` with nonce ``once``."""
    write_feature_blocks(
        out, session.keys[peer], blocks, (rows, pw.CIPHERTEXT), session.context, session.name,
        peer, data.digest, word=pw.WORD, nonce=once, round_=purpose, word_bytes=1,
    )  # fmt: skip


def sealed(session: PartySession, seal: Any, rows: Any) -> SealedBlobs:
    """The blobs of ``seal(peer, out)``, ``rows(peer)`` ciphertexts each."""
    return SealedBlobs(
        session, seal, lambda peer: (rows(peer), pw.CIPHERTEXT),
        size=lambda peer: pw.blob_bytes(rows(peer)),
    )  # fmt: skip


def ciphertexts(raw: bytes) -> np.ndarray:
    return np.frombuffer(raw, np.uint8).reshape(-1, pw.CIPHERTEXT)


def _encrypted(
    session: PartySession, data: StepData, peer: str, width: int, columns: Any, *label: str
) -> Iterator[np.ndarray]:
    """E's rows of ``columns(r0, r1)`` (``width`` one-hot columns) as ciphertext rows, by
    blocks; the randomisers' stream is bound to ``label`` and E's inputs."""
    plan, slots = session.plan, pw.slot_layout(session.plan)
    public = private_key(session, data, peer).public
    key = pp.stream_key(session.local, pp.RANDOMISERS, *bound(session, data, *label))
    rand = pp.computed(owner_table(session, data, peer), key)
    starts = range(0, plan.rows, pw.ROWS)
    for r0 in progress_bar(starts, desc=f"{session.name}: encrypting for {peer}"):
        r1 = min(plan.rows, r0 + pw.ROWS)
        yield ciphertexts(pp.encrypted_rows(public, rand, slots, columns(r0, r1), width, r0))


def _key_rows(public: PublicKey, per: int) -> np.ndarray:
    raw = np.frombuffer(public.to_bytes(), np.uint8)
    out = np.zeros(pw.key_rows(per) * pw.CIPHERTEXT, np.uint8)
    out[: raw.size] = raw
    return out.reshape(-1, pw.CIPHERTEXT)


def drain(blocks: Iterator[Any]) -> bytes:
    """Every block's bytes, joined (the iteration checks the blob at its end): a reply."""
    return b"".join(np.ascontiguousarray(block).tobytes() for _, _, block in blocks)


def check(blocks: Iterator[Any]) -> None:
    """Read a blob through, block by block, keeping nothing: the iteration checks it."""
    for _ in blocks:
        pass


def read(
    session: PartySession, data: StepData, peer: str, blob: Blob, rows: int, purpose: int,
    kind: str, step: int = pw.ROWS,
) -> Generator[tuple[int, int, np.ndarray], None, None]:  # fmt: skip
    """A peer's blob of ``rows`` ciphertexts by blocks of ``step`` (:func:`read_blob`)."""
    shape = (rows, pw.CIPHERTEXT)
    return read_blob(
        session, data, peer, blob, shape, purpose, step, kind, word=pw.WORD, word_bytes=1
    )


def _e_rows(
    session: PartySession, data: StepData, pair: _Pair, blob: Blob, width: int, round_: int
) -> Rows:
    """E's rows in its blob of ``round_`` (``width`` one-hot columns a row), read by blocks
    as :func:`~vertimrf.product.paillier.masked_reply` takes them; round 1: after E's public
    key at the blob's head, checked against the key read ahead (:func:`public_key`) in the
    pass that checks the tag."""
    plan, per = session.plan, pw.slot_layout(session.plan).per_row(width)
    head = pw.key_rows(per) if round_ == 1 else 0
    total = head + plan.rows * per
    kind = "blob" if round_ == 1 else "group-blob"
    raw = public_key(session, data, pair.peer, blob).to_bytes() if head else b""
    blocks = read(session, data, pair.peer, blob, total, round_, kind, per * pw.ROWS)
    desc = f"{session.name}: summing {pair.peer}'s rows"
    for c0, c1, block in progress_bar(blocks, desc=desc, total=-(-total // (per * pw.ROWS))):
        if c0 == 0 and head:
            if block[:head].tobytes()[: len(raw)] != raw:
                raise MessageError(f"the public key in {pair.peer!r}'s blob changed.")
            block, c0 = block[head:], head
        yield (c0 - head) // per, (c1 - head) // per, block.tobytes()


def public_key(session: PartySession, data: StepData, peer: str, features: Blob) -> PublicKey:
    """G: E's public key, read ahead from the head of E's features once a process (checked
    with the blob when it is read through, :func:`_e_rows`)."""
    key = data.paillier.get(("public", peer))
    if key is None:
        plan = session.plan
        per = pw.slot_layout(plan).per_row(plan.widths[plan.party_index(peer)])
        head = pw.key_rows(per)
        first = read(session, data, peer, features, head + plan.rows * per, 1, "blob", head)
        block = next(first)[2]
        first.close()
        key = PublicKey.from_bytes(block.tobytes()[: public_key_bytes(KEY_BITS)])
        data.paillier["public", peer] = key
    assert isinstance(key, PublicKey)
    return key


def public_table(session: PartySession, data: StepData, peer: str, features: Blob) -> Powers:
    """G: the fixed-base table of E's public key (made once a process)."""
    table = data.paillier.get(("public-table", peer))
    if table is None:
        table = randomiser_table(public_key(session, data, peer, features))
        data.paillier["public-table", peer] = table
    return table


def _coin_cells(
    session: PartySession, data: StepData, release: str, sender: int, receiver: int
) -> int:
    """Ciphertexts of the coin reply ``sender`` appends to its reply to ``receiver`` in
    ``release`` (cross_noise "coins"; none otherwise)."""
    plan = session.plan
    if not plan.cross_noise.weight:
        return 0
    request = release_request(session, data, release)
    peer = plan.names[receiver if sender == session.index else sender]
    cells = coin_shapes(session, release, request).get(peer, (0, 0))[0]
    return pw.coin_reply_rows(plan, sender, receiver, cells)


def _oriented(share: np.ndarray, pair: _Pair, p: int) -> np.ndarray:
    """A G x E matrix as the pair's a x b one (G is a or b)."""
    g = pair.q if pair.encrypts else p
    return np.ascontiguousarray(share if g == pair.a else share.T)


# ---------------------------------------------------------------------------- round 1
def features(session: PartySession, data: StepData, deal: bytes, slot_map: Any) -> SealedBlobs:
    """Open the deal; then, toward each peer it encrypts for, E's public key and rows (an
    empty blob toward the others), sealed when read."""
    open_deal(session, data, deal, slot_map)
    plan, p = session.plan, session.index
    width = plan.widths[p]
    per = pw.slot_layout(plan).per_row(width)

    def rows(peer: str) -> int:
        return pw.features_rows(plan, p, plan.party_index(peer))

    def seal(peer: str, out: Any) -> None:
        blocks: Iterable[np.ndarray] = ()
        if _pair(session, peer).encrypts:
            public = private_key(session, data, peer).public
            encrypted = _encrypted(session, data, peer, width, session.columns, "round-1", peer)
            blocks = chain([_key_rows(public, per)], encrypted)
        write(session, data, peer, out, blocks, rows(peer), 1, nonce(session, data, peer, 1))

    return sealed(session, seal, rows)


def replies(
    session: PartySession, data: StepData, blobs: Mapping[str, Blob], tail: Tail | None = None
) -> SealedBlobs:
    """Toward each peer that encrypts for it, G's masked accumulators of the peer's rows by
    its own columns, then ``tail(peer)`` (its coin reply; an empty blob toward the
    others), sealed when read."""
    plan, p = session.plan, session.index

    def rows(peer: str) -> int:
        q = plan.party_index(peer)
        return pw.reply_rows(plan, p, q) + _coin_cells(session, data, SELECT, p, q)

    def seal(peer: str, out: Any) -> None:
        pair, e_nonce = _pair(session, peer), blob_nonce(_blob(blobs, peer)).hex()
        blocks: list[np.ndarray] = []
        if not pair.encrypts:
            width_e, features = plan.widths[pair.q], blobs[peer]
            received = _e_rows(session, data, pair, features, width_e, 1)
            key = mask_key(session, data, "round-1", peer, e_nonce)
            sizes = [plan.sizes[a] for a in plan.attrs[p]]
            cols = session.columns(0, plan.rows)
            reply, _ = pp.masked_reply(
                public_key(session, data, peer, features),
                public_table(session, data, peer, features), pw.slot_layout(plan), received,
                cols, width_e, sizes, key,
            )  # fmt: skip
            blocks.append(ciphertexts(reply + (tail(peer) if tail else b"")))
        once = label_key(session, data, "reply-nonce", peer, e_nonce)[:12]
        write(session, data, peer, out, blocks, rows(peer), REPLY_ROUNDS[1], once)

    return sealed(session, seal, rows)


def shares(
    session: PartySession, data: StepData, blobs: Mapping[str, Blob],
    replies: Mapping[str, Blob] | None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """This party's share of its product with each peer: E decrypts G's reply; G draws its
    masks again. Every blob of the pair is read and checked before a share is kept."""
    plan, p, slots = session.plan, session.index, pw.slot_layout(session.plan)
    out = {}
    for pair in _peers(session):
        peer, mine, theirs = pair.peer, plan.widths[p], plan.widths[pair.q]
        blob, reply = _blob(blobs, peer), _blob(replies, peer, "reply")
        rows_in = pw.features_rows(plan, pair.q, p)
        check(read(session, data, peer, blob, rows_in, 1, "blob"))
        rows_back = pw.reply_rows(plan, pair.q, p)
        coins = _coin_cells(session, data, SELECT, pair.q, p)
        raw = drain(read(session, data, peer, reply, rows_back + coins, REPLY_ROUNDS[1], "reply"))
        if pair.encrypts:
            private = private_key(session, data, peer)
            raw = raw[: rows_back * pw.CIPHERTEXT]  # the coin reply's after it
            share = pp.encrypter_shares(private, slots, raw, (mine, theirs))
        else:
            key = mask_key(session, data, "round-1", peer, blob_nonce(blob).hex())
            share = aggregator_shares(draw_masks(slots, key, (mine, theirs)))
        out[plan.pair_name(pair.a, pair.b)] = _oriented(share, pair, p)
    return out


def _blob(blobs: Mapping[str, Blob] | None, peer: str, what: str = "features") -> Blob:
    if blobs is None or peer not in blobs:
        raise MessageError(f"no {what} from {peer!r}; the server must relay them before this step.")
    return blobs[peer]


# ---------------------------------------------------------------------------- round 2
def groups(
    session: PartySession, data: StepData, group_deal: bytes, request: Request | Sequence[Marginal]
) -> SealedBlobs:
    """Open the round-2 deal; then, toward each peer it encrypts for, E's rows of the
    groups the request needs (an empty blob where none), sealed when read."""
    data.opened()
    open_group_deal(session, data, group_deal, request)
    plan, p = session.plan, session.index
    layout = data.round_two()[1]

    def rows(peer: str) -> int:
        return pw.groups_rows(plan, p, plan.party_index(peer), layout)

    def seal(peer: str, out: Any) -> None:
        q = plan.party_index(peer)
        blocks: Iterable[np.ndarray] = ()
        if rows(peer):

            def columns(r0: int, r1: int) -> np.ndarray:
                return group_features(session, data, q, session.columns(r0, r1))

            label = ("round-2", peer, data.request, data.group_deal_hash)
            blocks = _encrypted(session, data, peer, layout.width(p, q), columns, *label)
        write(session, data, peer, out, blocks, rows(peer), 2, nonce(session, data, peer, 2))

    return sealed(session, seal, rows)


def _round_two_keys(
    session: PartySession, data: StepData, peer: str, first: Blob, second: Blob
) -> tuple[bytes, bytes]:
    """G's mask streams of its two round-2 replies: E's round-1 rows by G's groups, and
    E's round-2 rows by G's singles and groups."""
    label = (peer, data.request, blob_nonce(first).hex(), blob_nonce(second).hex())
    return (
        mask_key(session, data, "round-2a", *label),
        mask_key(session, data, "round-2b", *label),
    )


def group_replies(
    session: PartySession, data: StepData, blobs: Mapping[str, Blob],
    group_blobs: Mapping[str, Blob], tail: Tail | None = None,
) -> SealedBlobs:  # fmt: skip
    """Toward each peer that encrypts for it, in a pair the request grows: G's masked
    accumulators of E's round-1 rows by G's groups, then of E's round-2 rows by G's singles
    and groups; then ``tail(peer)`` (its coin reply; an empty blob toward the others)."""
    plan, p = session.plan, session.index
    layout = data.round_two()[1]

    def rows(peer: str) -> int:
        q = plan.party_index(peer)
        return pw.group_reply_rows(plan, p, q, layout) + _coin_cells(session, data, MEASURE, p, q)

    def seal(peer: str, out: Any) -> None:
        first, second = _blob(blobs, peer), _blob(group_blobs, peer, "groups")
        blocks = []
        if rows(peer):
            grown = _aggregate_two(session, data, peer, first, second)
            blocks.append(ciphertexts(grown + (tail(peer) if tail else b"")))
        label = (peer, data.request, blob_nonce(first).hex(), blob_nonce(second).hex())
        once = label_key(session, data, "group-reply-nonce", *label)[:12]
        write(session, data, peer, out, blocks, rows(peer), REPLY_ROUNDS[2], once)

    return sealed(session, seal, rows)


def _aggregate_two(
    session: PartySession, data: StepData, peer: str, first: Blob, second: Blob
) -> bytes:
    plan, p, layout = session.plan, session.index, data.round_two()[1]
    pair, slots = _pair(session, peer), pw.slot_layout(plan)
    k_e, k_g = plan.widths[pair.q], plan.widths[p]
    w_e, w_g = layout.width(pair.q, p), layout.width(p, pair.q)
    rows_one = _e_rows(session, data, pair, first, k_e, 1)
    public, table = public_key(session, data, peer, first), public_table(session, data, peer, first)
    singles = session.columns(0, plan.rows)
    mine = group_features(session, data, pair.q, singles)
    group_sizes = [math.prod(plan.sizes[a] for a in g) for g in layout.groups(p, pair.q)]
    key_a, key_b = _round_two_keys(session, data, peer, first, second)
    parts = []
    if w_g:
        reply, _ = pp.masked_reply(public, table, slots, rows_one, mine, k_e, group_sizes, key_a)
        parts.append(reply)
    if w_e:
        rows_two = _e_rows(session, data, pair, second, w_e, 2)
        cols = np.hstack([singles, np.where(mine >= 0, mine + k_g, -1)])
        sizes = [plan.sizes[a] for a in plan.attrs[p]] + group_sizes
        reply, _ = pp.masked_reply(public, table, slots, rows_two, cols, w_e, sizes, key_b)
        parts.append(reply)
    return b"".join(parts)


def grow(
    session: PartySession, data: StepData, shares: Mapping[str, np.ndarray], layout: Layout,
    blobs: Mapping[str, Blob] | None, group_blobs: Mapping[str, Blob] | None,
    replies: Mapping[str, Blob] | None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Each pair's share matrix in ``layout``: the round-1 share, with the blocks of the
    round-2 groups added where the pair grows (E decrypts G's round-2 reply; G draws its
    masks again)."""
    plan, p, slots = session.plan, session.index, pw.slot_layout(session.plan)
    out = dict(shares)
    for pair in _peers(session):
        if not layout.grows(pair.a, pair.b):
            continue
        peer, key = pair.peer, plan.pair_name(pair.a, pair.b)
        e, g = (p, pair.q) if pair.encrypts else (pair.q, p)
        k_e, k_g, w_e, w_g = plan.widths[e], plan.widths[g], layout.width(e, g), layout.width(g, e)
        second, reply = _blob(group_blobs, peer, "groups"), _blob(replies, peer, "reply")
        check(read(session, data, peer, second, pw.groups_rows(plan, pair.q, p, layout), 2,
                     "group-blob"))  # fmt: skip
        back = pw.group_reply_rows(plan, pair.q, p, layout)
        coins = _coin_cells(session, data, MEASURE, pair.q, p)
        raw = drain(read(session, data, peer, reply, back + coins, REPLY_ROUNDS[2], "group-reply"))
        if pair.encrypts:
            private, cut = (
                private_key(session, data, peer),
                w_g * slots.per_row(k_e) * pw.CIPHERTEXT,
            )
            end = back * pw.CIPHERTEXT  # the coin reply's after it
            one = pp.encrypter_shares(private, slots, raw[:cut], (k_e, w_g)) if w_g else None
            two = (
                pp.encrypter_shares(private, slots, raw[cut:end], (w_e, k_g + w_g)) if w_e else None
            )
        else:
            key_a, key_b = _round_two_keys(session, data, peer, _blob(blobs, peer), second)
            one = aggregator_shares(draw_masks(slots, key_a, (w_g, k_e))) if w_g else None
            two = aggregator_shares(draw_masks(slots, key_b, (k_g + w_g, w_e))) if w_e else None
        full = np.zeros((k_g + w_g, k_e + w_e), np.uint64)
        first = shares[key]
        full[:k_g, :k_e] = first if g == pair.a else first.T
        if one is not None:
            full[k_g:, :k_e] = one
        if two is not None:
            full[:, k_e:] = two
        out[key] = np.ascontiguousarray(full if g == pair.a else full.T)
    return out
