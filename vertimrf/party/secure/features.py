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
from vertimrf.errors import ConfigError, MessageError, RunChangedError
from vertimrf.kernels.packing import pack_low
from vertimrf.party.records.frame import sha256_parts
from vertimrf.party.secure.state import PartyState
from vertimrf.protocol.masks import RowMask
from vertimrf.protocol.secure.deal import Deal, GroupDeal
from vertimrf.protocol.secure.features import block_rows, feature_blob_bytes, write_feature_blocks
from vertimrf.protocol.secure.marginals import Marginal, Request
from vertimrf.protocol.secure.plan import Layout


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


class Features(PartyState):
    """The steps that seal a party's masked features: :meth:`features` (round 1) and
    :meth:`groups` (round 2)."""

    def open_deal(self, deal: bytes, slot_map: Any = None) -> None:
        """Open the deal and set up the aligned columns and the record-set digest: what
        :meth:`features` does before sealing (the mask U is expanded from the deal's seed
        when used, block by block where it can be). A new process that runs release calls
        this with the same deal and data instead of sealing blobs again. With partial record
        sets the records are laid out at the slots of ``slot_map`` (the server's slot map
        for this deal, bytes-like, or a function giving it, called only when the layout is
        not kept from an earlier process), read by blocks."""
        d = Deal.open(deal, self._keypair, self._context)
        if not hmac.compare_digest(d.commitment, self.commitment()):
            raise RunChangedError(
                f"party {self.name!r}: the deal was made for other data of this party than the "
                "table given now"
            )
        self.records.place(d, slot_map)
        # The record-set digest the peers and the server see, bound to the deal's admit
        # digest: two runs of one config on other inputs never show the same value.
        digest = hashlib.sha256(self.aligned().record_digest + d.commit_set).digest()
        deal_hash = sha256_parts(bytes(deal))
        self._step.deal, self._step.deal_hash, self._step.digest = d, deal_hash, digest
        self._inputs().update(
            {"data": self.data_digest(), "deal": deal_hash, "commit-set": d.commit_set.hex()}
        )

    def features(self, deal: bytes, slot_map: Any = None) -> SealedBlobs:
        """Step 1: the masked-feature blob for each peer (relayed by the server): a mapping
        that seals a peer's blob (a bytearray, written in place by the cipher) each time it
        is read, the same bytes every time, so a caller holds one blob at a time. X - U is
        made and sealed by blocks of rows (the mask expanded again for each peer), so the
        rows x k matrix never exists. ``slot_map``: see :meth:`open_deal`."""
        self.open_deal(deal, slot_map)
        self._once("features")
        width = self.plan.widths[self.index]
        return SealedBlobs(self, self._feature_blob, lambda peer: width)

    def _feature_blob(self, peer: str, out: Any) -> None:
        """This party's X - U sealed for ``peer`` by row blocks, written to ``out``."""
        self._seal(self._masked_rows(), peer, out)

    def _masked_rows(self) -> Iterator[np.ndarray]:
        """X - U by blocks of whole rows."""
        plan = self.plan
        k, seed = plan.widths[self.index], self._step.opened().seed_u
        step = block_rows(k)
        for r0 in range(0, plan.rows, step):
            r1 = min(plan.rows, r0 + step)
            yield self.product.sent(self._columns(r0, r1), seed, RowMask.U, r0, r1, k, plan.word)

    def _columns(self, r0: int, r1: int) -> np.ndarray:
        """The one-hot columns of this party's singles in padded rows r0:r1 (-1: padding)."""
        return self.aligned().columns(r0, r1, self._offsets)

    def _seal(
        self,
        blocks: Iterable[np.ndarray],
        peer: str,
        out: Any,
        round_: int = 1,
        width: int | None = None,
    ) -> None:
        """The masked features of round ``round_`` (``width`` values a row; default this
        party's round-1 width), given by row ``blocks``, sealed for ``peer`` (the nonce is
        bound to everything the plaintext depends on: the inputs, and in round 2 its deal)
        and written to ``out`` (anything with a binary ``write``) as it is made."""
        nonce = self._nonce(peer, round_)
        width = self.plan.widths[self.index] if width is None else width
        key, shape, digest = self._keys[peer], (self.plan.rows, width), self._step.digest
        word, size = self.plan.word, self.plan.word_bytes
        write_feature_blocks(
            out, key, blocks, shape, self._context, self.name, peer, digest,
            word=word, nonce=nonce, round_=round_, word_bytes=size, pack=packed,
        )  # fmt: skip

    def _nonce(self, peer: str, round_: int) -> bytes:
        """The AES-GCM nonce of this party's round-``round_`` blob for ``peer``: a PRF of
        everything its plaintext depends on (data and deal; in round 2 also the round-2
        deal, the request and its layout toward the peer), so no two plaintexts share a
        (key, nonce)."""
        if round_ == 1:
            return self._label_key("feature-nonce", peer)[:12]
        st = self._step
        layout = st.round_two()[1]
        groups = json.dumps(
            [list(g) for g in layout.groups(self.index, self.plan.names.index(peer))]
        )
        label = (peer, st.group_deal_hash, st.request, groups)
        return self._label_key("group-nonce", *label)[:12]

    def groups(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> SealedBlobs:
        """Step 3 (round 2, after the server's request): the blob for each peer holding the
        attribute groups that the request's cross marginals with that peer need, masked with
        this party's fresh mask from ``group_deal`` (an empty blob where it needs none): a
        mapping that seals a peer's blob when it is read, the same bytes every time."""
        if self._step.deal is None:
            raise ConfigError("run features(deal) or open_deal(deal) before groups(...).")
        self.open_group_deal(group_deal, request)
        self._once("groups")
        return SealedBlobs(self, self._group_blob, self._group_width)

    def _request(self, request: Request | Sequence[Marginal]) -> Request:
        if isinstance(request, Request):
            return self.plan.check_request(request.marginals, request.bins)
        return self.plan.check_request(list(request))

    def open_group_deal(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> None:
        """Open the round-2 deal of ``request`` (what :meth:`groups` does before sealing; a
        new process that runs measure calls this with the same deal and request).
        MessageError when the deal lacks what the request's layout needs."""
        plan, p = self.plan, self.index
        request = self._request(request)
        layout = plan.layout(request.marginals)
        deal = GroupDeal.open(group_deal, self._keypair, self._context, request.digest())
        for q, peer in enumerate(plan.names):
            if q == p:
                continue
            a, b = min(p, q), max(p, q)
            need = peer in deal.seeds_u and (
                not layout.grows(a, b)
                or (peer in deal.seeds_w if p == a else self._dealt_z(deal, layout, a, b))
            )
            if not need:
                raise MessageError(
                    f"the round-2 deal lacks party {self.name!r}'s randomness for {peer!r}: "
                    "use the round-2 deal the server made with this request."
                )
        group_deal_hash = sha256_parts(bytes(group_deal))
        step = self._step
        step.group_deal, step.group_deal_hash = deal, group_deal_hash
        step.layout, step.request = layout, request.digest()
        self._inputs()["group-deal"] = group_deal_hash

    def _dealt_z(self, deal: GroupDeal, layout: Layout, a: int, b: int) -> bool:
        """True when ``deal`` holds the pair (a, b)'s Z_A and Z_B at their shapes."""
        plan, peer = self.plan, self.plan.names[a]
        wa, wb = layout.width(a, b), layout.width(b, a)
        shapes = {"a": (wa, plan.widths[b] + wb), "b": (plan.widths[a], wb)}
        got = {"a": deal.z_a.get(peer), "b": deal.z_b.get(peer)}
        return all(v is not None and v.shape == shapes[k] for k, v in got.items())

    def _group_width(self, peer: str) -> int:
        """The values a row of this party's round-2 blob toward ``peer``."""
        return self._step.round_two()[1].width(self.index, self.plan.names.index(peer))

    def _group_blob(self, peer: str, out: Any) -> None:
        """This party's round-2 groups toward ``peer``, masked and sealed by row blocks,
        written to ``out``."""
        q, k = self.plan.names.index(peer), self._group_width(peer)
        self._seal(self._masked_groups(peer, q, k), peer, out, 2, k)

    def _masked_groups(self, peer: str, q: int, k: int) -> Iterator[np.ndarray]:
        """G - U2 toward party q (``k`` values a row) by blocks of whole rows."""
        plan, seed = self.plan, self._step.round_two()[0].seeds_u[peer]
        step = block_rows(k)
        for r0 in range(0, plan.rows, step):
            r1 = min(plan.rows, r0 + step)
            cols = self._group_features(q, self._columns(r0, r1))
            yield self.product.sent(cols, seed, RowMask.U2, r0, r1, k, plan.word)

    def _group_features(self, q: int, singles: np.ndarray) -> np.ndarray:
        """The one-hot column indices of this party's round-2 groups toward party q, in the
        rows whose single-attribute columns are ``singles``."""
        plan, p = self.plan, self.index
        local = {a: j for j, a in enumerate(plan.attrs[p])}
        sizes = [plan.sizes[a] for a in plan.attrs[p]]
        groups = [tuple(local[a] for a in g) for g in self._step.round_two()[1].groups(p, q)]
        return group_columns(singles, plan.offsets[p], sizes, groups)


class SealedBlobs(Mapping[str, bytearray]):
    """A party's blob for each peer, written by ``seal(peer, out)`` to a binary file
    (:meth:`write`) as it is made, or into a new buffer when read; ``width(peer)``: its
    values a row."""

    def __init__(
        self,
        party: PartyState,
        seal: Callable[[str, Any], None],
        width: Callable[[str], int],
    ) -> None:
        self._seal, self._width = seal, width
        self._plan = party.plan
        self._peers = [q for q in party.plan.names if q != party.name]

    def __getitem__(self, peer: str) -> bytearray:
        out = BufferWriter(self.nbytes(peer))
        self.write(peer, out)
        return out.result()

    def nbytes(self, peer: str) -> int:
        """The length of ``peer``'s blob (public: from the plan and the widths)."""
        if peer not in self._peers:
            raise KeyError(peer)
        rows, word, size = self._plan.rows, self._plan.word, self._plan.word_bytes
        return feature_blob_bytes((rows, self._width(peer)), word, size)

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
