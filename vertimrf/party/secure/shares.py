"""A party's shares of every pair's product, from the peers' masked features: the lower
party A holds U_A^T Y' + W, the higher B holds X'^T Y + Z, and A + B = X^T Y; where the
request grows the pair (round 2), the new blocks are Beaver products of both rounds' blobs.
Each blob is read block by block of rows and checked (tag and record-set digest) when read.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Generator, Iterator, Mapping
from itertools import zip_longest

import numpy as np

from vertimrf.errors import ChannelError, ConfigError, MessageError
from vertimrf.party.secure.features import group_features
from vertimrf.party.secure.session import Blob, PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.secure.features import blob_nonce, block_rows, open_feature_blocks
from vertimrf.protocol.secure.marginals import Request
from vertimrf.protocol.secure.plan import Layout


def shares(
    session: PartySession, data: StepData, blobs: Mapping[str, Blob]
) -> dict[str, np.ndarray]:
    """This party's share of its product with each peer, from the peers' round-1
    ``blobs`` (each read and checked before its share is kept)."""
    plan, p, deal, product = session.plan, session.index, data.opened(), session.cross()
    out = {}  # a share only once the whole blob is read and checked
    for a, b in plan.pairs():
        if p not in (a, b):
            continue
        q = b if p == a else a
        peer = plan.names[q]
        if peer not in blobs:
            raise MessageError(
                f"party {session.name!r} has no feature blob from {peer!r}; the server must "
                f"relay {peer!r}'s features before this step."
            )
        key, ka, kb = plan.pair_name(a, b), plan.widths[a], plan.widths[b]
        step = block_rows(max(ka, kb) if p == a else ka)
        received = _read(session, data, peer, blobs[peer], plan.widths[q], 1, step)
        if p == a:  # the lower party's share, from the higher's rows
            seeds = (deal.seeds_w[peer], deal.seed_u)
            out[key] = product.lower_share(*seeds, (ka, kb), received, plan.word)
        else:  # the higher party's, from the lower's rows
            out[key] = product.higher_share(deal.z[peer], received, session.columns, kb)
    return out


def grow(
    session: PartySession, data: StepData, shares: Mapping[str, np.ndarray], layout: Layout,
    request: Request, blobs: Mapping[str, Blob] | None, group_blobs: Mapping[str, Blob] | None,
) -> dict[str, np.ndarray]:  # fmt: skip
    """Each pair's share matrix in ``layout``: the round-1 share, with the blocks of the
    round-2 groups added where the pair grows."""
    plan, p = session.plan, session.index
    out = dict(shares)
    growing = [(a, b) for a, b in plan.pairs() if p in (a, b) and layout.grows(a, b)]
    if not growing:
        return out
    if data.request != request.digest() or data.deal is None:
        raise ConfigError(
            "this request measures round-2 groups: run groups(group_deal, request) first, "
            "or open_deal(deal) and open_group_deal(group_deal, request) in a new process."
        )
    for a, b in growing:
        q = b if p == a else a
        peer = plan.names[q]
        if blobs is None or group_blobs is None or peer not in blobs or peer not in group_blobs:
            raise MessageError(
                f"party {session.name!r} needs {peer!r}'s feature blobs of both rounds to "
                "measure the request's groups; the server must relay them first."
            )
        full = np.empty(layout.shape(a, b), np.uint64)
        ka, kb = plan.widths[a], plan.widths[b]
        full[:ka, :kb] = shares[plan.pair_name(a, b)]
        blocks = _left_blocks if p == a else _right_blocks
        full[ka:, :], full[:ka, kb:] = blocks(
            session, data, layout, q, blobs[peer], group_blobs[peer]
        )
        out[plan.pair_name(a, b)] = full
    return out


def read_blob(
    session: PartySession, data: StepData, peer: str, blob: Blob, shape: tuple[int, int],
    purpose: int, step: int, kind: str, *, word: type | None = None, word_bytes: int | None = None,
) -> Generator[tuple[int, int, np.ndarray], None, None]:  # fmt: skip
    """A peer's blob of ``purpose`` (a round, or another of
    :mod:`~vertimrf.protocol.secure.features`'s) by blocks of ``step`` rows of its ``shape``
    (values ``word``, default the ring's): (r0, r1, rows r0:r1), each valid until the next
    is read. The blob's tag and its record-set digest are checked when the iteration ends,
    so a caller keeps nothing it made of the blocks unless the loop over them finished;
    then the blob's digest and nonce are kept among this party's inputs as ``kind``."""
    plan = session.plan
    hasher = hashlib.sha256()
    word, word_bytes = (plan.word, plan.word_bytes) if word is None else (word, word_bytes)
    try:
        digest, blocks = open_feature_blocks(
            session.keys[peer], blob, session.context, peer, session.name, shape, step,
            word=word, round_=purpose, word_bytes=word_bytes, hasher=hasher,
        )  # fmt: skip
        yield from blocks
    except ChannelError as exc:
        raise ChannelError(f"the feature blob ({kind}) from {peer!r}: {exc}") from None
    data.inputs.update(
        {f"{kind}/{peer}": hasher.hexdigest(), f"{kind}-nonce/{peer}": blob_nonce(blob).hex()}
    )
    if not hmac.compare_digest(digest, data.digest):
        raise MessageError(
            "parties hold different record sets or use different shared secrets: "
            f"{peer!r}'s record-set digest differs from {session.name!r}'s (both must hold "
            "exactly the same record IDs and the same group secret)."
        )


def _read(
    session: PartySession, data: StepData, peer: str, blob: Blob, width: int, round_: int,
    step: int,
) -> Iterator[tuple[int, int, np.ndarray]]:  # fmt: skip
    """A peer's masked features of one round (``width`` values a row): :func:`read_blob`
    kept as "blob" (round 1) or "group-blob" (round 2)."""
    kind = "blob" if round_ == 1 else "group-blob"
    shape = (session.plan.rows, width)
    return read_blob(session, data, peer, blob, shape, round_, step, kind)


def _read_both(
    session: PartySession, data: StepData, peer: str, first: Blob, second: Blob,
    widths: tuple[int, int], step: int,
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:  # fmt: skip
    """A peer's rounds 1 and 2 by the same blocks of ``step`` rows: (r0, r1, round-1
    rows, round-2 rows); both blobs are checked when the iteration ends."""
    pairs = zip_longest(
        _read(session, data, peer, first, widths[0], 1, step),
        _read(session, data, peer, second, widths[1], 2, step),
    )
    for (r0, r1, one), (_, _, two) in pairs:
        yield r0, r1, one, two


def _left_blocks(
    session: PartySession, data: StepData, layout: Layout, b: int, first: Blob, second: Blob
) -> tuple[np.ndarray, np.ndarray]:
    """The lower party's shares of the pair's new blocks: A = U2^T [Y' | Y2'] + W_A
    (its groups' rows) and B = U^T Y2' + W_B (its singles against the peer's groups),
    from the peer's blobs of both rounds, block by block of rows."""
    plan, p = session.plan, session.index
    peer, deal = plan.names[b], data.round_two()[0]
    wa, wb = layout.width(p, b), layout.width(b, p)
    cols = plan.widths[b] + wb
    step = block_rows(max(cols, wa, plan.widths[p]))
    received = _read_both(session, data, peer, first, second, (plan.widths[b], wb), step)
    seeds = (deal.seeds_w[peer], data.opened().seed_u, deal.seeds_u[peer])
    shapes = ((wa, cols), (plan.widths[p], wb))
    return session.cross().lower_blocks(seeds, shapes, received, plan.word)


def _right_blocks(
    session: PartySession, data: StepData, layout: Layout, a: int, first: Blob, second: Blob
) -> tuple[np.ndarray, np.ndarray]:
    """The higher party's shares of the pair's new blocks: A = X2'^T [Y | Y2] + Z_A and
    B = X'^T Y2 + Z_B, one-hot sums of the lower party's masked rows of both rounds,
    block by block of rows."""
    plan, p = session.plan, session.index
    peer, deal = plan.names[a], data.round_two()[0]
    width, wq = layout.width(p, a), layout.width(a, p)
    step = block_rows(max(plan.widths[a], wq))
    received = _read_both(session, data, peer, first, second, (plan.widths[a], wq), step)

    def columns(r0: int, r1: int) -> tuple[np.ndarray, np.ndarray]:
        singles = session.columns(r0, r1)
        return singles, group_features(session, data, a, singles)

    dealt = (deal.z_a[peer], deal.z_b[peer])
    return session.cross().higher_blocks(dealt, received, columns, (plan.widths[p], width))
