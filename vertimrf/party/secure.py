"""A party's side of method="secure": aligned one-hot features, masked exchange, shares.

``SecureParty`` commits to its data (:meth:`commitment`: the server deals on every party's
commitment, so other data gets other masks), then runs its steps, each once:

1. :meth:`features`: open the server's deal (refused when it was made for other data),
   order the rows by a PRF of the record IDs (keyed by the group secret and the run) in
   PRF buckets padded with all-zero rows to the public capacity
   (:mod:`vertimrf.party.aligned`), and send X - U to every peer under the pairwise key. U
   is uniform and the peer does not know it, so the peer's view of X is uniform (its
   simulator draws uniform words); the server knows U but cannot open it.
2. :meth:`release`: check each peer's record-set digest, compute the share of every product
   (the lower party A: U_A^T Y' + W; the higher B: X'^T Y + Z; A + B = X^T Y), and release
   the first, cheap measurement of every 2-way marginal: own ones with N_Z(0, sigma^2), cross
   ones as share + N_Z(0, sigma^2 / 2) + R, where the pad R (from the pairwise key) is added by
   A and subtracted by B, so the server sees uniform words until it adds both.
3. :meth:`measure`: the same for the marginals the server requests, with fresh noise and a
   fresh pad, from the kept shares; a marginal the request bins is binned (summed over the
   bins, exact counts or shares mod 2^64) before its noise and pad.

Between processes (the command-line roles), :meth:`save_state` writes what ``measure`` needs,
each pair's share (k_p x k_q words) and the record-set digest, to a private file (the
container format, atomic, mode 0600; never sent) bound to the run, the party, its data and
its deal, and :meth:`load_state` reads it back, so ``measure`` neither opens the deal again
nor reads the peers' blobs. A state of another run, party, data set or deal is refused.

Every release is charged, before its noise is drawn, to the party's ledger, capped at the
protocol's budget; :class:`vertimrf.protocol.secure.SecurePlan` fixes every parameter. Its
noise is keyed by every input of the step, its pads by both blobs of the pair and the
request, its nonces by what each plaintext depends on (``docs/protocol.md``, "Why nothing
repeats on other data").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import zip_longest
from typing import Any

import numpy as np
import pandas as pd

from vertimrf.domain import EncodedTable
from vertimrf.errors import (
    RUN_CHANGED,
    ChannelError,
    ConfigError,
    MessageError,
    PrivacyBudgetError,
    RunChangedError,
)
from vertimrf.kernels.secure import matmul_tn_u64, onehot_scatter_u64
from vertimrf.party.aligned import Aligned, AlignedTable, HeldTable
from vertimrf.party.ids import RecordIds, record_fingerprints
from vertimrf.party.keys import HashKeys
from vertimrf.party.party import bin_table, own_table, sha256_parts
from vertimrf.privacy.ledger import PrivacyLedger
from vertimrf.privacy.mechanisms import discrete_laplace_count
from vertimrf.privacy.samplers import KeyedSampler, NoiseSampler, derive_key, randomness
from vertimrf.protocol.bins import BinMap, bin_axes
from vertimrf.protocol.channels import BufferWriter, KeyPair, PublicKey, expand, pairwise_key
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.container import read_container, write_container
from vertimrf.protocol.secure import (
    COUNT_MECHANISM,
    MEASURE,
    SELECT,
    Layout,
    Marginal,
    Request,
    SecurePlan,
)
from vertimrf.protocol.securemsg import (
    Deal,
    GroupDeal,
    SecureRelease,
    blob_nonce,
    block_rows,
    feature_blob_bytes,
    open_feature_blocks,
    write_feature_blocks,
)
from vertimrf.protocol.seeds import role_seed

STATE_KIND = "vertimrf-secure-party-state"


def pad_label(release: str, a: str, b: str, binding: str) -> bytes:
    """Label of the pad that hides the (a, b) shares of ``release`` from the server, bound
    to ``binding``: a digest of everything both shares depend on (see
    :meth:`SecureParty._pad_binding`), so that a changed share never gets the same pad."""
    return f"pad/{release}/{a}/{b}/{binding}".encode()


def c_order_index(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """The C-order cell index of each row's ``codes`` (one array per attribute, in order)
    over attributes of ``sizes``: a group's one-hot column within the group."""
    index = np.zeros(len(codes[0]) if codes else 0, np.int64)
    for c, u in zip(codes, sizes, strict=True):
        index = index * u + c
    return index


