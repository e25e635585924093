"""The server's slots when the parties' record sets differ
(``record_sets="partial"``); design notes in docs/design/server.md."""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vertimrf.crypto.prp import KeyedPermutation
from vertimrf.crypto.schedule import derive
from vertimrf.errors import ConfigError, MessageError
from vertimrf.kernels.merge import merge_sorted
from vertimrf.privacy.samplers import KeyedSampler
from vertimrf.protocol.regions import RegionNoise, SmallSharedWarning, regions_of, small_shared
from vertimrf.protocol.secure.wire import SLOT_BLOCK

__all__ = ["BLOCK", "ArrayTokens", "Slots", "TokenSource", "assign_slots", "merge_lists", "merged"]

BLOCK = SLOT_BLOCK  # tokens read from each list at a time


class TokenSource(Protocol):
    """A party's sorted token list: its ``count`` and its tokens by blocks."""

    count: int

    def blocks(self, step: int) -> Iterator[np.ndarray]: ...


class ArrayTokens:
    """A token list held in memory, as a :class:`TokenSource`."""

    def __init__(self, tokens: np.ndarray) -> None:
        self._tokens = np.asarray(tokens, np.uint64).reshape(-1)
        self.count = int(self._tokens.size)

    def blocks(self, step: int) -> Iterator[np.ndarray]:
        """The tokens by blocks of ``step``."""
        for start in range(0, self.count, max(1, step)):
            yield self._tokens[start : start + step]


def _unsorted(index: int) -> MessageError:
    return MessageError(
        f"party {index}'s token list is not sorted without repeats; have the party send its "
        "tokens again."
    )


class _Cursor:
    """One list's tokens not yet merged, pulled by blocks and checked to increase."""

    def __init__(self, index: int, source: TokenSource, step: int, hasher: Any) -> None:
        self._index, self._blocks, self._hasher = index, source.blocks(step), hasher
        self.held = np.empty(0, np.uint64)
        self._last: int | None = None
        self.done = False

    def fill(self) -> None:
        """Pull the next non-empty block once the held tokens are all merged."""
        while not self.held.size and not self.done:
            block = next(self._blocks, None)
            if block is None:
                self.done = True
                return
            block = np.asarray(block, np.uint64)
            if block.size:
                if bool(np.any(block[1:] <= block[:-1])) or (
                    self._last is not None and int(block[0]) <= self._last
                ):
                    raise _unsorted(self._index)
                self._last = int(block[-1])
                if self._hasher is not None:
                    self._hasher.update(np.ascontiguousarray(block, "<u8").data)
            self.held = block

    def take(self, bound: int) -> np.ndarray:
        """The held tokens up to ``bound`` (inclusive)."""
        k = int(np.searchsorted(self.held, np.uint64(bound), "right"))
        out, self.held = self.held[:k], self.held[k:]
        return out


