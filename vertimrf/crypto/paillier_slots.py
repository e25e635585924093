"""Packed Paillier slots: one-hot rows encrypted many columns a ciphertext, summed by value
of a peer's attribute, masked and decrypted to additive shares (docs/design/crypto.md)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import gmpy2
import numpy as np

from vertimrf.crypto.paillier import PrivateKey, PublicKey, encrypt_unchecked
from vertimrf.crypto.prg import expand
from vertimrf.errors import ConfigError

KAPPA = 40  # statistical masking bits: a share is within 2^-KAPPA of independent of the count
_MASK_LABEL = b"paillier-slot-masks"
JOINT_CELLS = 4096  # the most joint values of a run of the aggregator's attributes


@dataclass(frozen=True)
class SlotLayout:
    """Slots of ``count_bits + kappa + 1`` bits: a count below 2^count_bits plus a mask
    below 2^(count_bits + kappa) never carries into the next slot; ``key_bits - 2`` bits of
    slots a ciphertext, so every packed plaintext lies below n."""

    count_bits: int
    key_bits: int
    kappa: int = KAPPA

    def __post_init__(self) -> None:
        if self.count_bits < 1 or self.count_bits + self.kappa > 64:
            raise ConfigError(
                f"a Paillier slot needs 1 <= count bits and count bits + kappa <= 64; got "
                f"{self.count_bits} + {self.kappa}: lower max_rows."
            )
        if self.slots < 1:
            raise ConfigError(
                f"a {self.key_bits}-bit Paillier key holds no slot of {self.slot_bits} bits."
            )

    @classmethod
    def for_rows(cls, max_rows: int, key_bits: int, kappa: int = KAPPA) -> SlotLayout:
        """The layout whose counts hold up to ``max_rows`` (a public bound)."""
        return cls(max(1, int(max_rows).bit_length()), key_bits, kappa)

    @property
    def slot_bits(self) -> int:
        return self.count_bits + self.kappa + 1

    @property
    def slots(self) -> int:
        """Slots a ciphertext."""
        return (self.key_bits - 2) // self.slot_bits

    @property
    def mask_bits(self) -> int:
        return self.count_bits + self.kappa

    def per_row(self, width: int) -> int:
        """Ciphertexts a row of a ``width``-column one-hot block takes."""
        return max(1, math.ceil(width / self.slots))

    def shift(self, slot: int) -> gmpy2.mpz:
        return gmpy2.mpz(1) << (self.slot_bits * slot)


def _table(cols: np.ndarray) -> np.ndarray:
    """One-hot columns as rows x attributes int64 (a vector is one attribute)."""
    out = np.asarray(cols, dtype=np.int64)
    return out[:, None] if out.ndim == 1 else out


def encrypt_onehot(
    public: PublicKey,
    layout: SlotLayout,
    cols: np.ndarray,
    width: int,
    randomisers: Sequence[gmpy2.mpz],
) -> list[gmpy2.mpz]:
    """Each row's one-hot block (``cols``: rows x attributes of column numbers in
    [0, ``width``), -1 for none) packed in ``layout.per_row(width)`` ciphertexts, row by row:
    column c is slot c mod slots of the row's ciphertext c // slots. ``randomisers``: one
    per ciphertext (:func:`~vertimrf.crypto.paillier.randomisers`)."""
    per = layout.per_row(width)
    cols = _table(cols)
    if len(randomisers) != len(cols) * per:
        raise ConfigError(
            f"{len(cols)} rows need {len(cols) * per} randomisers; got {len(randomisers)}."
        )
    if cols.size and (cols.max() >= width or cols.min() < -1):
        raise ConfigError(f"one-hot columns must lie in [-1, {width}).")
    shifts = [layout.shift(s) for s in range(layout.slots)]
    n, n2 = public.n, public.n2
    out: list[gmpy2.mpz] = []
    for i, row in enumerate(cols.tolist()):
        plain = [gmpy2.mpz(0)] * per
        for c in row:
            if c >= 0:
                j, s = divmod(c, layout.slots)
                plain[j] += shifts[s]
        # Every packed plaintext lies below 2^(key bits - 2) < n (the layout's slots).
        out.extend(
            encrypt_unchecked(n, n2, m, randomisers[i * per + j]) for j, m in enumerate(plain)
        )
    return out


def aggregate(
    public: PublicKey,
    cts: Sequence[gmpy2.mpz],
    per_row: int,
    cols: np.ndarray,
    width: int,
    acc: list[gmpy2.mpz] | None = None,
) -> list[gmpy2.mpz]:
    """The peer's row ciphertexts ``cts`` (``per_row`` a row) multiplied into the
    accumulator of each of the row's own columns (``cols``: rows x attributes in
    [0, ``width``), -1 for none): accumulator (v, j) encrypts slot by slot the cross counts
    of column v against the peer's columns of its ciphertext j. Flat, v-major; ``acc``: the
    accumulators of earlier rows, updated in place (fresh ones, encryptions of 0, if None)."""
    cols = _table(cols)
    if len(cts) != len(cols) * per_row:
        raise ConfigError(
            f"{len(cols)} rows need {len(cols) * per_row} ciphertexts; got {len(cts)}."
        )
    n2 = public.n2
    if acc is None:
        acc = [gmpy2.mpz(1)] * (width * per_row)
    elif len(acc) != width * per_row:
        raise ConfigError(f"{width} x {per_row} accumulators expected; got {len(acc)}.")
    for i, row in enumerate(cols.tolist()):
        base = i * per_row
        for v in row:
            if v >= 0:
                at = v * per_row
                for j in range(per_row):
                    acc[at + j] = acc[at + j] * cts[base + j] % n2
    return acc


def joint_blocks(sizes: Sequence[int], limit: int = JOINT_CELLS) -> list[list[int]]:
    """The aggregator's attributes (``sizes``: values of each) in runs whose joint domain,
    each attribute with an extra "absent" value, is at most ``limit`` cells (an attribute
    larger than that alone is a run of its own)."""
    blocks: list[list[int]] = []
    run: list[int] = []
    cells = 1
    for a, size in enumerate(sizes):
        if run and cells * (size + 1) > limit:
            blocks.append(run)
            run, cells = [], 1
        run.append(a)
        cells *= size + 1
    return [*blocks, run] if run else blocks


class JointBuckets:
    """:func:`aggregate`'s accumulators with fewer products, by :func:`aggregate` twice.
    Each row's ciphertexts go into one bucket per joint value of each run of
    :func:`joint_blocks` (one product a row, run and ciphertext; :meth:`add`, block by block
    of rows); then each attribute's accumulators are products of buckets, once for all rows
    (:meth:`accumulators`, every bucket, so the time depends on public sizes only). Products
    mod n^2 commute, so the accumulators are the same integers. A row's columns: attribute
    a's value v as column offset_a + v (offsets: the running sum of ``sizes``), -1 for
    absent."""

    def __init__(
        self, public: PublicKey, per_row: int, sizes: Sequence[int], limit: int = JOINT_CELLS
    ) -> None:
        self.public, self.per_row, self.sizes = public, per_row, list(sizes)
        self.offsets = np.cumsum([0, *self.sizes[:-1]]).astype(np.int64)
        self.runs = joint_blocks(self.sizes, limit)
        # Each run's strides (C order, an "absent" value first) and its cells' columns.
        self.strides: list[np.ndarray] = []
        self.cell_columns: list[np.ndarray] = []
        for run in self.runs:
            radix = np.asarray([self.sizes[a] + 1 for a in run], dtype=np.int64)
            strides = np.concatenate([[1], np.cumprod(radix[:-1])]).astype(np.int64)
            codes = np.arange(int(np.prod(radix)))[:, None] // strides % radix
            self.strides.append(strides)
            self.cell_columns.append(np.where(codes > 0, codes - 1 + self.offsets[run], -1))
        self.buckets = [[gmpy2.mpz(1)] * (len(c) * per_row) for c in self.cell_columns]

    def add(self, cts: Sequence[gmpy2.mpz], cols: np.ndarray) -> None:
        """Rows' ciphertexts ``cts`` (``per_row`` a row) into the buckets of their
        ``cols`` (rows x attributes)."""
        cols = _table(cols)
        if cols.shape[1] != len(self.sizes):
            raise ConfigError(
                f"rows of {cols.shape[1]} attributes; the aggregator has {len(self.sizes)}."
            )
        codes = np.where(cols >= 0, cols - self.offsets + 1, 0)  # 0: absent, v + 1: value v
        top = np.asarray(self.sizes, np.int64)
        if (cols < -1).any() or (codes < 0).any() or (codes > top).any():
            raise ConfigError("an aggregator's column lies outside its attribute's values.")
        for run, strides, buckets in zip(self.runs, self.strides, self.buckets, strict=True):
            joint = (codes[:, run] * strides).sum(axis=1)
            aggregate(self.public, cts, self.per_row, joint, len(buckets) // self.per_row, buckets)

    def accumulators(self, acc: list[gmpy2.mpz] | None = None) -> list[gmpy2.mpz]:
        """The accumulators (v-major, sum(sizes) x per_row) of every row added, multiplied
        into ``acc`` (fresh ones, encryptions of 0, if None)."""
        width = sum(self.sizes)
        for cells, buckets in zip(self.cell_columns, self.buckets, strict=True):
            acc = aggregate(self.public, buckets, self.per_row, cells, width, acc)
        return [gmpy2.mpz(1)] * (width * self.per_row) if acc is None else acc


def aggregate_joint(
    public: PublicKey,
    cts: Sequence[gmpy2.mpz],
    per_row: int,
    cols: np.ndarray,
    sizes: Sequence[int],
    acc: list[gmpy2.mpz] | None = None,
    limit: int = JOINT_CELLS,
) -> list[gmpy2.mpz]:
    """:func:`aggregate` by :class:`JointBuckets` for one block of rows: the same
    accumulators, multiplied into ``acc`` (fresh ones if None)."""
    buckets = JointBuckets(public, per_row, sizes, limit)
    buckets.add(cts, cols)
    return buckets.accumulators(acc)


def draw_masks(layout: SlotLayout, key: bytes, shape: tuple[int, int]) -> np.ndarray:
    """Masks uniform in [0, 2^mask_bits), one a cell of ``shape`` (the aggregator's columns
    x the encrypter's), from the stream of ``key`` (32 bytes, from the key schedule)."""
    words = expand(key, _MASK_LABEL, shape[0] * shape[1])
    return (words & np.uint64((1 << layout.mask_bits) - 1)).reshape(shape)


def mask(
    public: PublicKey,
    layout: SlotLayout,
    acc: Sequence[gmpy2.mpz],
    masks: np.ndarray,
    randomisers: Sequence[gmpy2.mpz],
) -> list[gmpy2.mpz]:
    """Each accumulator times an encryption of its cells' masks (``masks``: aggregator's
    columns x encrypter's, packed as :func:`encrypt_onehot` packs) and a fresh randomiser,
    so that its decryption is count + mask and its randomness is independent of the rows."""
    width_g, width_e = masks.shape
    per = layout.per_row(width_e)
    if len(acc) != width_g * per or len(randomisers) != len(acc):
        raise ConfigError(f"{width_g} x {per} accumulators need as many randomisers.")
    n, n2, step = public.n, public.n2, layout.slots
    out = []
    for v in range(width_g):
        row = masks[v].tolist()
        for j in range(per):
            m = gmpy2.mpz(0)
            for s, value in enumerate(row[j * step : (j + 1) * step]):
                m += gmpy2.mpz(value) << (layout.slot_bits * s)
            at = v * per + j
            out.append(acc[at] * encrypt_unchecked(n, n2, m, randomisers[at]) % n2)
    return out


def decrypt_shares(
    private: PrivateKey, layout: SlotLayout, masked: Sequence[gmpy2.mpz], shape: tuple[int, int]
) -> np.ndarray:
    """The encrypter's shares (count + mask mod 2^64, uint64, ``shape``: the aggregator's
    columns x the encrypter's) of the masked accumulators."""
    width_g, width_e = shape
    per = layout.per_row(width_e)
    if len(masked) != width_g * per:
        raise ConfigError(f"{width_g} x {per} masked accumulators expected; got {len(masked)}.")
    out = np.zeros(shape, dtype=np.uint64)
    slot_mask, word = (1 << layout.slot_bits) - 1, (1 << 64) - 1
    for at, c in enumerate(masked):
        v, j = divmod(at, per)
        m = int(private.decrypt(c))
        for s in range(min(layout.slots, width_e - j * layout.slots)):
            out[v, j * layout.slots + s] = (m >> (layout.slot_bits * s)) & slot_mask & word
    return out


def aggregator_shares(masks: np.ndarray) -> np.ndarray:
    """The aggregator's shares: -mask mod 2^64, so the two shares sum to the count."""
    return np.uint64(0) - masks.astype(np.uint64)