def mask_features(cols: np.ndarray, mask: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """X - U for the one-hot X given by ``cols`` (in the ring of ``mask``'s words, uint32
    or uint64, which wrap); ``inplace`` overwrites ``mask`` (no second rows x k matrix). A
    row has one column per group and the groups' columns differ, so each group is one
    scatter of distinct cells."""
    out = np.negative(mask, out=mask if inplace else None)
    flat = out.reshape(-1)
    k = out.shape[1]
    one = out.dtype.type(1)
    for j in range(cols.shape[1]):
        real = np.flatnonzero(cols[:, j] >= 0)
        flat[real * k + cols[real, j]] += one
    return out


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


# A peer's feature blob: any bytes-like (the command line maps each file read-only).
Blob = bytes | bytearray | memoryview


class SecureParty:
    """A data holder in a secure run.

    Args:
        name, data, config, secret, id_column, ids, seed: as for
            :class:`vertimrf.party.party.LocalParty` (``config.method`` must be "secure");
            ``data`` may also be a table aligned where it is held (the select pipeline only):
            a :class:`vertimrf.party.file_table.FileTable`, a CSV or Parquet file aligned
            through temporary files, or a :class:`vertimrf.party.dask_table.DaskTable`, a
            table on this party's Dask cluster.
        keypair: this party's X25519 key pair (``vertimrf keys``).
        peers: every other party's public key, by name (fingerprints checked out of band).
        bins: the paper pipeline (the paper pipeline) only: the bin maps
            of this party's binned columns, from its own local message
            (:meth:`vertimrf.party.party.LocalParty.release`); its features are the binned codes.
    """

    def __init__(
        self,
        name: str,
        data: pd.DataFrame | EncodedTable | HeldTable,
        config: ProtocolConfig,
        secret: bytes,
        keypair: KeyPair,
        peers: Mapping[str, PublicKey],
        *,
        id_column: str = "id",
        ids: RecordIds | None = None,
        seed: int | None = None,
        bins: Mapping[str, BinMap] | None = None,
    ) -> None:
        if not isinstance(config, ProtocolConfig):
            raise ConfigError(f"config must be a ProtocolConfig; got {type(config).__name__}.")
        self.plan = SecurePlan.from_config(config)
        self.name, self.config = name, config
        self.index = self.plan.party_index(name)
        if keypair.name != name:
            raise ConfigError(f"the key pair is {keypair.name!r}'s, not {name!r}'s.")
        missing = sorted(set(self.plan.names) - {name} - set(peers))
        if missing:
            raise ConfigError(f"party {name!r} needs the public keys of {missing}.")
        self.spec = config.spec.subset(config.party(name).columns)
        self._table: EncodedTable | HeldTable | None
        self._fingerprints: np.ndarray | None = None
        if isinstance(data, HeldTable):
            if not self.plan.select or bins is not None:
                raise ConfigError(
                    f"a {type(data).__name__} runs the select pipeline only "
                    "(secure_pipeline='select')."
                )
            self._table = data.check(name, self.spec, id_column)
        else:
            self._table, ids = own_table(name, self.spec, data, id_column, ids)
            if not self.plan.select:
                self._table = bin_table(self._table, self._check_bins(bins))
            elif bins is not None:
                raise ConfigError(
                    "bins are an input of the paper pipeline (secure_pipeline='paper')."
                )
            self._fingerprints = record_fingerprints(ids)
        self._aligned: Aligned | None = None
        self._offsets = np.asarray(self.plan.offsets[self.index], np.int64)
        HashKeys.from_secret(secret, 1)
        self._secret, self._keypair = secret, keypair
        self._context = config.run_context()
        self._keys = {
            q: pairwise_key(keypair, peers[q], self._context) for q in self.plan.names if q != name
        }
        self._seed = seed
        self._local = keypair.local_secret()
        self.ledger = PrivacyLedger(rho=self.plan.rho, delta=config.delta)
        self._state: dict[str, Any] = {}

    def _check_bins(self, bins: Mapping[str, BinMap] | None) -> Mapping[str, BinMap]:
        """The bin maps of exactly this party's binned columns, each with the plan's size."""
        binned = set(self.config.binned_columns())
        want = sorted(c for c in self.spec.names if c in binned)
        got = {} if bins is None else dict(bins)
        if sorted(got) != want:
            raise ConfigError(
                f"party {self.name!r} needs the bin maps of {want} (from its local release); "
                f"got {sorted(got)}."
            )
        for c, m in got.items():
            if m.n_bins != self.plan.sizes[self.config.spec.names.index(c)]:
                raise ConfigError(f"the bin map of {c!r} has {m.n_bins} bins, not the plan's.")
        return got

    def features(self, deal: bytes) -> SealedBlobs:
        """Step 1: the masked-feature blob for each peer (relayed by the server): a mapping
        that seals a peer's blob (a bytearray, written in place by the cipher) each time it
        is read, the same bytes every time, so a caller holds one blob at a time. X - U is
        made and sealed by blocks of rows (the mask expanded again for each peer), so the
        rows x k matrix never exists."""
        self.open_deal(deal)
        self._once("features")
        width = self.plan.widths[self.index]
        return SealedBlobs(self, self._feature_blob, lambda peer: width)

    def _feature_blob(self, peer: str, out: Any) -> None:
        """This party's X - U sealed for ``peer`` by row blocks, written to ``out``."""
        self._seal(self._masked_rows(), peer, out)

    def _masked_rows(self) -> Iterator[np.ndarray]:
        """X - U by blocks of whole rows."""
        plan = self.plan
        step = block_rows(plan.widths[self.index])
        for r0 in range(0, plan.rows, step):
            r1 = min(plan.rows, r0 + step)
            yield mask_features(self._columns(r0, r1), self._mask_rows(r0, r1), inplace=True)

    def _columns(self, r0: int, r1: int) -> np.ndarray:
        """The one-hot columns of this party's singles in padded rows r0:r1 (-1: padding)."""
        return self.aligned().columns(r0, r1, self._offsets)

    def aligned(self) -> Aligned:
        """This party's records in the common row order (aligned on first use; the input
        table is then dropped). ConfigError when it holds more than max_rows records."""
        if self._aligned is None:
            plan, table = self.plan, self._table
            if isinstance(table, HeldTable):
                self._aligned = table.align(self.spec, self._secret, self._context, plan)
            else:
                assert table is not None and self._fingerprints is not None
                self._aligned = AlignedTable(
                    table.codes, self._fingerprints, self._secret, self._context,
                    plan.buckets, plan.capacity, plan.max_rows,
                )  # fmt: skip
            self._table = self._fingerprints = None
        return self._aligned

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
        key, shape, digest = self._keys[peer], (self.plan.rows, width), self._state["digest"]
        word, size = self.plan.word, self.plan.word_bytes
        write_feature_blocks(
            out, key, blocks, shape, self._context, self.name, peer, digest,
            word=word, nonce=nonce, round_=round_, word_bytes=size,
        )  # fmt: skip

    def open_deal(self, deal: bytes) -> None:
        """Open the deal and set up the aligned columns and the record-set digest: what
        :meth:`features` does before sealing (the mask U is expanded from the deal's seed
        when used, block by block where it can be). A new process that runs release calls
        this with the same deal and data instead of sealing blobs again."""
        d = Deal.open(deal, self._keypair, self._context)
        if not hmac.compare_digest(d.commitment, self.commitment()):
            raise RunChangedError(
                f"party {self.name!r}: the deal was made for other data of this party than the "
                "table given now"
            )
        digest = self.aligned().record_digest
        deal_hash = sha256_parts(bytes(deal))
        self._state.update(deal=d, deal_hash=deal_hash, digest=digest)
        self._inputs().update(
            {"data": self.data_digest(), "deal": deal_hash, "commit-set": d.commit_set.hex()}
        )

    def commitment(self) -> bytes:
        """This party's data commitment for this run: HMAC-SHA256 of its data digest under
        a key derived from its local secret (which nobody else holds), so the server learns
        nothing of the data from it, yet a changed table gives another commitment, and so
        another deal (see :meth:`SecureServer.deal`)."""
        key = derive_key(self._local, "data-commitment", self.config.config_hash(), self.name)
        return hmac.new(key, self.data_digest().encode(), hashlib.sha256).digest()

    def _inputs(self) -> dict[str, str]:
        """The digests of every input this party's steps have used so far (its data, the
        deal, each peer blob read, the round-2 deal and blobs): what its noise, pads and
        nonces are keyed by."""
        inputs: dict[str, str] = self._state.setdefault("inputs", {})
        return inputs

    def _mask_rows(self, r0: int, r1: int) -> np.ndarray:
        """Rows r0:r1 of this party's mask U (a block of its AES-CTR stream)."""
        k = self.plan.widths[self.index]
        seed = self._state["deal"].seed_u
        words = expand(seed, b"U", (r1 - r0) * k, start=r0 * k, word=self.plan.word)
        return words.reshape(r1 - r0, k)

    def release(self, blobs: Mapping[str, Blob]) -> SecureRelease:
        """Step 2: shares of every product, then the first release of every 2-way marginal
        (with the noisy count at the count party)."""
        if "deal" not in self._state:
            raise ConfigError("run features(deal) or open_deal(deal) before release(blobs).")
        shares = self._shares(blobs)  # checks every blob before anything is released
        self._check_step(SELECT)
        marginals = self.plan.all_pairs()
        noise = self._sampler(SELECT, Request(tuple(marginals)))
        with self.ledger.transaction():
            count = None
            if self.name == self.plan.count_party and self.plan.rho_count > 0:
                count = discrete_laplace_count(
                    self.aligned().n,
                    self.plan.count_epsilon,
                    noise=noise,
                    ledger=self.ledger,
                    party=self.name,
                )
            release = self._measure(SELECT, marginals, count, noise, shares=shares)
        self._state["shares"] = shares
        self._state.setdefault("done", set()).add(SELECT)
        return release

    def groups(self, group_deal: bytes, request: Request | Sequence[Marginal]) -> SealedBlobs:
        """Step 3 (round 2, after the server's request): the blob for each peer holding the
        attribute groups that the request's cross marginals with that peer need, masked with
        this party's fresh mask from ``group_deal`` (an empty blob where it needs none): a
        mapping that seals a peer's blob when it is read, the same bytes every time."""
        if "deal" not in self._state:
            raise ConfigError("run features(deal) or open_deal(deal) before groups(...).")
        self.open_group_deal(group_deal, request)
        self._once("groups")
        return SealedBlobs(self, self._group_blob, self._group_width)

    def _group_width(self, peer: str) -> int:
        """The values a row of this party's round-2 blob toward ``peer``."""
        return self._state["layout"].width(self.index, self.plan.names.index(peer))

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
        self._state.update(
            group_deal=deal, group_deal_hash=group_deal_hash, layout=layout,
            request=request.digest(),
        )  # fmt: skip
        self._inputs()["group-deal"] = group_deal_hash

    def _dealt_z(self, deal: GroupDeal, layout: Layout, a: int, b: int) -> bool:
        """True when ``deal`` holds the pair (a, b)'s Z_A and Z_B at their shapes."""
        plan, peer = self.plan, self.plan.names[a]
        wa, wb = layout.width(a, b), layout.width(b, a)
        shapes = {"a": (wa, plan.widths[b] + wb), "b": (plan.widths[a], wb)}
        got = {"a": deal.z_a.get(peer), "b": deal.z_b.get(peer)}
        return all(v is not None and v.shape == shapes[k] for k, v in got.items())

    def _group_blob(self, peer: str, out: Any) -> None:
        """This party's round-2 groups toward ``peer``, masked and sealed by row blocks,
        written to ``out``."""
        q, k = self.plan.names.index(peer), self._group_width(peer)
        self._seal(self._masked_groups(peer, q, k), peer, out, 2, k)

    def _masked_groups(self, peer: str, q: int, k: int) -> Iterator[np.ndarray]:
        """G - U2 toward party q (``k`` values a row) by blocks of whole rows."""
        plan, seed = self.plan, self._state["group_deal"].seeds_u[peer]
        step = block_rows(k)
        for r0 in range(0, plan.rows, step):
            r1 = min(plan.rows, r0 + step)
            mask = expand(seed, b"U2", (r1 - r0) * k, start=r0 * k, word=plan.word)
            cols = self._group_features(q, self._columns(r0, r1))
            yield mask_features(cols, mask.reshape(r1 - r0, k), inplace=True)

    def _group_features(self, q: int, singles: np.ndarray) -> np.ndarray:
        """The one-hot column indices of this party's round-2 groups toward party q, in the
        rows whose single-attribute columns are ``singles``."""
        plan, p = self.plan, self.index
        local = {a: j for j, a in enumerate(plan.attrs[p])}
        sizes = [plan.sizes[a] for a in plan.attrs[p]]
        groups = [tuple(local[a] for a in g) for g in self._state["layout"].groups(p, q)]
        return group_columns(singles, plan.offsets[p], sizes, groups)

    def measure(
        self,
        request: Request | Sequence[Marginal],
        blobs: Mapping[str, Blob] | None = None,
        group_blobs: Mapping[str, Blob] | None = None,
    ) -> SecureRelease:
        """Step 4: the re-measurement of the server's requested marginals (a :class:`Request`,
        whose bin maps are applied to the exact counts and shares before the noise; a plain
        list means no bins), from the shares kept by :meth:`release` (or read by
        :meth:`load_state` in a new process), or recomputed from the peers' ``blobs`` after
        :meth:`open_deal` with the same deal. A pair whose layout grows (round-2 groups)
        needs the peer's round-1 ``blobs`` and its ``group_blobs``, after :meth:`groups`
        (or :meth:`open_group_deal`) with this request."""
        shares = self._state.get("shares")
        if shares is None:
            if blobs is None or "deal" not in self._state:
                raise ConfigError(
                    "measure(request) needs the shares: run release(blobs) first, or "
                    "load_state(path) with the state release saved, or open_deal(deal) and "
                    "pass the peers' blobs."
                )
            shares = self._shares(blobs)
        request = self._request(request)
        self._check_step(MEASURE)
        layout = self.plan.layout(request.marginals)
        grown = self._grow(shares, layout, request, blobs, group_blobs)
        noise = self._sampler(MEASURE, request)
        with self.ledger.transaction():
            release = self._measure(MEASURE, request.marginals, None, noise, request, grown, layout)
        self._state["shares"] = shares
        self._state.setdefault("done", set()).add(MEASURE)
        return release

    def _request(self, request: Request | Sequence[Marginal]) -> Request:
        if isinstance(request, Request):
            return self.plan.check_request(request.marginals, request.bins)
        return self.plan.check_request(list(request))

    def _grow(
        self,
        shares: Mapping[str, np.ndarray],
        layout: Layout,
        request: Request,
        blobs: Mapping[str, Blob] | None,
        group_blobs: Mapping[str, Blob] | None,
    ) -> dict[str, np.ndarray]:
        """Each pair's share matrix in ``layout``: the round-1 share, with the blocks of the
        round-2 groups added where the pair grows."""
        plan, p, st = self.plan, self.index, self._state
        out = dict(shares)
        growing = [(a, b) for a, b in plan.pairs() if p in (a, b) and layout.grows(a, b)]
        if not growing:
            return out
        if st.get("request") != request.digest() or "deal" not in st:
            raise ConfigError(
                "this request measures round-2 groups: run groups(group_deal, request) first, "
                "or open_deal(deal) and open_group_deal(group_deal, request) in a new process."
            )
        for a, b in growing:
            q = b if p == a else a
            peer = plan.names[q]
            if blobs is None or group_blobs is None or peer not in blobs or peer not in group_blobs:
                raise MessageError(
                    f"party {self.name!r} needs {peer!r}'s feature blobs of both rounds to "
                    "measure the request's groups; the server must relay them first."
                )
            full = np.empty(layout.shape(a, b), np.uint64)
            ka, kb = plan.widths[a], plan.widths[b]
            full[:ka, :kb] = shares[plan.pair_name(a, b)]
            if p == a:
                block_a, block_b = self._left_blocks(layout, b, blobs[peer], group_blobs[peer])
            else:
                block_a, block_b = self._right_blocks(layout, a, blobs[peer], group_blobs[peer])
            full[ka:, :], full[:ka, kb:] = block_a, block_b
            out[plan.pair_name(a, b)] = full
        return out

    def _read(
        self, peer: str, blob: Blob, width: int, round_: int, step: int
    ) -> Iterator[tuple[int, int, np.ndarray]]:
        """A peer's masked features of one round by blocks of ``step`` rows: (r0, r1, rows
        r0:r1), each valid until the next is read. The blob's tag and its record-set digest
        are checked when the iteration ends, so a caller keeps nothing it made of the
        blocks unless the loop over them finished; then the blob's digest and nonce are
        kept among this party's inputs."""
        plan = self.plan
        hasher = hashlib.sha256()
        try:
            digest, blocks = open_feature_blocks(
                self._keys[peer], blob, self._context, peer, self.name, (plan.rows, width),
                step, word=plan.word, round_=round_, word_bytes=plan.word_bytes, hasher=hasher,
            )  # fmt: skip
            yield from blocks
        except ChannelError as exc:
            raise ChannelError(f"the feature blob from {peer!r}: {exc}") from None
        kind = "blob" if round_ == 1 else "group-blob"
        self._inputs().update(
            {f"{kind}/{peer}": hasher.hexdigest(), f"{kind}-nonce/{peer}": blob_nonce(blob).hex()}
        )
        if not hmac.compare_digest(digest, self._state["digest"]):
            raise MessageError(
                "parties hold different record sets or use different shared secrets: "
                f"{peer!r}'s record-set digest differs from {self.name!r}'s (both must hold "
                "exactly the same record IDs and the same group secret)."
            )

    def _read_both(
        self, peer: str, first: Blob, second: Blob, widths: tuple[int, int], step: int
    ) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
        """A peer's rounds 1 and 2 by the same blocks of ``step`` rows: (r0, r1, round-1
        rows, round-2 rows); both blobs are checked when the iteration ends."""
        pairs = zip_longest(
            self._read(peer, first, widths[0], 1, step),
            self._read(peer, second, widths[1], 2, step),
        )
        for (r0, r1, one), (_, _, two) in pairs:
            yield r0, r1, one, two

    def _left_blocks(
        self, layout: Layout, b: int, first: Blob, second: Blob
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lower party's shares of the pair's new blocks: A = U2^T [Y' | Y2'] + W_A
        (its groups' rows) and B = U^T Y2' + W_B (its singles against the peer's groups),
        from the peer's blobs of both rounds, block by block of rows."""
        plan, p = self.plan, self.index
        peer, deal = plan.names[b], self._state["group_deal"]
        wa, wb = layout.width(p, b), layout.width(b, p)
        cols = plan.widths[b] + wb
        block_a = expand(deal.seeds_w[peer], b"WA", wa * cols).reshape(wa, cols)
        block_b = expand(deal.seeds_w[peer], b"WB", plan.widths[p] * wb).reshape(plan.widths[p], wb)
        step = block_rows(max(cols, wa, plan.widths[p]))
        for r0, r1, one, two in self._read_both(peer, first, second, (plan.widths[b], wb), step):
            mask = expand(
                deal.seeds_u[peer], b"U2", (r1 - r0) * wa, start=r0 * wa, word=plan.word
            ).reshape(r1 - r0, wa)
            block_a += matmul_tn_u64(mask, np.hstack((one, two)))
            block_b += matmul_tn_u64(self._mask_rows(r0, r1), two)
        return block_a, block_b

    def _right_blocks(
        self, layout: Layout, a: int, first: Blob, second: Blob
    ) -> tuple[np.ndarray, np.ndarray]:
        """The higher party's shares of the pair's new blocks: A = X2'^T [Y | Y2] + Z_A and
        B = X'^T Y2 + Z_B, one-hot sums of the lower party's masked rows of both rounds,
        block by block of rows."""
        plan, p, st = self.plan, self.index, self._state
        peer, deal = plan.names[a], st["group_deal"]
        width, wq = layout.width(p, a), layout.width(a, p)
        block_a = deal.z_a[peer].copy()
        block_b = deal.z_b[peer].copy()
        step = block_rows(max(plan.widths[a], wq))
        for r0, r1, one, two in self._read_both(peer, first, second, (plan.widths[a], wq), step):
            singles = self._columns(r0, r1)
            mine = self._group_features(a, singles)
            shifted = np.where(mine >= 0, mine + plan.widths[p], -1)
            both = np.hstack((singles, shifted))
            block_a += onehot_scatter_u64(two, both, plan.widths[p] + width)
            block_b += onehot_scatter_u64(one, mine, width)
        return block_a, block_b

    # ------------------------------------------------------------------ private state
    def data_digest(self) -> str:
        """SHA-256 of this party's records: their ID fingerprints and codes, bucket by
        bucket in row order (:mod:`vertimrf.party.aligned`; its private state and derived
        keys are bound to it)."""
        return self.aligned().data_digest

    def _state_meta(self, binding: str) -> dict[str, Any]:
        return {
            "party": self.name,
            "config_hash": self.config.config_hash(),
            "data": self.data_digest(),
            "binding": binding,
        }

    def save_state(self, path: str | os.PathLike, *, binding: str = "") -> None:
        """Write what :meth:`measure` needs after :meth:`release`: each pair's share and the
        record-set digest, with the run, the party, a hash of its data and of its deal, and
        the caller's ``binding`` (e.g. a digest of its input files). The file is private (it
        holds shares, never sent), written atomically with mode 0600; no pickle."""
        st = self._state
        if "shares" not in st or "deal_hash" not in st:
            raise ConfigError("save_state needs the shares: run release(blobs) first.")
        meta = {
            **self._state_meta(binding),
            "deal": st["deal_hash"],
            "digest": st["digest"].hex(),
            "done": sorted(st.get("done", ())),
            "inputs": self._inputs(),
        }
        arrays = {f"s/{key}": share for key, share in st["shares"].items()}
        write_container(path, STATE_KIND, meta, arrays)

    def load_state(
        self, path: str | os.PathLike, *, deal: bytes | None = None, binding: str = ""
    ) -> None:
        """Read a state written by :meth:`save_state` in an earlier process, so that
        :meth:`measure` runs from the kept shares. MessageError when the file is malformed,
        oversized, or of another run, party, data set, ``binding`` or (if given) ``deal``."""
        plan, p = self.plan, self.index
        keys = {  # every pair's bound: another party's state is refused by name, below
            plan.pair_name(a, b): 8 * plan.widths[a] * plan.widths[b] for a, b in plan.pairs()
        }

        def bound(name: str) -> int | None:
            return keys.get(name[2:]) if name.startswith("s/") else None

        meta, arrays = read_container(path, STATE_KIND, array_bytes=bound)
        want = self._state_meta(binding)
        what = {
            "party": "another party's",
            "config_hash": "another run's (config hash)",
            "data": "made from another data set's (" + RUN_CHANGED + ")",
            "binding": "made from other input files'",
        }
        for field, label in what.items():
            if not isinstance(meta, dict) or meta.get(field) != want[field]:
                raise MessageError(
                    f"{path}: this secure state is {label}, not {self.name!r}'s in this run "
                    "with this data: pass the state that this party's `release` wrote in this "
                    "run."
                )
        if deal is not None and meta.get("deal") != sha256_parts(bytes(deal)):
            raise MessageError(
                f"{path}: this secure state was made from another deal: pass the state that "
                "`release` wrote with this deal."
            )
        shares = {k[2:]: v for k, v in arrays.items()}
        try:
            digest = bytes.fromhex(meta["digest"])
            done = {str(d) for d in meta["done"]}
            inputs = {str(k): str(v) for k, v in meta["inputs"].items()}
        except (AttributeError, KeyError, TypeError, ValueError):
            raise MessageError(f"{path}: malformed secure state.") from None
        shapes = {
            plan.pair_name(a, b): (plan.widths[a], plan.widths[b])
            for a, b in plan.pairs()
            if p in (a, b)
        }
        if set(shares) != set(shapes) or any(
            v.dtype != np.uint64 or v.shape != shapes[k] for k, v in shares.items()
        ):
            raise MessageError(
                f"{path}: the state's shares do not match this run's pairs and widths."
            )
        if SELECT not in done:
            raise MessageError(f"{path}: the state records no release.")
        self._state.update(shares=shares, digest=digest, done=done, deal_hash=meta.get("deal"))
        self._inputs().update(inputs)

    # ------------------------------------------------------------------ internals
    def _once(self, step: str) -> None:
        self._check_step(step)
        self._state.setdefault("done", set()).add(step)

    def _check_step(self, step: str) -> None:
        if step in self._state.get("done", ()):
            raise PrivacyBudgetError(f"party {self.name!r} already ran {step!r}; each runs once.")

    def _shares(self, blobs: Mapping[str, Blob]) -> dict[str, np.ndarray]:
        plan, p, st = self.plan, self.index, self._state
        shares = {}
        for a, b in plan.pairs():
            if p not in (a, b):
                continue
            q = b if p == a else a
            peer = plan.names[q]
            if peer not in blobs:
                raise MessageError(
                    f"party {self.name!r} has no feature blob from {peer!r}; the server must "
                    f"relay {peer!r}'s features before this step."
                )
            key = plan.pair_name(a, b)
            if p == a:  # U_p^T Y' + W, block by block of rows
                w = expand(st["deal"].seeds_w[peer], b"W", plan.widths[a] * plan.widths[b])
                share = w.reshape(plan.widths[a], plan.widths[b]).copy()
                step = block_rows(max(plan.widths[a], plan.widths[b]))
                for r0, r1, theirs in self._read(peer, blobs[peer], plan.widths[q], 1, step):
                    share += matmul_tn_u64(self._mask_rows(r0, r1), theirs)
            else:  # X_p'^T Y + Z, block by block of rows
                share = st["deal"].z[peer].copy()
                step = block_rows(plan.widths[a])
                for r0, r1, theirs in self._read(peer, blobs[peer], plan.widths[q], 1, step):
                    share += onehot_scatter_u64(theirs, self._columns(r0, r1), plan.widths[b])
            shares[key] = share  # only once the whole blob is read and checked
        return shares

    def _label_key(self, what: str, *label: str) -> bytes:
        """32 bytes from this party's local secret, bound to the run, the party, ``what``,
        ``label``, its data and its deal: a re-run on the same inputs gets the same bytes."""
        return derive_key(
            self._local,
            what,
            self.config.config_hash(),
            self.name,
            *label,
            self.data_digest(),
            self._state.get("deal_hash", ""),
        )

    def _sampler(self, step: str, request: Request) -> NoiseSampler:
        """The noise of one step. Unseeded: exact samplers on a keystream derived from this
        party's local secret, the run, the step, the request (canonical) and the digest of
        every input the step used (:meth:`_inputs`: its data, the deal and the commitments
        it was made for, every peer blob read, the round-2 deal and blobs), so a re-run of
        the step on the same inputs draws the same noise and spends nothing new, and a
        changed statistic never gets the same noise. Seeded (experiments): its own stream
        per step, so that the steps give the same output in one process or in separate
        commands."""
        if self._seed is None:
            inputs = json.dumps(self._inputs(), sort_keys=True)
            return KeyedSampler(self._label_key("party-noise", step, request.digest(), inputs))
        return randomness(role_seed(self._seed, f"{self.name}/{step}"))[0]

    def _nonce(self, peer: str, round_: int) -> bytes:
        """The AES-GCM nonce of this party's round-``round_`` blob for ``peer``: a PRF of
        everything its plaintext depends on (data and deal; in round 2 also the round-2
        deal, the request and its layout toward the peer), so no two plaintexts share a
        (key, nonce)."""
        if round_ == 1:
            return self._label_key("feature-nonce", peer)[:12]
        st = self._state
        groups = json.dumps(
            [list(g) for g in st["layout"].groups(self.index, self.plan.names.index(peer))]
        )
        label = (peer, st["group_deal_hash"], st["request"], groups)
        return self._label_key("group-nonce", *label)[:12]

    def _pad_binding(self, peer: str, request: Request, grown: bool) -> str:
        """What the pad of this party's shares with ``peer`` is keyed by, the same at both
        ends: the request (canonical) and the nonces of the pair's blobs in both directions
        (round 1, and round 2 where the pair grows). Each nonce is a PRF of its sender's
        data, deal and (round 2) round-2 deal and request, so a share that changes gets a
        fresh pad."""
        inputs, q = self._inputs(), self.plan.names.index(peer)
        h = hashlib.sha256(request.digest().encode())
        for round_, kind in ((1, "blob"), (2, "group-blob"))[: 1 + grown]:
            mine, theirs = self._nonce(peer, round_).hex(), inputs[f"{kind}-nonce/{peer}"]
            h.update((f"/{mine}/{theirs}" if self.index < q else f"/{theirs}/{mine}").encode())
        return h.hexdigest()

    def _measure(
        self,
        release: str,
        marginals: Sequence[Marginal],
        count: int | None,
        noise: NoiseSampler,
        request: Request | None = None,
        shares: Mapping[str, np.ndarray] | None = None,
        layout: Layout | None = None,
    ) -> SecureRelease:
        plan, p = self.plan, self.index
        shares = self._state["shares"] if shares is None else shares
        request = request or Request(tuple(marginals))
        layout = layout or plan.layout()
        for r in plan.releases(release, marginals, request.bins):
            if r.mechanism == COUNT_MECHANISM:
                continue  # charged by discrete_laplace_count as it was drawn
            if r.party == self.name or self.name in (r.party or "").split("+"):
                self.ledger.charge(r)
        sigma = plan.sigma(release, len(marginals))
        local = {a: j for j, a in enumerate(plan.attrs[p])}
        own = [m for m in marginals if plan.kind(m) == "within" and plan.owner[m[0]] == p]
        counts = self.aligned().histograms(
            [tuple(local[a] for a in m) for m in own], tuple(self.spec.domain.sizes)
        )
        within = {}
        for m, h in zip(own, counts, strict=True):
            exact = bin_axes(h, request.maps(m)).ravel()
            within[m] = exact + noise.discrete_gaussian(sigma, exact.shape)
        cross = {}
        s = sigma / np.sqrt(2.0)
        for a, b in plan.pairs():
            if p not in (a, b):
                continue
            key = plan.pair_name(a, b)
            blocks = plan.cross_blocks(marginals, a, b)
            if not blocks:
                continue
            peer = plan.names[b if p == a else a]
            shape = layout.shape(a, b)
            binding = self._pad_binding(peer, request, layout.grows(a, b))
            label = pad_label(release, plan.names[a], plan.names[b], binding)
            pad = expand(self._keys[peer], label, shape[0] * shape[1]).reshape(shape)
            share = shares[key]
            parts = []
            for m in blocks:
                r0, r1, c0, c1 = layout.block(m)
                block = share[r0:r1, c0:c1].reshape(plan.shape(m))
                cells = bin_axes(block, request.maps(m)).ravel()
                eta = noise.discrete_gaussian(s, cells.shape).astype(np.uint64)
                padded = pad[r0:r1, c0:c1].ravel()[: cells.size]  # the block's own pad words
                out = cells + eta + padded if p == a else cells + eta - padded
                parts.append(out & plan.ring_mask)  # uniform in the ring, nothing above it
            cross[key] = np.concatenate(parts)
        return SecureRelease(
            self.name,
            release,
            self.config.config_hash(),
            self._state["digest"].hex(),
            within,
            cross,
            count,
            self._inputs().get("commit-set", ""),
            seeded=self._seed is not None,
        )


class SealedBlobs(Mapping[str, bytearray]):
    """A party's blob for each peer, written by ``seal(peer, out)`` to a binary file
    (:meth:`write`) as it is made, or into a new buffer when read; ``width(peer)``: its
    values a row."""

    def __init__(
        self,
        party: SecureParty,
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
