"""The dealer-free cross product of one pair by packed Paillier (docs/design/protocol.md):
no third role deals anything, so a server colluding with one party holds nothing that opens
the other's rows. The config's ``product`` "paillier": its dealing part is
:class:`PaillierDealing` (nothing), its parties' steps :mod:`vertimrf.party.secure.paillier`.

The encrypter E (:func:`~vertimrf.protocol.secure.paillier.encrypter`) encrypts its rows
under its own key; the aggregator G multiplies them into one accumulator a value of its own,
masks every slot, re-randomises and replies; E decrypts. E's share is count + mask, G's is
-mask (mod 2^64). Coins ride the same way: the coin bits are rows, a cell a column
(:func:`coin_rows`). Every randomiser and mask is keyed by the run's key schedule
(:func:`stream_key`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import gmpy2
import numpy as np

from vertimrf.crypto.paillier import (
    EXPONENT_BITS,
    KEY_BITS,
    Powers,
    PrivateKey,
    PublicKey,
    ciphertexts_from_bytes,
    ciphertexts_to_bytes,
    generate,
    randomisers,
    stream_bits,
)
from vertimrf.crypto.paillier_slots import (
    JointBuckets,
    SlotLayout,
    aggregator_shares,
    decrypt_shares,
    draw_masks,
    encrypt_onehot,
    mask,
)
from vertimrf.crypto.schedule import derive
from vertimrf.errors import ConfigError, MessageError
from vertimrf.protocol.secure.paillier import subset_bits
from vertimrf.protocol.secure.plan import Layout, SecurePlan
from vertimrf.protocol.secure.product import Pair

KEY = "paillier-key"
RANDOMISERS = "paillier-randomisers"
MASKS = "paillier-masks"
MASK_START = 1 << 40  # the reply's randomisers start here in the masks' exponent stream


def reply_bits(layout: SlotLayout) -> int:
    """Bits of a reply's re-randomising exponent: an accumulator's exponent is a sum of
    fewer than 2^count_bits of E's, which E knows; one kappa bits wider hides it."""
    return EXPONENT_BITS + layout.mask_bits


# E's rows of one block: (r0, r1, the ciphertext bytes of rows r0:r1).
Blocks = Iterable[tuple[int, int, bytes]]
# E's randomisers start:start + count, made or read.
Randomisers = Callable[[int, int], list[gmpy2.mpz]]


def stream_key(secret: bytes, stream: str, *inputs: bytes | str) -> bytes:
    """The key of a Paillier stream (KEY, RANDOMISERS or MASKS) under a role's ``secret``,
    bound to every input of the step (the run's key schedule)."""
    if stream not in (KEY, RANDOMISERS, MASKS):
        raise ConfigError(f"{stream!r} is not a Paillier stream.")
    return derive(secret, stream, *inputs)


def run_key(secret: bytes, *inputs: bytes | str, bits: int = KEY_BITS) -> PrivateKey:
    """E's Paillier key for one run and pair, made from its stream KEY bound to ``inputs``:
    fresh for any changed input, the same for the same ones (so a repeated run sends the
    same bytes), and no long-term key to keep."""
    return generate(bits, stream_bits(stream_key(secret, KEY, *inputs)))


class PaillierDealing:
    """The dealing role's part of this product: nothing. Its parties run steps of their
    own (:mod:`vertimrf.party.secure.paillier`) and no role deals a matrix."""

    def deal(
        self, plan: SecurePlan, seeds_u: Sequence[bytes], seeds_w: Mapping[Pair, bytes]
    ) -> dict[Pair, np.ndarray]:
        """No pair's matrix."""
        return {}

    def group_deal(
        self,
        plan: SecurePlan,
        layout: Layout,
        seeds_u: Sequence[bytes],
        seeds_u2: Mapping[Pair, bytes],
        seeds_w2: Mapping[Pair, bytes],
    ) -> dict[Pair, tuple[np.ndarray, np.ndarray]]:
        """No pair's matrices."""
        return {}

    def coin_deal(
        self, seeds_c: tuple[bytes, bytes], seed_w: bytes, shape: Pair, word: type
    ) -> np.ndarray:
        """No coin words: the pair's coins ride its own product
        (:mod:`vertimrf.party.secure.paillier_coins`)."""
        return np.zeros(0, np.uint64)


