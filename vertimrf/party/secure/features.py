"""A party's masked features, both rounds: it opens the server's deal, orders its rows
(:mod:`vertimrf.party.records.aligned`) and seals X - U for every peer under the pairwise key
(round 1), then, after the request, G - U2 for each peer holding the attribute groups the
request needs (round 2). U is uniform and the peer does not know it, so the peer's view of X
is uniform (its simulator draws uniform words); the server knows U but cannot open it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from vertimrf.crypto.aead import BufferWriter
from vertimrf.crypto.schedule import derive
from vertimrf.errors import MessageError, RunChangedError
from vertimrf.kernels.packing import pack_low
from vertimrf.party.records.frame import sha256_parts
from vertimrf.party.secure.session import PartySession
from vertimrf.party.secure.step_data import StepData
from vertimrf.protocol.masks import RowMask
from vertimrf.protocol.secure.deal import Deal, GroupDeal
from vertimrf.protocol.secure.features import block_rows, feature_blob_bytes, write_feature_blocks
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import Layout, SecurePlan


def c_order_index(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """The C-order cell index of each row's ``codes`` (one array per attribute, in order)
    over attributes of ``sizes``: a group's one-hot column within the group."""
    index = np.zeros(len(codes[0]) if codes else 0, np.int64)
    for c, u in zip(codes, sizes, strict=True):
        index = index * u + c
    return index


def group_columns(
    cols: np.ndarray, offsets: Sequence[int], sizes: Sequence[int], groups: Sequence[Marginal]
) -> np.ndarray:
    """One-hot column indices (rows x groups, -1 on padding rows) of attribute ``groups``
    laid out one after another from column 0, from a party's single-attribute ``cols``
    (the j-th single's column is ``offsets[j]`` plus its code). ``groups`` hold positions
    in the party's singles; a group's column is its offset plus the C-order index of its
    codes."""
    out = np.full((cols.shape[0], len(groups)), -1, np.int64)
    real = cols[:, 0] >= 0 if cols.shape[1] else np.zeros(cols.shape[0], bool)
    start = 0
    for j, group in enumerate(groups):
        codes = [cols[real, a] - offsets[a] for a in group]
        out[real, j] = start + c_order_index(codes, [sizes[a] for a in group])
        start += math.prod(sizes[a] for a in group)
    return out


def packed(words: np.ndarray, size: int) -> np.ndarray:
    """The low ``size`` bytes of each of ``words``, little-endian, by the kernel (a
    :data:`~vertimrf.protocol.secure.features.Packer`)."""
    out = np.empty(words.size * size, np.uint8)
    pack_low(words, size, out)
    return out


def open_deal(session: PartySession, data: StepData, deal: bytes, slot_map: Any = None) -> None:
    """Open the deal and set up the aligned columns and the record-set digest: what
    :func:`features` does before sealing (the mask U is expanded from the deal's seed when
    used, block by block where it can be). A new process that runs release calls this with
    the same deal and data instead of sealing blobs again. With partial record sets the
    records are laid out at the slots of ``slot_map`` (the server's slot map for this deal,
    bytes-like, or a function giving it, called only when the layout is not kept from an
    earlier process), read by blocks."""
    d = Deal.open(deal, session.keypair, session.context)
    if not hmac.compare_digest(d.commitment, session.commitment()):
        raise RunChangedError(
            f"party {session.name!r}: the deal was made for other data of this party than the "
            "table given now"
        )
    session.records.place(d, slot_map)
    # The record-set digest the peers and the server see, bound to the deal's admit
    # digest: two runs of one config on other inputs never show the same value.
    digest = hashlib.sha256(session.records.aligned().record_digest + d.commit_set).digest()
    deal_hash = sha256_parts(bytes(deal))
    data.deal, data.deal_hash, data.digest = d, deal_hash, digest
    data.inputs.update(
        {"data": session.records.digest(), "deal": deal_hash, "commit-set": d.commit_set.hex()}
    )


def features(session: PartySession, data: StepData, deal: bytes, slot_map: Any) -> SealedBlobs:
    """Step 1: the masked-feature blob for each peer (relayed by the server): a mapping that
    seals a peer's blob (a bytearray, written in place by the cipher) each time it is read,
    the same bytes every time, so a caller holds one blob at a time. X - U is made and
    sealed by blocks of rows (the mask expanded again for each peer), so the rows x k matrix
    never exists. ``slot_map``: see :func:`open_deal`."""
    open_deal(session, data, deal, slot_map)
    width = session.plan.widths[session.index]

    def blob(peer: str, out: Any) -> None:
        rows = _masked(session, data.opened().seed_u, RowMask.U, width, session.columns)
        _seal(session, data, rows, peer, out, 1, width)

    return SealedBlobs(session, blob, lambda peer: (session.plan.rows, width))