def merged(
    sources: Sequence[TokenSource], step: int = BLOCK, hashers: Sequence[Any] | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The distinct tokens of the sorted lists ``sources`` (party i: bit i of a region), in
    order, by blocks: (distinct tokens, the region of each), each block merged in one linear
    pass (:func:`merge_lists`). Each list is read ``step``
    tokens at a time (fed to ``hashers[i]`` as read); MessageError for a list that is not
    strictly increasing."""
    cursors = [
        _Cursor(i, s, step, None if hashers is None else hashers[i]) for i, s in enumerate(sources)
    ]
    while True:
        for c in cursors:
            c.fill()
        live = [c for c in cursors if c.held.size]
        if not live:
            return
        bound = min(int(c.held[-1]) for c in live)  # every list past it holds larger tokens
        yield merge_lists([c.take(bound) for c in cursors])


def merge_lists(lists: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tokens of strictly increasing uint64 ``lists``, in order, and each one's
    region (bit i: list i holds it), in one linear pass
    (:func:`~vertimrf.kernels.merge.merge_sorted`)."""
    offsets = np.zeros(len(lists) + 1, np.int64)
    np.cumsum([t.size for t in lists], out=offsets[1:])
    flat = np.concatenate([np.empty(0, np.uint64), *lists])
    distinct, region = np.empty(flat.size, np.uint64), np.empty(flat.size, np.int64)
    k = merge_sorted(flat, offsets, distinct, region)
    return distinct[:k], region[:k]


@dataclass(frozen=True)
class Slots:
    """The slot assignment of one run: the published region counts (by region mask), the
    assignment's digest (what binds the deal's masks to it: a keyed digest of the server's
    secret, the run and every token list, which fix every slot), and each party's slots
    by blocks (:meth:`party`)."""

    released: dict[int, int]
    digest: bytes
    sources: tuple[TokenSource, ...]
    permutation: KeyedPermutation
    step: int = BLOCK

    def party(self, index: int) -> Iterator[np.ndarray]:
        """Party ``index``'s slots (int64, in its list's order) by blocks: pi of the ranks
        of its tokens among every distinct token (one merge of every list)."""
        rank = 0
        for distinct, region in merged(self.sources, self.step):
            mine = np.flatnonzero((region >> index) & 1)
            if mine.size:
                yield self.permutation(rank + mine)
            rank += distinct.size

    def of(self, index: int) -> np.ndarray:
        """Party ``index``'s slots, whole."""
        return np.concatenate([np.empty(0, np.int64), *self.party(index)])


def assign_slots(
    lists: Mapping[int, TokenSource | np.ndarray],
    noise: RegionNoise,
    max_rows: int,
    server_secret: bytes,
    context: bytes,
    *,
    step: int = BLOCK,
    expected_shared: float | None = None,
) -> Slots:
    """Match the token lists (by party index; arrays or :class:`TokenSource` s, read by
    blocks of ``step``), publish the region counts and key each party's slots;
    ConfigError (one line) when the published counts leave too few rows. A
    SmallSharedWarning first when the published count of the records every party holds is
    far under the config's ``expected_shared`` (:func:`~vertimrf.protocol.regions.small_shared`)."""
    if sorted(lists) != list(range(noise.m)):
        raise MessageError(f"the slots need every party's tokens; got parties {sorted(lists)}.")
    sources = tuple(
        ArrayTokens(s) if isinstance(s, np.ndarray) else s for _, s in sorted(lists.items())
    )
    hashers = [hashlib.sha256() for _ in sources]
    seen = np.zeros(1 << noise.m, np.int64)
    distinct = 0
    for tokens, region in merged(sources, step, hashers):
        seen += np.bincount(region, minlength=1 << noise.m)
        distinct += tokens.size
    lists_digest = hashlib.sha256()
    for source, h in zip(sources, hashers, strict=True):
        lists_digest.update(source.count.to_bytes(8, "little") + h.digest())
    label = (context, lists_digest.digest())
    zeta = KeyedSampler(server_secret, "region-counts", *label).discrete_gaussian(
        noise.sigma, noise.regions
    )
    released = {
        t: int(seen[t]) - noise.offset + int(z)
        for t, z in zip(regions_of(noise.m), zeta, strict=True)
    }
    line = small_shared(released, expected_shared)
    if line is not None:
        warnings.warn(line, SmallSharedWarning, stacklevel=3)
    if not noise.goes_on(released, max_rows) or distinct > max_rows:
        need = sum(released.values()) + noise.regions * (noise.offset + noise.margin)
        raise ConfigError(
            f"the parties' records and dummies need about {need} rows, more than max_rows "
            f"{max_rows}: make a new config with a larger public max_rows."
        )
    key = derive(server_secret, "slots", *label)
    digest = derive(server_secret, "slot-assignment", *label, str(max_rows))
    return Slots(released, digest, sources, KeyedPermutation(key, max_rows), step)
