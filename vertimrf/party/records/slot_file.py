"""A party's records sorted and laid out through temporary files
(``record_sets="partial"``); design notes in docs/design/party.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from vertimrf.errors import MessageError
from vertimrf.io import ScratchFolder
from vertimrf.party.records.aligned import check_count, chunk_histograms, slot_columns
from vertimrf.party.records.part_files import part_count, read_rows, row_chunks, scatter
from vertimrf.party.records.slot_table import check_distinct, check_slots, layout_digest
from vertimrf.party.records.tokens import (
    TokenKeys,
    check_slot_count,
    checked_dummies,
    merged_tokens,
    order_tokens,
    records_digest,
    release_tokens,
    repeats_error,
)
from vertimrf.protocol.buckets import bucket_of

if TYPE_CHECKING:
    from vertimrf.protocol.secure.plan import SecurePlan

__all__ = ["FileSlotAligned", "TokenFiles"]

# A batch of records: their codes (records x columns) and ID fingerprints (uint64).
Batch = tuple[np.ndarray, np.ndarray]


def _record(key: str, dtype: np.dtype, width: int) -> np.dtype:
    """A record in a part file: its sort key (a token, uint64, or a slot, int64), its
    fingerprint and its codes."""
    key_type = "<u8" if key == "tok" else "<i8"
    return np.dtype([(key, key_type), ("fp", "<u8"), ("c", dtype, (width,))])


def _part_files(where: Path, parts: int, stack: ExitStack) -> list[IO[bytes]]:
    """F part files, open unbuffered (a batch writes each part's records at once)."""
    return [stack.enter_context(open(where / f"part{i}", "wb", buffering=0)) for i in range(parts)]


def _sorted_parts(
    where: Path, record: np.dtype, key: str, parts: int, check: Callable[[np.ndarray], None]
) -> list[int]:
    """Each part file sorted by its ``key`` field (``check`` given each part's sorted
    keys), its keys, fingerprints and codes appended to the files ``keys``, ``fp`` and ``c``
    (each part removed once read); the record count of each part."""
    sizes = []
    with ExitStack() as stack:
        out = {name: stack.enter_context(open(where / name, "wb")) for name in ("keys", "fp", "c")}
        for i in range(parts):
            path = where / f"part{i}"
            rows = np.fromfile(path, record)
            path.unlink()
            rows = rows[np.argsort(rows[key], kind="stable")]
            check(rows[key])
            for name, field in (("keys", key), ("fp", "fp"), ("c", "c")):
                np.ascontiguousarray(rows[field]).tofile(out[name])
            sizes.append(int(rows.size))
    return sizes


class TokenFiles:
    """Party ``index``'s records from ``batches``, sorted by order token in temporary files
    in ``temp_dir``, ``part_rows`` records at a time (codes of ``dtype``, ``width`` columns):
    their count ``n`` and ``digest`` (:func:`~vertimrf.party.records.tokens.records_digest`).
    ConfigError past the plan's max_rows, RecordIDError for a repeated ID."""

    def __init__(
        self,
        batches: Iterable[Batch],
        dtype: np.dtype,
        width: int,
        keys: TokenKeys,
        plan: SecurePlan,
        index: int,
        *,
        part_rows: int,
        temp_dir: str | os.PathLike | None = None,
    ) -> None:
        self._dtype, self._width, self._part_rows = np.dtype(dtype), width, part_rows
        self._keys, self._plan, self._index = keys, plan, index
        self._temp_dir = temp_dir
        self._folder = ScratchFolder(prefix="vertimrf-tokens-", dir=temp_dir)
        self._where = Path(self._folder.name)
        self._released: tuple[bytes, Path, np.ndarray] | None = None
        try:
            keyed = ((c, fp, order_tokens(fp, keys)) for c, fp in batches)
            self.n = self._sort(keyed, self._where)
            self.digest = records_digest(
                self.n, width, self._blocks(self._where, "fp"), self._blocks(self._where, "c")
            )
        except BaseException:
            self._folder.cleanup()
            raise

    def _sort(self, batches: Iterable[tuple[np.ndarray, ...]], where: Path) -> int:
        """Pass 1 (scatter the (codes, fingerprints, tokens) ``batches`` by token) and pass
        2 (sort each part by token) into ``where``; the record count."""
        parts = part_count(self._plan.max_rows, self._part_rows)
        record = _record("tok", self._dtype, self._width)
        n = 0
        with ExitStack() as stack:
            files = _part_files(where, parts, stack)
            for codes, fingerprints, tokens in batches:
                n += tokens.size
                check_count(n, self._plan.max_rows, so_far=True)
                rows = np.empty(tokens.size, record)
                rows["tok"], rows["fp"], rows["c"] = tokens, fingerprints, codes
                scatter(rows, bucket_of(tokens, parts), files)
        repeats = 0

        def count(tokens: np.ndarray) -> None:
            nonlocal repeats
            repeats += int(np.count_nonzero(tokens[1:] == tokens[:-1]))

        _sorted_parts(where, record, "tok", parts, count)
        if repeats:
            raise repeats_error(repeats)
        return n

    def _blocks(self, where: Path, name: str) -> Iterator[np.ndarray]:
        """The records' ``name`` file in ``where`` (``keys``, ``fp`` or ``c``) in its order,
        by parts."""
        dtype, width = (self._dtype, self._width) if name == "c" else (np.dtype("<u8"), 1)
        return row_chunks(where / name, dtype, width, 0, self.n, self._part_rows)

    def _keys_in(self, where: Path) -> Iterator[np.ndarray]:
        """The sorted keys (order tokens, or tokens sent) of the records in ``where``, by
        blocks of about a part."""
        return (block.reshape(-1) for block in self._blocks(where, "keys"))

    def sorted_tokens(self) -> Iterator[np.ndarray]:
        """The records' order tokens, sorted, by blocks of about a part."""
        return self._keys_in(self._where)

    def _release(self, admit: bytes) -> tuple[Path, np.ndarray]:
        """The folder of the records sorted by the tokens sent for ``admit`` (made once) and
        the party's dummies, sorted and checked against those tokens
        (:func:`~vertimrf.party.records.tokens.checked_dummies`)."""
        if self._released is None or self._released[0] != admit:
            where = self._where / "released"
            if where.exists():
                for path in where.iterdir():
                    path.unlink()
            where.mkdir(exist_ok=True)
            blocks = zip(
                self._blocks(self._where, "c"),
                self._blocks(self._where, "fp"),
                self.sorted_tokens(),
                strict=True,
            )
            keys = self._keys
            self._sort(((c, f[:, 0], release_tokens(o, keys, admit)) for c, f, o in blocks), where)
            dummies = checked_dummies(
                self._keys_in(where), self._keys, admit, self._plan.sets.region_noise(), self._index
            )
            self._released = (admit, where, dummies)
        return self._released[1], self._released[2]

    def tokens(self, admit: bytes) -> tuple[int, Callable[[], Iterator[np.ndarray]]]:
        """The number of tokens made with ``admit`` and a function giving them sorted, by
        blocks of about a part; RecordIDError for a repeated token."""
        where, dummies = self._release(admit)
        return self.n + dummies.size, lambda: merged_tokens(lambda: self._keys_in(where), dummies)

    def lay_out(
        self, slots: Iterable[np.ndarray], count: int, admit: bytes, assignment: bytes
    ) -> FileSlotAligned:
        """The records at the ``count`` ``slots`` the deal gave the token list made with
        ``admit`` (one per token, in its order, by blocks: each read once, in step with the
        records), in the assignment of digest ``assignment`` (MessageError for a miscounted
        list, ConfigError for a slot off the rows or given twice)."""
        released, dummies = self._release(admit)
        check_slot_count(count, self.n + dummies.size)
        cursor = _SlotCursor(slots)
        max_rows = self._plan.max_rows
        parts = part_count(max_rows, self._part_rows)
        span = -(-max_rows // parts)  # the rows of one slot part
        folder = ScratchFolder(prefix="vertimrf-slots-", dir=self._temp_dir)
        where = Path(folder.name)
        record = _record("slot", self._dtype, self._width)
        try:
            with ExitStack() as stack:
                files = _part_files(where, parts, stack)
                i0 = 0
                blocks = zip(
                    self._keys_in(released),
                    self._blocks(released, "fp"),
                    self._blocks(released, "c"),
                    strict=True,
                )
                for tokens, fingerprints, codes in blocks:
                    at = np.arange(i0, i0 + tokens.size) + np.searchsorted(dummies, tokens)
                    rows = np.empty(tokens.size, record)
                    rows["slot"], rows["fp"], rows["c"] = cursor.at(at), fingerprints[:, 0], codes
                    check_slots(rows["slot"], max_rows)
                    scatter(rows, rows["slot"] // span, files)
                    i0 += tokens.size
                cursor.finish()
            sizes = _sorted_parts(where, record, "slot", parts, check_distinct)
            first = np.concatenate(([0], np.cumsum(sizes, dtype=np.int64)))

            def blocks_of(name: str, dtype: np.dtype, width: int = 1) -> Iterator[np.ndarray]:
                return row_chunks(where / name, np.dtype(dtype), width, 0, self.n, self._part_rows)

            digest = layout_digest(
                assignment,
                blocks_of("keys", np.dtype("<i8")),
                blocks_of("fp", np.dtype("<u8")),
                blocks_of("c", self._dtype, self._width),
            )
            (where / "fp").unlink()
        except BaseException:
            folder.cleanup()
            raise
        return FileSlotAligned(
            folder, self._dtype, self._width, first, span, assignment, digest, self._part_rows
        )


class _SlotCursor:
    """The slots of a token list given by blocks in its order, taken at increasing list
    positions (the slots between them, a dummy's, are passed over)."""

    def __init__(self, blocks: Iterable[np.ndarray]) -> None:
        self._blocks = iter(blocks)
        self._held = np.empty(0, np.int64)
        self._start = 0  # the list position of the first held slot

    def at(self, positions: np.ndarray) -> np.ndarray:
        """The slots at the increasing list ``positions`` (none before those taken last)."""
        if not positions.size:
            return np.empty(0, np.int64)
        end = int(positions[-1]) + 1
        pieces, have = [self._held], self._start + self._held.size
        while have < end:
            block = next(self._blocks, None)
            if block is None:
                raise MessageError("the slot map holds fewer slots than the token list.")
            pieces.append(np.array(block, np.int64))  # a copy: the block is reused
            have += block.size
        self._held = np.concatenate(pieces) if len(pieces) > 1 else self._held
        out = self._held[positions - self._start]
        self._held, self._start = self._held[end - self._start :], end
        return out

    def finish(self) -> None:
        """Read the blocks to the end (where the slot map's checks run)."""
        for _ in self._blocks:
            pass


class FileSlotAligned:
    """A party's records at their slots in a temporary folder: the records of slot part j
    (padded rows [j span, (j + 1) span)) are records ``first[j]:first[j + 1]`` of its files
    ``keys`` (slots) and ``c`` (codes), in slot order; one part is held at a time (the
    :class:`~vertimrf.party.records.aligned.Aligned` protocol)."""

    def __init__(
        self,
        folder: ScratchFolder,
        dtype: np.dtype,
        width: int,
        first: np.ndarray,
        span: int,
        assignment: bytes,
        data_digest: str,
        chunk_rows: int,
    ) -> None:
        self._folder = folder  # removed with this object
        self._where = Path(folder.name)
        self._dtype, self._width, self._first, self._span = dtype, width, first, span
        self._chunk_rows = chunk_rows
        self.n = int(first[-1])
        self.record_digest, self.data_digest = assignment, data_digest
        self._held: tuple[int, np.ndarray, np.ndarray] | None = None

    def _part(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """Slot part j's slots and codes (the last one read is kept)."""
        if self._held is None or self._held[0] != j:
            i0, i1 = int(self._first[j]), int(self._first[j + 1])
            with open(self._where / "keys", "rb") as fh:
                slots = read_rows(fh, np.dtype("<i8"), 1, i0, i1).reshape(-1)
            with open(self._where / "c", "rb") as fh:
                codes = read_rows(fh, self._dtype, self._width, i0, i1)
            self._held = (j, slots, codes)
        return self._held[1], self._held[2]

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`vertimrf.party.records.aligned.slot_columns`)."""
        out = np.full((r1 - r0, self._width), -1, np.int32)
        span, parts = self._span, self._first.size - 1
        for j in range(r0 // span, min((r1 - 1) // span + 1, parts)):
            lo, hi = max(r0, j * span), min(r1, (j + 1) * span)
            slots, codes = self._part(j)
            out[lo - r0 : hi - r0] = slot_columns(slots, codes, lo, hi, offsets)
        return out

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``, summed chunk by chunk."""
        chunks = row_chunks(
            self._where / "c", self._dtype, self._width, 0, self.n, self._chunk_rows
        )
        return chunk_histograms(chunks, attrs, sizes)