def computed(table: Powers, key: bytes) -> Randomisers:
    """Randomisers made when asked, from ``table`` and the stream ``key``."""
    return lambda start, count: randomisers(table, key, start, count)


def encrypted_rows(
    public: PublicKey,
    rand: Randomisers,
    layout: SlotLayout,
    cols: np.ndarray,
    width: int,
    r0: int,
) -> bytes:
    """E's rows r0:r0 + len(cols) (one-hot ``cols`` of ``width`` columns) as ciphertext
    bytes; the randomisers are those rows' of ``rand`` (:func:`computed`), so any blocking
    of the rows gives the same bytes."""
    per = layout.per_row(width)
    own = rand(r0 * per, len(cols) * per)
    return ciphertexts_to_bytes(public, encrypt_onehot(public, layout, cols, width, own))


def masked_reply(
    public: PublicKey,
    table: Powers,
    layout: SlotLayout,
    received: Blocks,
    columns: np.ndarray,
    width_e: int,
    sizes: Sequence[int],
    key: bytes,
) -> tuple[bytes, np.ndarray]:
    """G: E's rows (``received``; ``width_e`` columns) summed into one accumulator a column
    of G's own (``columns``: rows x attributes of ``sizes`` values, as
    :class:`~vertimrf.crypto.paillier_slots.JointBuckets` reads them), every slot masked
    and re-randomised under ``key``; the reply's bytes and G's shares (G's columns x E's)."""
    width_g = sum(sizes)
    per = layout.per_row(width_e)
    buckets, done = JointBuckets(public, per, sizes), 0
    for r0, r1, raw in received:
        if r0 != done or not r0 <= r1 <= len(columns):
            raise MessageError(f"E's rows came as {r0}:{r1} after {done} of {len(columns)}.")
        buckets.add(ciphertexts_from_bytes(public, raw), columns[r0:r1])
        done = r1
    if done != len(columns):
        raise MessageError(f"E's rows stop at {done} of {len(columns)}; the message is cut.")
    acc = buckets.accumulators()
    masks = draw_masks(layout, key, (width_g, width_e))
    rand = randomisers(table, key, MASK_START, len(acc), reply_bits(layout))
    reply = mask(public, layout, acc, masks, rand)
    return ciphertexts_to_bytes(public, reply), aggregator_shares(masks)


def encrypter_shares(
    private: PrivateKey, layout: SlotLayout, reply: bytes, widths: Pair
) -> np.ndarray:
    """E: its shares (G's columns x E's, uint64) of the masked accumulators in ``reply``."""
    width_e, width_g = widths
    cts = ciphertexts_from_bytes(private.public, reply)
    return decrypt_shares(private, layout, cts, (width_g, width_e))


def coin_rows(bits: np.ndarray) -> np.ndarray:
    """A party's coins of one slot column of cells (cells x coins, 0 or 1) as rows of a
    product: one row a coin, one column a cell of the column (-1 where the coin is 0), so
    the cross count of cell c with itself is the inner product of the two parties' coins
    of c. E encrypts a column's rows at randomisers column x coins onward."""
    bits = np.asarray(bits)
    cells = np.arange(bits.shape[0], dtype=np.int64)
    return np.where(bits.T.astype(bool), cells[None, :], -1)


