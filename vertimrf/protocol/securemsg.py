"""The byte formats of method="secure": deals, feature blobs and releases.

* A **deal** is what the server sends one party, sealed to the party's X25519 key
  (:func:`vertimrf.crypto.keys.seal`) with the run and the party's name as associated
  data: the seed of the party's mask U, the seed of W for each pair where it is the lower
  party, and Z = U_p^T U_q - W for each pair where it is the higher one.
* A **feature blob** is X - U for one peer, encrypted under the two parties' pairwise key
  with the run, the round, the direction and the sender's record-set digest as associated
  data; round 2 holds the groups the request needs, with fresh masks (a **round-2 deal**,
  :class:`GroupDeal`).
* A **release** holds the noisy within-party marginals, the padded noisy shares of each
  product and (first release, count party) the noisy count.
* A **request** is the server's choice of marginals to re-measure: JSON
  ``{"config_hash": ..., "marginals": [[a, b], ...]}`` (public, post-processing of DP values).

Deals are ``.npz`` archives (:func:`~vertimrf.container.npz_bytes`: no clock in
the bytes) read with ``allow_pickle=False`` (inside authenticated encryption); releases are
the bounded message container of :mod:`vertimrf.container`. Nothing here unpickles.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vertimrf.container import (
    Target,
    npz_bytes,
    read_container,
    source_name,
    write_container,
)
from vertimrf.crypto.aead import BufferWriter, ReadOnce, decrypt_chunks, encrypt_chunks_to
from vertimrf.crypto.kdf import NONCE_BYTES, TAG_BYTES
from vertimrf.crypto.keys import KeyPair, PublicKey, open_sealed, seal
from vertimrf.errors import ChannelError, MessageError
from vertimrf.io import atomic_write_text, read_json
from vertimrf.protocol.secure import Request, SecurePlan
from vertimrf.protocol.seeds import SERVER

DIGEST_BYTES = 32
SEED_BYTES = 32
RELEASE_KIND = "vertimrf-secure-release"
MAX_WITHIN_CELLS = 1 << 24  # a within-party marginal larger than this is never measured
MAX_REQUEST_BYTES = 1 << 22  # a request lists at most a few thousand short marginals
PACK_WORDS = 1 << 16  # ring values packed or unpacked per block of a feature blob
ROW_BLOCK_WORDS = 1 << 20  # ring values per row block of a feature blob streamed in or out
SLOT_BLOCK = 1 << 16  # tokens (or slots) of a list read, merged or written at a time


def _unpack(data: bytes, what: str) -> dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError) as exc:
        raise MessageError(f"{what} is not a valid archive ({exc}).") from None


def deal_aad(context: bytes, party: str) -> bytes:
    """Associated data of the deal for ``party`` in the run ``context``."""
    return context + b"/secure-deal/" + party.encode("utf-8")


@dataclass(frozen=True)
class Deal:
    """One party's correlated randomness from the server (secret from everyone else), made
    for the parties' data commitments: ``commit_set`` is the digest of every party's
    commitment (:func:`commit_set_digest`), ``commitment`` this party's own, which it checks
    against the one it sent (a deal made for other data is refused). With partial record
    sets it also opens the party's slot map (a message of its own, :func:`write_slot_map`):
    its key, the SHA-256 of its plaintext, the count of its real slots, and the digest of
    the whole slot assignment."""

    seed_u: bytes
    seeds_w: dict[str, bytes] = field(default_factory=dict)
    z: dict[str, np.ndarray] = field(default_factory=dict)
    commit_set: bytes = b""
    commitment: bytes = b""
    slot_key: bytes = b""  # partial record sets: the key of this party's slot map
    slot_digest: bytes = b""  # partial record sets: SHA-256 of the slot map's plaintext
    slot_count: int = 0  # partial record sets: the party's tokens (its real slots)
    assignment: bytes = b""  # partial record sets: the digest of the whole slot assignment

    def seal(
        self, recipient: PublicKey, context: bytes, *, randomness: bytes | None = None
    ) -> bytes:
        """The deal encrypted to ``recipient`` for this run (``randomness``: see
        :func:`vertimrf.crypto.keys.seal`)."""
        arrays = {
            "u": np.frombuffer(self.seed_u, np.uint8),
            "t": np.frombuffer(self.commit_set, np.uint8),
            "c": np.frombuffer(self.commitment, np.uint8),
        }
        if self.slot_key:
            arrays["k"] = np.frombuffer(self.slot_key, np.uint8)
            arrays["h"] = np.frombuffer(self.slot_digest, np.uint8)
            arrays["n"] = np.array([self.slot_count], "<u8")
            arrays["a"] = np.frombuffer(self.assignment, np.uint8)
        arrays.update({f"w/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_w.items()})
        arrays.update({f"z/{k}": np.ascontiguousarray(v, np.uint64) for k, v in self.z.items()})
        return seal(
            recipient, npz_bytes(arrays), deal_aad(context, recipient.name), randomness=randomness
        )

    @classmethod
    def open(cls, blob: bytes, keypair: KeyPair, context: bytes) -> Deal:
        """Open a deal sealed to ``keypair`` for this run (ChannelError otherwise)."""
        arrays = _unpack(open_sealed(keypair, blob, deal_aad(context, keypair.name)), "the deal")
        try:
            seed_u = arrays.pop("u").tobytes()
            commit_set, commitment = arrays.pop("t").tobytes(), arrays.pop("c").tobytes()
            slot = [arrays.pop(k).tobytes() if k in arrays else b"" for k in "kha"]
            count = arrays.pop("n") if "n" in arrays else np.zeros(1, "<u8")
            seeds_w = {k[2:]: v.tobytes() for k, v in arrays.items() if k.startswith("w/")}
            z = {k[2:]: v.astype(np.uint64) for k, v in arrays.items() if k.startswith("z/")}
        except KeyError:
            raise MessageError("the deal has no mask seed or no commitments.") from None
        if len(seed_u) != SEED_BYTES or any(len(s) != SEED_BYTES for s in seeds_w.values()):
            raise MessageError("the deal's seeds are not 32 bytes.")
        if len(commit_set) != DIGEST_BYTES or len(commitment) != DIGEST_BYTES:
            raise MessageError("the deal's commitments are not 32 bytes.")
        if any(slot) and (any(len(v) != DIGEST_BYTES for v in slot) or count.shape != (1,)):
            raise MessageError("the deal's slot map key, digests or count are malformed.")
        key, digest, assignment = slot
        return cls(
            seed_u, seeds_w, z, commit_set, commitment, key, digest, int(count[0]), assignment
        )


SLOT_MAP_ROUND = 0  # the slot map's purpose in its associated data (feature blobs: 1 and 2)


def slot_map_bytes(most: int) -> int:
    """The length of every slot map of a run whose parties have at most ``most`` tokens
    (the plan's public max_tokens): the same whatever a party holds."""
    return feature_blob_bytes((most, 1), np.uint64)


def write_slot_map(
    out: Any,
    key: bytes,
    slots: Iterable[np.ndarray],
    count: int,
    most: int,
    context: bytes,
    party: str,
    assignment: bytes,
    nonce: bytes,
) -> bytes:
    """Write ``party``'s slot map to ``out`` (anything with a binary ``write``) as its
    ``slots`` come, by blocks (``count`` slots, int64, in the order of its token list),
    padded with -1 to ``most``: a feature blob of one column (:func:`write_feature_blocks`)
    from the server, under ``key``, its associated data binding it to the run, the party and
    the ``assignment``. Returns the SHA-256 of the padded plaintext (the deal carries it)."""
    plain = hashlib.sha256()

    def blocks() -> Iterator[np.ndarray]:
        written = 0
        for block in slots:
            words = np.ascontiguousarray(block, "<i8")
            written += words.size
            if written > count:
                break
            plain.update(words.data)
            yield words.view(np.uint64).reshape(-1, 1)
        if written != count or count > most:
            raise MessageError(f"{written} slots for a slot map of {count} of at most {most}.")
        pad = np.full(min(PACK_WORDS, most - count), -1, "<i8")
        for start in range(count, most, PACK_WORDS):
            piece = pad[: min(PACK_WORDS, most - start)]
            plain.update(piece.data)
            yield piece.view(np.uint64).reshape(-1, 1)

    write_feature_blocks(
        out, key, blocks(), (most, 1), context, SERVER, party, assignment,
        nonce=nonce, round_=SLOT_MAP_ROUND,
    )  # fmt: skip
    return plain.digest()


def open_slot_map(
    key: bytes,
    blob: object,
    context: bytes,
    party: str,
    deal: Deal,
    most: int,
    step: int = SLOT_BLOCK,
) -> Iterator[np.ndarray]:
    """The slots of ``party``'s slot map ``blob`` (read in place, by blocks of ``step``;
    int64, in the order of its token list): the ``deal``'s count of them, each block valid
    until the next is read. After the last, the -1 padding to ``most``, the plaintext's
    SHA-256 (the deal's) and the tag are checked: MessageError or ChannelError then, and a
    caller discards what it made of the blocks."""
    digest, rows = open_feature_blocks(
        key, blob, context, SERVER, party, (most, 1), step, round_=SLOT_MAP_ROUND
    )
    if not hmac.compare_digest(digest, deal.assignment) or deal.slot_count > most:
        raise MessageError(
            f"the slot map of {party!r} is not the one its deal opens: give the server's "
            "NAME.deal-slots of the same deal."
        )
    plain = hashlib.sha256()
    padding = True
    for r0, r1, block in rows:
        words = block.reshape(-1).view(np.int64)
        plain.update(words.data)
        real = max(0, min(r1, deal.slot_count) - r0)
        padding &= bool(np.all(words[real:] == -1))
        if real:
            yield words[:real]
    if not padding or not hmac.compare_digest(plain.digest(), deal.slot_digest):
        raise MessageError(
            f"the slot map of {party!r} does not match its deal (digest or padding): give the "
            "server's NAME.deal-slots of the same deal."
        )


COMMIT_KIND = "vertimrf-secure-commit/1"
MAX_COMMIT_BYTES = 1024


def commit_bytes(config_hash: str, party: str, commitment: bytes) -> bytes:
    """A party's commit message: its data commitment (an HMAC under a key only it holds,
    which reveals nothing of the data) for the run ``config_hash``, as JSON."""
    data = {
        "format": COMMIT_KIND,
        "config_hash": config_hash,
        "party": party,
        "commitment": commitment.hex(),
    }
    return (json.dumps(data, sort_keys=True) + "\n").encode()


def _commit_fields(data: bytes | bytearray | memoryview) -> dict[str, Any] | None:
    """A commit message's fields, or None when it is not one (oversized or malformed)."""
    raw = bytes(data)
    if len(raw) > MAX_COMMIT_BYTES:
        return None
    try:
        fields = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        return None
    want = {"format", "config_hash", "party", "commitment"}
    if not isinstance(fields, dict) or set(fields) != want or fields["format"] != COMMIT_KIND:
        return None
    return fields


def read_commit(data: bytes | bytearray | memoryview, config_hash: str, party: str) -> bytes:
    """The commitment in ``party``'s commit message of the run ``config_hash``
    (MessageError when malformed, oversized, another run's or another party's)."""
    fields = _commit_fields(data)
    if fields is None:
        raise MessageError(f"party {party!r}'s commit message is malformed.")
    if fields["config_hash"] != config_hash or fields["party"] != party:
        raise MessageError(
            f"the commit message from {party!r} is another run's or another party's: give "
            "the one this party made for this run's config."
        )
    try:
        commitment = bytes.fromhex(str(fields["commitment"]))
    except ValueError:
        commitment = b""
    if len(commitment) != DIGEST_BYTES:
        raise MessageError(f"party {party!r}'s commitment is not 32 bytes.")
    return commitment


ADMIT_KIND = "vertimrf-secure-admit/2"
TOKENS_MAGIC = b"VMRFTOK3"  # then the config hash (64 hex), the name, the sealed key and list
# The tokens message's key sealed to the server: version, ephemeral key, nonce, key, tag.
SEALED_KEY_BYTES = 1 + 32 + NONCE_BYTES + 32 + TAG_BYTES


@dataclass(frozen=True)
class Admit:
    """The server's admit message (partial record sets): the ``digest`` every party keys
    its tokens by (its commitments and every role's public key) and the server's public
    key (``server``, raw), which each party seals its tokens message to."""

    digest: bytes
    server: bytes


def admit_bytes(config_hash: str, admit: Admit) -> bytes:
    """The server's admit message for the run ``config_hash``, as JSON (public)."""
    data = {
        "format": ADMIT_KIND,
        "config_hash": config_hash,
        "admit": admit.digest.hex(),
        "server_key": admit.server.hex(),
    }
    return (json.dumps(data, sort_keys=True) + "\n").encode()


def read_admit(data: bytes | bytearray | memoryview, config_hash: str) -> Admit:
    """The admit message of the run ``config_hash`` (MessageError when malformed or
    another run's)."""
    fields: dict[str, Any] = {}
    try:
        raw = bytes(data)
        parsed = json.loads(raw) if len(raw) <= MAX_COMMIT_BYTES else None
        if isinstance(parsed, dict) and set(parsed) == {
            "format", "config_hash", "admit", "server_key"
        }:  # fmt: skip
            fields = parsed
        admit = bytes.fromhex(str(fields["admit"])) if fields else b""
        server = bytes.fromhex(str(fields["server_key"])) if fields else b""
    except (UnicodeDecodeError, ValueError):
        admit = server = b""
    if fields.get("format") != ADMIT_KIND or len(admit) != DIGEST_BYTES or len(server) != 32:
        raise MessageError("the admit message is malformed: take the server's again.")
    if fields["config_hash"] != config_hash:
        raise MessageError(
            f"the admit message belongs to the run {str(fields['config_hash'])[:16]}, not "
            f"this run {config_hash[:16]}: take this run's admit from the server."
        )
    return Admit(admit, server)


def tokens_head(config_hash: str, party: str) -> bytes:
    """The start of ``party``'s tokens message for the server (partial record sets): the
    magic, the run's config hash (64 hex) and the party's name (one length byte, UTF-8).
    The sealed key and the encrypted list follow (:func:`write_tokens`)."""
    name = party.encode("utf-8")
    return TOKENS_MAGIC + config_hash.encode() + len(name).to_bytes(1, "little") + name


def tokens_size(head: bytes, most: int) -> int:
    """The length of every tokens message with ``head`` in a run whose parties have at most
    ``most`` tokens (the plan's public max_tokens): the same whatever a party holds."""
    return len(head) + SEALED_KEY_BYTES + NONCE_BYTES + 8 * (most + 1) + TAG_BYTES


@dataclass(frozen=True)
class TokenSeal:
    """How a party seals its tokens message: the server's public key, and the list's
    ``key``, ``nonce`` and sealing ``randomness``, all from the party's own secret (so that
    no peer can recompute the message's bytes, nor its digest)."""

    server: PublicKey
    key: bytes
    nonce: bytes
    randomness: bytes


def write_tokens(
    out: Any, head: bytes, count: int, most: int, blocks: Iterable[np.ndarray], sealing: TokenSeal
) -> None:
    """Write a tokens message to the binary file ``out``: its ``head`` (:func:`tokens_head`),
    the list's key sealed to the server, then, encrypted under that key (AES-256-GCM, the
    head as associated data), the ``count`` of tokens (uint64, little-endian), the sorted
    tokens given by ``blocks`` and zero words up to ``most`` tokens, so that its length is
    public (:func:`tokens_size`)."""
    out.write(head)
    out.write(seal(sealing.server, sealing.key, head, randomness=sealing.randomness))

    def words() -> Iterator[bytes]:
        yield np.uint64(count).astype("<u8").tobytes()
        written = 0
        for block in blocks:
            yield np.ascontiguousarray(block, "<u8").tobytes()
            written += block.size
        if written != count or count > most:
            raise MessageError(f"a token list of {written} tokens, not {count} of at most {most}.")
        zeros = bytes(8 << 16)
        for start in range(count, most, 1 << 16):
            yield zeros[: 8 * min(1 << 16, most - start)]

    size = 8 * (most + 1)
    encrypt_chunks_to(out, sealing.key, words(), size, head, nonce=sealing.nonce)


def _tokens_parts(data: bytes | bytearray | memoryview, config_hash: str) -> tuple[str, int]:
    """The sender of a tokens message of the run ``config_hash`` and where its sealed key
    starts (MessageError when malformed or another run's)."""
    raw = memoryview(data).cast("B")
    at = len(TOKENS_MAGIC) + len(config_hash)
    if bytes(raw[: len(TOKENS_MAGIC)]) != TOKENS_MAGIC or len(raw) <= at:
        raise MessageError("not a tokens message (from `party tokens`).")
    if bytes(raw[len(TOKENS_MAGIC) : at]) != config_hash.encode():
        other = bytes(raw[len(TOKENS_MAGIC) : at]).decode("ascii", "replace")[:16]
        raise MessageError(
            f"the tokens message belongs to the run {other}, not this run {config_hash[:16]}: "
            "have the party send this run's tokens."
        )
    start = at + 1 + raw[at]
    try:
        sender = bytes(raw[at + 1 : start]).decode("utf-8")
    except UnicodeDecodeError:
        sender = ""
    if not sender or len(raw) < start + SEALED_KEY_BYTES:
        raise MessageError("the tokens message is malformed: have the party send it again.")
    return sender, start


def tokens_sender(data: bytes | bytearray | memoryview, config_hash: str) -> str:
    """The party that a tokens message of the run ``config_hash`` names."""
    return _tokens_parts(data, config_hash)[0]


class TokenList:
    """The token list in ``party``'s tokens message ``data`` of the run ``config_hash``,
    padded to ``most`` tokens, opened with the server's ``keypair`` and read in place
    (MessageError when malformed, another run's or party's, or not of the run's public
    length; ChannelError when it is not sealed to this server or was altered): its ``count``
    and its tokens by blocks (:meth:`blocks`), each pass decrypting and authenticating the
    list again, so that a mapped message is never resident whole."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        config_hash: str,
        party: str,
        most: int,
        keypair: KeyPair,
    ) -> None:
        sender, start = _tokens_parts(data, config_hash)
        if sender != party:
            raise MessageError(f"the tokens message from {party!r} names party {sender!r}.")
        raw = memoryview(data).cast("B")
        if len(raw) != tokens_size(bytes(raw[:start]), most):
            raise MessageError(f"the tokens message is not padded to the run's {most} tokens.")
        self._head = bytes(raw[:start])
        sealed = bytes(raw[start : start + SEALED_KEY_BYTES])
        self._key = open_sealed(keypair, sealed, self._head)
        self._blob = raw[start + SEALED_KEY_BYTES :]
        self._most, self.count = most, 0
        for _ in decrypt_chunks(self._key, self._blob, self._head, 8 * PACK_WORDS):
            pass  # the tag first: an altered list is refused as such, before it is read
        for _ in self.blocks(PACK_WORDS):  # the count and the padding, checked once
            pass

    def blocks(self, step: int) -> Iterator[np.ndarray]:
        """The tokens (uint64, as sent: sorted), by blocks of at most ``step``, each a copy;
        the padding and the tag are checked once the last is read."""
        step, at, count = max(1, step), 0, -1
        read = ReadOnce(self._blob)
        for piece in decrypt_chunks(self._key, self._blob, self._head, 8 * step):
            words = np.frombuffer(piece, "<u8")
            if count < 0:
                count = int(words[0])
                if count > self._most:
                    raise MessageError(
                        "the tokens message is malformed: have the party send it again."
                    )
                self.count = count
            lo, hi = max(at, 1), min(at + words.size, count + 1)
            if hi > lo:
                yield words[lo - at : hi - at].astype(np.uint64)
            if np.any(words[max(0, count + 1 - at) :]):
                raise MessageError("the tokens message is malformed: have the party send it again.")
            at += words.size
            read.done(NONCE_BYTES + 8 * at)


def read_tokens(
    data: bytes | bytearray | memoryview,
    config_hash: str,
    party: str,
    most: int,
    keypair: KeyPair,
) -> np.ndarray:
    """The token list of :class:`TokenList`, whole."""
    tokens = TokenList(data, config_hash, party, most, keypair)
    return np.concatenate([np.empty(0, np.uint64), *tokens.blocks(PACK_WORDS)])


def commit_sender(data: bytes | bytearray | memoryview, config_hash: str) -> str:
    """The party that a commit message of the run ``config_hash`` names (the message
    checked as :func:`read_commit` does)."""
    fields = _commit_fields(data)
    if fields is None or not isinstance(fields["party"], str):
        raise MessageError("not a commit message (from `party commit`).")
    read_commit(data, config_hash, fields["party"])
    return fields["party"]


def commit_set_digest(commitments: dict[str, bytes], names: Iterable[str]) -> bytes:
    """The digest of every party's commitment, in the order of ``names``: what binds a
    deal to every party's data (it changes when any party's data does)."""
    h = hashlib.sha256(b"vertimrf/commit-set")
    for name in names:
        h.update(len(name.encode()).to_bytes(8, "little") + name.encode() + commitments[name])
    return h.digest()


def group_deal_aad(context: bytes, party: str, request: str) -> bytes:
    """Associated data of the round-2 deal for ``party`` in the run ``context``, made for
    the request of digest ``request`` (it opens with that request only)."""
    return b"/".join((context, b"secure-group-deal", party.encode("utf-8"), request.encode()))


@dataclass(frozen=True)
class GroupDeal:
    """One party's round-2 randomness, for the groups of the request (secret from everyone
    else): the seed of its fresh mask toward each peer; where it is the lower party of a
    pair that grows, the seed of that pair's W (its blocks A and B); where it is the higher
    one, Z_A = U2_p^T [V_q | V2_q] - W_A and Z_B = U_p^T V2_q - W_B."""

    seeds_u: dict[str, bytes] = field(default_factory=dict)
    seeds_w: dict[str, bytes] = field(default_factory=dict)
    z_a: dict[str, np.ndarray] = field(default_factory=dict)
    z_b: dict[str, np.ndarray] = field(default_factory=dict)

    def seal(
        self,
        recipient: PublicKey,
        context: bytes,
        request: str,
        *,
        randomness: bytes | None = None,
    ) -> bytes:
        """The deal encrypted to ``recipient`` for this run and the request of digest
        ``request``."""
        arrays = {f"u/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_u.items()}
        arrays.update({f"w/{k}": np.frombuffer(v, np.uint8) for k, v in self.seeds_w.items()})
        for name, z in (("a", self.z_a), ("b", self.z_b)):
            arrays.update({f"{name}/{k}": np.ascontiguousarray(v, np.uint64) for k, v in z.items()})
        aad = group_deal_aad(context, recipient.name, request)
        return seal(recipient, npz_bytes(arrays), aad, randomness=randomness)

    @classmethod
    def open(cls, blob: bytes, keypair: KeyPair, context: bytes, request: str) -> GroupDeal:
        """Open a round-2 deal sealed to ``keypair`` for this run and the request of digest
        ``request`` (MessageError when it was made for another request or is not this
        party's)."""
        aad = group_deal_aad(context, keypair.name, request)
        try:
            plain = open_sealed(keypair, blob, aad)
        except ChannelError:
            raise MessageError(
                "the round-2 deal does not open for this request: it was made for another "
                "request, or for another party or run; use the round-2 deal the server made "
                "with this request."
            ) from None
        arrays = _unpack(plain, "the round-2 deal")
        parts: dict[str, dict] = {"u": {}, "w": {}, "a": {}, "b": {}}
        for key, value in arrays.items():
            kind, _, peer = key.partition("/")
            if kind not in parts or not peer:
                raise MessageError(f"the round-2 deal holds an unknown entry {key!r}.")
            parts[kind][peer] = value.tobytes() if kind in "uw" else value.astype(np.uint64)
        if any(len(v) != SEED_BYTES for k in "uw" for v in parts[k].values()):
            raise MessageError("the round-2 deal's seeds are not 32 bytes.")
        return cls(parts["u"], parts["w"], parts["a"], parts["b"])


def feature_aad(
    context: bytes, sender: str, receiver: str, digest: bytes, round_: int = 1
) -> bytes:
    """Associated data of ``sender``'s masked features of round ``round_`` for
    ``receiver`` in this run."""
    what = {SLOT_MAP_ROUND: b"/secure-slot-map/", 1: b"/secure-features/"}.get(
        round_, b"/secure-groups/"
    )
    return b"".join((context, what, sender.encode(), b"->", receiver.encode(), b"/", digest))


def seal_features(
    key: bytes,
    features: np.ndarray,
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
) -> bytearray:
    """``sender``'s masked features X - U (ring words, uint32 or uint64) of round
    ``round_`` as a blob only ``receiver`` can open: the digest, then the ciphertext of
    each value's low ``word_bytes`` bytes, little-endian (default: the whole word, i.e. a
    ring of 2^(8 word_bytes)), encrypted straight from the array in blocks (no copy of a
    multi-GB matrix). ``nonce``: see :func:`vertimrf.crypto.aead.encrypt_buffer`."""
    if features.dtype not in (np.uint32, np.uint64):
        raise MessageError(f"masked features are ring words, not {features.dtype}.")
    body = np.ascontiguousarray(features).reshape(1, -1)  # one row: an empty one casts too
    return seal_feature_blocks(
        key, [body], body.shape, context, sender, receiver, digest,
        word=body.dtype.type, nonce=nonce, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip


def seal_feature_blocks(
    key: bytes,
    blocks: Iterable[np.ndarray],
    shape: tuple[int, int],
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    word: type = np.uint64,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
) -> bytearray:
    """:func:`seal_features` of the ``shape`` matrix of ``word``s given as consecutive
    ``blocks`` of whole rows: each is packed and encrypted as it comes, so the matrix never
    exists at once. The same bytes as :func:`seal_features` of the rows stacked."""
    out = BufferWriter(feature_blob_bytes(shape, word, word_bytes))
    write_feature_blocks(
        out, key, blocks, shape, context, sender, receiver, digest,
        word=word, nonce=nonce, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip
    return out.result()


def write_feature_blocks(
    out: Any,
    key: bytes,
    blocks: Iterable[np.ndarray],
    shape: tuple[int, int],
    context: bytes,
    sender: str,
    receiver: str,
    digest: bytes,
    *,
    word: type = np.uint64,
    nonce: bytes | None = None,
    round_: int = 1,
    word_bytes: int | None = None,
) -> None:
    """The bytes of :func:`seal_feature_blocks`, written to ``out`` (anything with a binary
    ``write``, e.g. a file) as they are made: the blob never exists whole either (its
    length is :func:`feature_blob_bytes`)."""
    size = _word_bytes(np.dtype(word).newbyteorder("<"), word_bytes)
    aad = feature_aad(context, sender, receiver, digest, round_)
    chunks = _packed_rows(blocks, shape[1], np.dtype(word), size)
    encrypt_chunks_to(out, key, chunks, shape[0] * shape[1] * size, aad, digest, nonce=nonce)


def feature_blob_bytes(shape: tuple[int, int], word: type, word_bytes: int | None = None) -> int:
    """The length of a feature blob of a ``shape`` matrix of ``word``s (see
    :func:`seal_features`)."""
    size = _word_bytes(np.dtype(word), word_bytes)
    return DIGEST_BYTES + NONCE_BYTES + shape[0] * shape[1] * size + TAG_BYTES


def _packed_rows(
    blocks: Iterable[np.ndarray], width: int, word: np.dtype, size: int
) -> Iterator[np.ndarray]:
    """The packed values of row ``blocks``, each checked to be ``width`` ``word``s wide."""
    for block in blocks:
        if block.dtype != word or block.ndim != 2 or block.shape[1] != width:
            raise MessageError(
                f"a block of masked features is {block.dtype} {block.shape}, not rows of "
                f"{width} {word} values."
            )
        yield from _packed(np.ascontiguousarray(block).reshape(-1), size)


def _word_bytes(word: np.dtype, word_bytes: int | None) -> int:
    if word_bytes is None:
        return word.itemsize
    if not 1 <= word_bytes <= word.itemsize:
        raise MessageError(f"a {word} value has 1 to {word.itemsize} bytes, not {word_bytes}.")
    return word_bytes


def _packed(body: np.ndarray, size: int) -> Iterator[np.ndarray]:
    """The low ``size`` bytes of each value of ``body``, little-endian, in blocks."""
    little = body.dtype.newbyteorder("<")
    for start in range(0, body.size, PACK_WORDS):
        block = body[start : start + PACK_WORDS].astype(little, copy=False)
        yield np.ascontiguousarray(block.view(np.uint8).reshape(-1, body.dtype.itemsize)[:, :size])


def block_rows(width: int) -> int:
    """Rows per block of a feature blob ``width`` values wide, streamed in or out: whole
    rows, about ROW_BLOCK_WORDS values (public: it depends on the width alone)."""
    return max(1, ROW_BLOCK_WORDS // max(1, width))


def open_feature_blocks(
    key: bytes,
    blob: object,
    context: bytes,
    sender: str,
    receiver: str,
    shape: tuple[int, int],
    step: int,
    *,
    word: type = np.uint64,
    round_: int = 1,
    word_bytes: int | None = None,
    hasher: Any = None,
) -> tuple[bytes, Iterator[tuple[int, int, np.ndarray]]]:
    """The sender's record-set digest in ``blob`` and an iterator of its masked features
    (see :func:`open_features`) by blocks of ``step`` whole rows: (r0, r1, rows r0:r1 as
    ``word``s), each valid until the next is read. The size is checked at once; the GCM
    tag only when the iteration ends, which raises ChannelError when the blob is not
    ``sender``'s for ``receiver`` in this run: a caller must discard everything it made of
    the blocks unless the iteration finished. ``hasher`` (a hashlib object) is fed the
    blob's bytes as they are read: once the iteration ends, it holds the whole blob."""
    try:
        view = memoryview(blob).cast("B")  # type: ignore[arg-type]
    except TypeError:
        raise ChannelError(f"the feature blob from {sender!r} is not bytes.") from None
    if len(view) < DIGEST_BYTES:
        raise ChannelError(f"the feature blob from {sender!r} is truncated.")
    digest = bytes(view[:DIGEST_BYTES])
    body = view[DIGEST_BYTES:]
    size = len(body) - NONCE_BYTES - TAG_BYTES
    little = np.dtype(word).newbyteorder("<")
    each = _word_bytes(little, word_bytes)
    rows, width = shape
    want = each * rows * width
    if size != want:
        if size < 0:
            raise ChannelError(f"the feature blob from {sender!r} is truncated.")
        raise MessageError(
            f"the feature blob from {sender!r} holds {size} bytes, not the "
            f"{want} of a {rows} x {width} matrix."
        )
    aad = feature_aad(context, sender, receiver, digest, round_)
    if hasher is not None:
        hasher.update(digest)
    blocks = _blocks(key, body, aad, rows, width, max(1, step), little, each, word, hasher)
    return digest, blocks


def blob_nonce(blob: object) -> bytes:
    """The nonce of a feature blob (public, in its header): a PRF of everything its
    plaintext depends on (see the party's sealing)."""
    view = memoryview(blob).cast("B")  # type: ignore[arg-type]
    if len(view) < DIGEST_BYTES + NONCE_BYTES:
        raise ChannelError("the feature blob is truncated.")
    return bytes(view[DIGEST_BYTES : DIGEST_BYTES + NONCE_BYTES])


def _blocks(
    key: bytes,
    body: memoryview,
    aad: bytes,
    rows: int,
    width: int,
    step: int,
    little: np.dtype,
    each: int,
    word: type,
    hasher: Any = None,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """The row blocks of :func:`open_feature_blocks` (the tag checked after the last)."""
    pieces = decrypt_chunks(key, body, aad, max(1, step * width * each), hasher)
    out = np.zeros((min(step, rows), width), little)
    cells = out.reshape(-1).view(np.uint8).reshape(-1, little.itemsize)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        count = (r1 - r0) * width
        if count:
            piece = next(pieces)
            cells[:count, :each] = np.frombuffer(piece, np.uint8).reshape(count, each)
        yield r0, r1, out[: r1 - r0].astype(word, copy=False)
    for _ in pieces:  # runs to the end: the tag is checked here
        raise ChannelError("the feature blob holds more than its rows.")


def open_features(
    key: bytes,
    blob: object,
    context: bytes,
    sender: str,
    receiver: str,
    shape: tuple[int, int],
    *,
    word: type = np.uint64,
    round_: int = 1,
    word_bytes: int | None = None,
) -> tuple[np.ndarray, bytes]:
    """The masked features (``word``s; the blob holds each one's low ``word_bytes`` bytes,
    see :func:`seal_features`) of round ``round_`` in ``blob`` (bytes or any bytes-like,
    e.g. a memoryview of a mapped file: read in place) and the sender's record-set digest,
    as one array (:func:`open_feature_blocks` reads them by row blocks).

    Raises ChannelError when the blob is not ``sender``'s for ``receiver`` in this run
    (foreign, replayed from another run, or altered).
    """
    digest, blocks = open_feature_blocks(
        key, blob, context, sender, receiver, shape, block_rows(shape[1]),
        word=word, round_=round_, word_bytes=word_bytes,
    )  # fmt: skip
    out: np.ndarray = np.empty(shape, word)
    for r0, r1, block in blocks:
        out[r0:r1] = block
    return out, digest


@dataclass(frozen=True)
class SecureRelease:
    """One party's release: noisy own marginals (int64), padded noisy shares (uint64, one
    flat vector per product in the plan's block order), the noisy count, if any, the noisy
    fine histograms of its numeric columns by name (int64; the re-measurement's, when the
    plan has them), the DP quantile cuts of its columns cut at quantiles (the first
    release's) and ``seeded``: whether the party's noise came from a seed (then no DP
    guarantee holds)."""

    party: str
    release: str
    config_hash: str
    digest: str
    within: dict[tuple[int, ...], np.ndarray]
    cross: dict[str, np.ndarray]
    count: int | None = None
    commit_set: str = ""  # hex digest of the commitments the party's deal was made for
    seeded: bool = field(kw_only=True)
    fine: dict[str, np.ndarray] = field(default_factory=dict, kw_only=True)
    cuts: dict[str, list[float]] = field(default_factory=dict, kw_only=True)

    def fingerprint(self) -> str:
        """SHA-256 of everything the release holds (what the server's keyed noise of a step
        depends on: the same releases give the same noise)."""
        h = hashlib.sha256()
        head = [
            self.party, self.release, self.config_hash, self.digest, self.count,
            self.commit_set, self.seeded, *([self.cuts] if self.cuts else []),
        ]  # fmt: skip
        h.update(json.dumps(head).encode())
        for m in sorted(self.within):
            h.update(json.dumps(list(m)).encode())
            h.update(np.ascontiguousarray(self.within[m], "<i8").tobytes())
        for k in sorted(self.cross):
            h.update(k.encode())
            h.update(np.ascontiguousarray(self.cross[k], "<u8").tobytes())
        for k in sorted(self.fine):
            h.update(json.dumps(["fine", k]).encode())
            h.update(np.ascontiguousarray(self.fine[k], "<i8").tobytes())
        return h.hexdigest()

    def save(self, path: Target) -> None:
        """Write the release (public metadata, DP values and masked values) atomically, or
        into a binary file object."""
        marginals = list(self.within)
        meta: dict[str, Any] = {
            "party": self.party,
            "release": self.release,
            "config_hash": self.config_hash,
            "digest": self.digest,
            "within": [list(m) for m in marginals],
            "count": self.count,
            "commit_set": self.commit_set,
            "seeded": self.seeded,
        }
        fine = list(self.fine)
        if fine:
            meta["fine"] = fine
        if self.cuts:
            meta["cuts"] = {k: [float(v) for v in c] for k, c in self.cuts.items()}
        arrays = {f"w{i}": np.asarray(self.within[m], np.int64) for i, m in enumerate(marginals)}
        arrays.update({f"x/{k}": np.asarray(v, np.uint64) for k, v in self.cross.items()})
        arrays.update({f"f{i}": np.asarray(self.fine[k], np.int64) for i, k in enumerate(fine)})
        write_container(path, RELEASE_KIND, meta, arrays)

    @classmethod
    def load(cls, path: Target, plan: SecurePlan) -> SecureRelease:
        """Read a release with every array bounded by the plan's shapes (MessageError on a
        malformed, oversized or foreign file)."""
        own = max(math.prod(plan.sizes[a] for a in attrs) for attrs in plan.attrs)
        within_bytes = 8 * min(own, MAX_WITHIN_CELLS)
        pairs = {plan.pair_name(p, q): 8 * plan.max_cells(p, q) for p, q in plan.pairs()}

        fine_bytes = 8 * max((cells for _, _, cells, _ in plan.fine), default=0)

        def bound(name: str) -> int | None:
            if name.startswith("x/"):
                return pairs.get(name[2:])
            if name.startswith("f"):
                return fine_bytes or None
            return within_bytes if name.startswith("w") else None

        meta, arrays = read_container(path, RELEASE_KIND, array_bytes=bound)
        try:
            within = {
                tuple(int(a) for a in m): arrays[f"w{i}"].astype(np.int64)
                for i, m in enumerate(meta["within"])
            }
            cross = {k[2:]: v.astype(np.uint64) for k, v in arrays.items() if k.startswith("x/")}
            fine = {
                str(k): arrays[f"f{i}"].astype(np.int64) for i, k in enumerate(meta.get("fine", []))
            }
            count = meta["count"]
            if count is not None and not isinstance(count, int):
                raise TypeError("count")
            if not isinstance(meta.get("seeded"), bool):
                raise MessageError(
                    f"{source_name(path)}: the secure release does not say whether its noise "
                    "was seeded (a 'seeded' of true or false); re-create it with this vertimrf."
                )
            return cls(
                str(meta["party"]),
                str(meta["release"]),
                str(meta["config_hash"]),
                str(meta["digest"]),
                within,
                cross,
                count,
                str(meta["commit_set"]),
                seeded=meta["seeded"],
                fine=fine,
                cuts={str(k): [float(v) for v in c] for k, c in meta.get("cuts", {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            where = source_name(path)
            raise MessageError(f"{where}: malformed secure release ({exc!r}).") from None


def save_request(path: str | os.PathLike, config_hash: str, request: Request) -> None:
    """Write the server's re-measurement request for the run ``config_hash`` (atomically)."""
    atomic_write_text(path, request_text(config_hash, request))


def request_text(config_hash: str, request: Request) -> str:
    """The request's JSON text: the marginals, and the bin maps of the binned ones as
    [position, maps] pairs."""
    position = {m: i for i, m in enumerate(request.marginals)}
    data = {
        "config_hash": config_hash,
        "marginals": [[int(a) for a in m] for m in request.marginals],
        "bins": [
            [position[m], [None if b is None else list(b) for b in maps]]
            for m, maps in request.bins.items()
        ],
    }
    return json.dumps(data) + "\n"


def load_request(path: str | os.PathLike, plan: SecurePlan, config_hash: str) -> Request:
    """The request in a file, checked against this run: MessageError when the file is
    oversized, malformed, of another run, or asks for marginals or bins the plan cannot
    measure."""
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise MessageError(f"{path}: cannot read the request ({exc.strerror or exc}).") from None
    if size > MAX_REQUEST_BYTES:
        raise MessageError(f"{path}: {size:,} bytes is too large for a request.")
    return parse_request(read_json(path, MessageError, "request"), plan, config_hash, str(path))


def parse_request(data: object, plan: SecurePlan, config_hash: str, path: str) -> Request:
    """A request's parsed JSON ``data`` (read from ``path``, which errors name), checked
    against this run as :func:`load_request` says."""
    if not isinstance(data, dict) or set(data) != {"config_hash", "marginals", "bins"}:
        raise MessageError(
            f'{path}: a request is {{"config_hash": ..., "marginals": [...], "bins": [...]}}.'
        )
    if data["config_hash"] != config_hash:
        raise MessageError(
            f"{path}: the request belongs to another run (config hash "
            f"{str(data['config_hash'])[:12]}, this run {config_hash[:12]}): a replayed or "
            "foreign request."
        )
    raw = data["marginals"]
    if not isinstance(raw, list) or not all(
        isinstance(m, list) and all(isinstance(a, int) and not isinstance(a, bool) for a in m)
        for m in raw
    ):
        raise MessageError(f"{path}: the request's marginals must be lists of attribute indices.")
    bins = data["bins"]
    if (
        not isinstance(bins, list)
        or not all(
            isinstance(e, list)
            and len(e) == 2
            and isinstance(e[0], int)
            and not isinstance(e[0], bool)
            and 0 <= e[0] < len(raw)
            for e in bins
        )
        or len({e[0] for e in bins}) != len(bins)
    ):
        raise MessageError(
            f"{path}: the request's bins must be [position, maps] pairs, one per position."
        )
    try:
        return plan.check_request(
            [tuple(m) for m in raw], {tuple(raw[i]): maps for i, maps in bins}
        )
    except MessageError as exc:
        raise MessageError(f"{path}: {exc}") from None
