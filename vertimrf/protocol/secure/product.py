"""The cross product as a backend: one-hot feature blocks to additive shares of
cross counts; design notes in docs/design/protocol.md."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from vertimrf.errors import ConfigError
from vertimrf.protocol.masks import RowMask
from vertimrf.protocol.secure.plan import Layout, SecurePlan

Pair = tuple[int, int]
# A peer's rows, block by block: (r0, r1, its rows r0:r1 of round 1) ...
Received = Iterable[tuple[int, int, np.ndarray]]
# ... and of rounds 1 and 2 together: (r0, r1, round-1 rows, round-2 rows).
ReceivedBoth = Iterable[tuple[int, int, np.ndarray, np.ndarray]]
# A party's one-hot columns in rows r0:r1 (int64, -1: no column).
Columns = Callable[[int, int], np.ndarray]


class Dealing(Protocol):
    """What the dealing role makes for a backend (module doc): every backend has it, if
    only to deal nothing. ``plan``: the run's :class:`SecurePlan`; a pair is (p, q) with
    p < q."""

    def deal(
        self, plan: SecurePlan, seeds_u: Sequence[bytes], seeds_w: Mapping[Pair, bytes]
    ) -> dict[Pair, np.ndarray]:
        """The dealer: the higher party's dealt matrix of every pair (round 1)."""
        ...

    def group_deal(
        self,
        plan: SecurePlan,
        layout: Layout,
        seeds_u: Sequence[bytes],
        seeds_u2: Mapping[Pair, bytes],
        seeds_w2: Mapping[Pair, bytes],
    ) -> dict[Pair, tuple[np.ndarray, np.ndarray]]:
        """The dealer: the higher party's dealt matrices (A, B) of every pair that grows in
        ``layout`` (round 2)."""
        ...

    def coin_deal(
        self, seeds_c: tuple[bytes, bytes], seed_w: bytes, shape: Pair, word: type
    ) -> np.ndarray:
        """The dealer: the higher party's dealt vector of a pair's coin product (``shape``:
        cells, coins a cell), from the two parties' coin mask seeds and the pair's W seed."""
        ...


@runtime_checkable
class CrossProduct(Dealing, Protocol):
    """Two parties' one-hot feature blocks to additive shares of their cross counts, with
    the dealing role's help (module doc); the parties' steps are the secure method's. A
    backend whose parties run steps of their own (product "paillier") is a
    :class:`Dealing` only."""

    def sent(
        self,
        cols: np.ndarray,
        seed: bytes,
        label: RowMask,
        r0: int,
        r1: int,
        width: int,
        word: type,
    ) -> np.ndarray:
        """A party: its rows r0:r1 (one-hot ``cols``, ``width`` words a row of ``word``) as
        sent to a peer, hidden by the stream ``label`` of ``seed``."""
        ...

    def lower_share(
        self, seed_w: bytes, seed_u: bytes, shape: Pair, received: Received, word: type
    ) -> np.ndarray:
        """The lower party: its share (``shape``) of the pair, from the higher party's rows."""
        ...

    def higher_share(
        self, dealt: np.ndarray, received: Received, columns: Columns, width: int
    ) -> np.ndarray:
        """The higher party: its share of the pair from its ``dealt`` matrix, the lower
        party's rows and its own one-hot ``columns`` (``width`` of them)."""
        ...

    def lower_blocks(
        self,
        seeds: tuple[bytes, bytes, bytes],
        shapes: tuple[Pair, Pair],
        received: ReceivedBoth,
        word: type,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The lower party: its shares of the pair's round-2 blocks A and B (``shapes``),
        from ``seeds`` (its W2 seed, its round-1 mask's and its round-2 mask's toward the
        peer) and the peer's rows of both rounds."""
        ...

    def higher_blocks(
        self,
        dealt: tuple[np.ndarray, np.ndarray],
        received: ReceivedBoth,
        columns: Callable[[int, int], tuple[np.ndarray, np.ndarray]],
        widths: Pair,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The higher party: its shares of the pair's round-2 blocks A and B, from its
        ``dealt`` pair, the peer's rows of both rounds and ``columns(r0, r1)``: its
        singles' and its groups' one-hot columns (``widths``: how many of each)."""
        ...

    def coin_sent(self, bits: np.ndarray, seed: bytes, c0: int, word: type) -> np.ndarray:
        """A party: its coins of cells c0: (a row of 0 and 1 per cell) as sent to its peer,
        hidden by its coin mask of ``seed``."""
        ...

    def coin_lower(
        self, bits: np.ndarray, seeds: tuple[bytes, bytes], received: np.ndarray, c0: int,
        word: type,
    ) -> np.ndarray:  # fmt: skip
        """The lower party: its share of each cell's centred sum of the XORed coins (cells
        c0:), from its bits, ``seeds`` (its coin mask's, the pair's W seed) and the peer's
        sent coins of those cells."""
        ...

    def coin_higher(self, bits: np.ndarray, dealt: np.ndarray, received: np.ndarray) -> np.ndarray:
        """The higher party: its share of each cell's centred sum of the XORed coins, from
        its bits, its ``dealt`` words of those cells and the peer's sent coins."""
        ...


# The backends by the config's ``product`` name ("module:class"): a new backend is its
# module and one line here.
PRODUCTS: dict[str, str] = {
    "dealer": "vertimrf.product.dealer:DealerProduct",
    "paillier": "vertimrf.product.paillier:PaillierDealing",
}


# The backends with which no role deals a mask: the server with one party is then a viewer
# whose bound the report prints (:meth:`~vertimrf.protocol.secure.plan.SecurePlan.viewers`).
DEALER_FREE = frozenset({"paillier"})


def check_product(name: str) -> None:
    """ConfigError unless ``name`` is a known backend (imports nothing)."""
    if name not in PRODUCTS:
        raise ConfigError(f"product must be one of {sorted(PRODUCTS)}; got {name!r}.")