def coin_reply(
    public: PublicKey,
    table: Powers,
    layout: SlotLayout,
    received: Blocks,
    bits: Callable[[int, int], np.ndarray],
    shape: tuple[int, int],
    key: bytes,
) -> tuple[bytes, np.ndarray]:
    """G: E's coins (``received`` by blocks of ciphertexts i0:i1; :func:`coin_rows` of one
    slot column of cells at a time, ``shape`` (cells, coins)) against G's coins
    ``bits(c0, c1)`` (cells c0:c1, of one column, x coins): cell c's accumulator multiplies
    E's ciphertexts of c's column where G's coin is 1, so slot c of it encrypts <a_c, b_c>
    (the other slots hold cross terms, masked like it). One block of E's ciphertexts and
    one column's coins are held at a time. The reply and G's shares of each cell's inner
    product."""
    cells, coins = shape
    total, n2, width = coins * layout.per_row(cells), public.n2, layout.slots
    acc = [gmpy2.mpz(1)] * cells
    seen, column, mine = 0, -1, np.zeros((0, coins), bool)
    for i0, i1, raw in received:
        cts = ciphertexts_from_bytes(public, raw)
        if i0 != seen or i1 > total or len(cts) != i1 - i0:
            raise ConfigError(
                f"{coins} coin rows need {total} ciphertexts; got {i0}:{i1} ({len(cts)}) after "
                f"{seen}."
            )
        at = i0
        while at < i1:
            j, k0 = divmod(at, coins)
            end = min(i1, (j + 1) * coins)
            if j != column:
                column, mine = j, np.asarray(bits(j * width, min(cells, (j + 1) * width)), bool)
            _multiply_in(acc, j * width, mine[:, k0 : k0 + end - at], cts[at - i0 : end - i0], n2)
            at = end
        seen = i1
    if seen != total:
        raise ConfigError(f"{coins} coin rows need {total} ciphertexts; got {seen}.")
    masks = draw_masks(layout, key, (cells, layout.slots))
    rand = randomisers(table, key, MASK_START, cells, reply_bits(layout))
    reply = mask(public, layout, acc, masks, rand)
    diagonal = masks[np.arange(cells), np.arange(cells) % layout.slots]
    return ciphertexts_to_bytes(public, reply), aggregator_shares(diagonal)


def _multiply_in(
    acc: list[gmpy2.mpz], first: int, bits: np.ndarray, cts: Sequence[gmpy2.mpz], n2: gmpy2.mpz
) -> None:
    """Multiply into acc[first + i] the ciphertexts ``cts[k]`` where ``bits[i, k]``, for the
    cells of one column (rows of ``bits``) sharing ``cts``: a table of the products of every
    subset of t = :func:`~vertimrf.protocol.secure.paillier.subset_bits` ciphertexts
    (2^t - t - 1 products), then one product a cell: about 1.6x fewer products for a column
    of 33 cells than one a coin that is 1 of each cell. Products mod n^2 commute: the same
    integers as one at a time."""
    cells, coins = bits.shape
    t = subset_bits(cells)
    weights = 1 << np.arange(t)
    for k in range(0, coins, t):
        chunk = cts[k : k + t]
        table = [gmpy2.mpz(1)]
        for x in chunk:
            table += [x] + [y * x % n2 for y in table[1:]]
        picks = bits[:, k : k + len(chunk)] @ weights[: len(chunk)]
        for i in np.flatnonzero(picks).tolist():
            acc[first + i] = acc[first + i] * table[int(picks[i])] % n2


def coin_shares(private: PrivateKey, layout: SlotLayout, reply: bytes, cells: int) -> np.ndarray:
    """E: its share of each cell's coin inner product from G's :func:`coin_reply`."""
    cts = ciphertexts_from_bytes(private.public, reply)
    whole = decrypt_shares(private, layout, cts, (cells, layout.slots))
    return whole[np.arange(cells), np.arange(cells) % layout.slots]


def centred_coin_shares(
    ones: np.ndarray, coins: int, inner: np.ndarray, *, first: bool
) -> np.ndarray:
    """A party's share of each cell's centred XOR sum, sum(a XOR b) - N/2 = sum a + sum b
    - 2 <a, b> - N/2, from its coins' sums ``ones`` (a cell each, of ``coins`` coins) and
    its share ``inner`` of <a, b>; ``first``: the party that subtracts N/2."""
    own = ones.astype(np.uint64) - np.uint64(coins // 2 if first else 0)
    return own - np.uint64(2) * inner