def _masked(
    session: PartySession, seed: bytes, mask: RowMask, k: int,
    columns: Callable[[int, int], np.ndarray],
) -> Iterator[np.ndarray]:  # fmt: skip
    """The features of ``columns(r0, r1)`` (``k`` values a row) minus the ``mask`` of
    ``seed``, by blocks of whole rows."""
    plan, step = session.plan, block_rows(k)
    for r0 in range(0, plan.rows, step):
        r1 = min(plan.rows, r0 + step)
        yield session.cross().sent(columns(r0, r1), seed, mask, r0, r1, k, plan.word)


def _seal(
    session: PartySession, data: StepData, blocks: Iterable[np.ndarray], peer: str, out: Any,
    round_: int, width: int,
) -> None:  # fmt: skip
    """The masked features of round ``round_`` (``width`` values a row), given by row
    ``blocks``, sealed for ``peer`` (the nonce is bound to everything the plaintext depends
    on: the inputs, and in round 2 its deal) and written to ``out`` (anything with a binary
    ``write``) as it is made."""
    shape, once = (session.plan.rows, width), nonce(session, data, peer, round_)
    seal_rows(session, data, blocks, peer, out, round_, shape, once)


def seal_rows(
    session: PartySession, data: StepData, blocks: Iterable[np.ndarray], peer: str, out: Any,
    purpose: int, shape: tuple[int, int], nonce: bytes,
) -> None:  # fmt: skip
    """A ``shape`` matrix of ring words given by row ``blocks``, sealed for ``peer`` with
    ``nonce`` (a PRF of everything the plaintext depends on) for ``purpose`` (its round, or a
    coin blob's, :data:`~vertimrf.protocol.secure.features.COIN_ROUNDS`) and written to
    ``out`` as it is made."""
    plan = session.plan
    write_feature_blocks(
        out, session.keys[peer], blocks, shape, session.context, session.name, peer,
        data.digest, word=plan.word, nonce=nonce, round_=purpose, word_bytes=plan.word_bytes,
        pack=packed,
    )  # fmt: skip


def nonce(session: PartySession, data: StepData, peer: str, round_: int) -> bytes:
    """The AES-GCM nonce of this party's round-``round_`` blob for ``peer``: a PRF of
    everything its plaintext depends on (data and deal; in round 2 also the round-2 deal,
    the request and its layout toward the peer), so no two plaintexts share a (key,
    nonce)."""
    if round_ == 1:
        return label_key(session, data, "feature-nonce", peer)[:12]
    layout = data.round_two()[1]
    q = session.plan.names.index(peer)
    groups = json.dumps([list(g) for g in layout.groups(session.index, q)])
    label = (peer, data.group_deal_hash, data.request, groups)
    return label_key(session, data, "group-nonce", *label)[:12]


def bound(session: PartySession, data: StepData, *label: str) -> tuple[str, ...]:
    """The inputs a private stream of this party is bound to: the run, the party,
    ``label``, its data and its deal."""
    config_hash, deal = session.config.config_hash(), data.deal_hash
    return (config_hash, session.name, *label, session.records.digest(), deal)


def label_key(session: PartySession, data: StepData, stream: str, *label: str) -> bytes:
    """The key of ``stream`` under this party's local secret, bound to the run, the party,
    ``label``, its data and its deal: a re-run on the same inputs gets the same bytes."""
    return derive(session.local, stream, *bound(session, data, *label))


def groups(
    session: PartySession, data: StepData, group_deal: bytes, request: Request | Sequence[Marginal]
) -> SealedBlobs:
    """Step 3 (round 2, after the server's request): the blob for each peer holding the
    attribute groups that the request's cross marginals with that peer need, masked with
    this party's fresh mask from ``group_deal`` (an empty blob where it needs none): a
    mapping that seals a peer's blob when it is read, the same bytes every time."""
    data.opened()  # ConfigError before the round-1 deal
    open_group_deal(session, data, group_deal, request)
    plan = session.plan

    def blob(peer: str, out: Any) -> None:
        q, k, seed = plan.names.index(peer), width(peer), data.round_two()[0].seeds_u[peer]

        def columns(r0: int, r1: int) -> np.ndarray:
            return group_features(session, data, q, session.columns(r0, r1))

        _seal(session, data, _masked(session, seed, RowMask.U2, k, columns), peer, out, 2, k)

    def width(peer: str) -> int:
        return data.round_two()[1].width(session.index, plan.names.index(peer))

    return SealedBlobs(session, blob, lambda peer: (plan.rows, width(peer)))


def checked_request(session: PartySession, request: Request | Sequence[Marginal]) -> Request:
    """``request`` checked against the plan (a plain list: no bins)."""
    if isinstance(request, Request):
        return session.plan.check_request(request.marginals, request.bins)
    return session.plan.check_request(list(request))


def open_group_deal(
    session: PartySession, data: StepData, group_deal: bytes, request: Request | Sequence[Marginal]
) -> None:
    """Open the round-2 deal of ``request`` (what :func:`groups` does before sealing; a new
    process that runs measure calls this with the same deal and request). MessageError
    when the deal lacks what the request's layout needs."""
    plan, p = session.plan, session.index
    request = checked_request(session, request)
    layout = plan.layout(request.marginals)
    deal = GroupDeal.open(group_deal, session.keypair, session.context, request.digest())
    for q, peer in enumerate(plan.names):
        if q == p:
            continue
        a, b = min(p, q), max(p, q)
        need = peer in deal.seeds_u and (
            not layout.grows(a, b)
            or session.product is None  # a backend that deals no matrix
            or (peer in deal.seeds_w if p == a else _dealt_z(plan, deal, layout, a, b))
        )
        if not need:
            raise MessageError(
                f"the round-2 deal lacks party {session.name!r}'s randomness for {peer!r}: "
                "use the round-2 deal the server made with this request."
            )
    group_deal_hash = sha256_parts(bytes(group_deal))
    data.group_deal, data.group_deal_hash = deal, group_deal_hash
    data.layout, data.request, data.group_request = layout, request.digest(), request
    data.inputs["group-deal"] = group_deal_hash


def _dealt_z(plan: SecurePlan, deal: GroupDeal, layout: Layout, a: int, b: int) -> bool:
    """True when ``deal`` holds the pair (a, b)'s Z_A and Z_B at their shapes."""
    peer = plan.names[a]
    wa, wb = layout.width(a, b), layout.width(b, a)
    shapes = {"a": (wa, plan.widths[b] + wb), "b": (plan.widths[a], wb)}
    got = {"a": deal.z_a.get(peer), "b": deal.z_b.get(peer)}
    return all(v is not None and v.shape == shapes[k] for k, v in got.items())


def group_features(
    session: PartySession, data: StepData, q: int, singles: np.ndarray
) -> np.ndarray:
    """The one-hot column indices of this party's round-2 groups toward party q, in the
    rows whose single-attribute columns are ``singles``."""
    plan, p = session.plan, session.index
    local = {a: j for j, a in enumerate(plan.attrs[p])}
    sizes = [plan.sizes[a] for a in plan.attrs[p]]
    groups = [tuple(local[a] for a in g) for g in data.round_two()[1].groups(p, q)]
    return group_columns(singles, plan.offsets[p], sizes, groups)


class SealedBlobs(Mapping[str, bytearray]):
    """A party's blob for each peer, written by ``seal(peer, out)`` to a binary file
    (:meth:`write`) as it is made, or into a new buffer when read; ``shape(peer)``: its
    rows and values a row (ring words; ``size(peer)``: its length, where they are not)."""

    def __init__(
        self,
        session: PartySession,
        seal: Callable[[str, Any], None],
        shape: Callable[[str], tuple[int, int]],
        size: Callable[[str], int] | None = None,
    ) -> None:
        self._seal, self._shape, self._size = seal, shape, size
        self._plan = session.plan
        self._peers = [q for q in session.plan.names if q != session.name]

    def __getitem__(self, peer: str) -> bytearray:
        out = BufferWriter(self.nbytes(peer))
        self.write(peer, out)
        return out.result()

    def nbytes(self, peer: str) -> int:
        """The length of ``peer``'s blob (public: from the plan and the widths)."""
        if peer not in self._peers:
            raise KeyError(peer)
        if self._size is not None:
            return self._size(peer)
        return feature_blob_bytes(self._shape(peer), self._plan.word, self._plan.word_bytes)

    def write(self, peer: str, out: Any) -> None:
        """Write ``peer``'s blob (the bytes of ``self[peer]``) to the binary file ``out``
        as it is sealed, block by block."""
        if peer not in self._peers:
            raise KeyError(peer)
        self._seal(peer, out)

    def __iter__(self) -> Iterator[str]:
        return iter(self._peers)

    def __len__(self) -> int:
        return len(self._peers)
