"""A party's table in a CSV or Parquet file, aligned through temporary files a
part at a time; design notes in docs/design/party.md."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from vertimrf.domain import DomainSpec, EncodedTable
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.io import ScratchFolder
from vertimrf.party.fine import column_counts
from vertimrf.party.records.aligned import (
    Aligned,
    AlignedTable,
    HeldTable,
    bucket_counts,
    check_count,
    chunk_histograms,
    combine_digests,
    duplicate_error,
    order_keys,
    record_set_key,
    repeated_prf,
)
from vertimrf.party.records.kept_aligned import binding, kept_or_aligned, source_digest
from vertimrf.party.records.part_files import part_count, read_rows, row_chunks, scatter
from vertimrf.party.records.slot_file import TokenFiles
from vertimrf.party.records.slot_table import MemoryRecords
from vertimrf.party.records.table_input import (
    BATCH_ROWS,
    WholeTableNeededError,
    check_party_columns,
    check_row_count,
    input_format,
    read_party_table,
    stream_party_table,
)
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.party.registers import keyed_prf
from vertimrf.protocol.buckets import bucket_of, spill_slots
from vertimrf.protocol.costs import ALIGN_PART_ROWS

if TYPE_CHECKING:
    from vertimrf.protocol.secure.plan import SecurePlan

# Records sorted at once in pass 2 (about 2 (d + 16) + 24 bytes each while sorted), and read
# at once from the row-order files (hashing, count tables): the plan's memory model's.
PART_ROWS = ALIGN_PART_ROWS


class FileTable(HeldTable):
    """A party's table in a CSV or Parquet file (or a folder of Parquet files), read in
    batches of ``batch_rows`` rows and aligned through temporary files in ``temp_dir``,
    sorting ``part_rows`` records at a time (the number of parts is a power of two set by the
    public max_rows, so a part holds about ``part_rows`` records or fewer)."""

    def __init__(
        self,
        path: str | os.PathLike,
        *,
        batch_rows: int = BATCH_ROWS,
        part_rows: int = PART_ROWS,
        temp_dir: str | os.PathLike | None = None,
    ) -> None:
        check_row_count("batch_rows", batch_rows)
        check_row_count("part_rows", part_rows)
        input_format(path)  # ConfigError for a file that cannot be opened
        if temp_dir is not None and not Path(temp_dir).is_dir():
            raise ConfigError(f"no folder {temp_dir} for the temporary files; create it first.")
        self.path, self.batch_rows, self.part_rows = path, batch_rows, part_rows
        self.temp_dir = temp_dir
        self._name, self._id_column, self._id_type = "", "", ""
        self._keep: Path | None = None

    def check(self, name: str, spec: DomainSpec, id_column: str, id_type: str = "") -> FileTable:
        """This table as party ``name``'s over ``spec``: DomainError or ConfigError unless the
        file has ``id_column`` and every column of ``spec`` (its header alone is read); its
        IDs of the declared ``id_type`` (checked on every row as they are read)."""
        check_party_columns(self.path, spec, id_column, party=name)
        self._name, self._id_column, self._id_type = name, id_column, id_type
        return self

    def keep(self, folder: Path) -> None:
        """Keep the aligned records in ``folder``: :meth:`align` then reads back those an
        earlier process kept there for the same run, secret, party and file bytes, else
        aligns the table and keeps its records (:mod:`vertimrf.party.records.kept_aligned`)."""
        self._keep = folder

    def align(self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan) -> Aligned:
        """The records in the common row order (ConfigError past max_rows; RecordIDError
        for a repeated ID), read back from the folder given to :meth:`keep` if kept there."""
        if self._keep is None:
            return self._aligned(spec, secret, context, plan)
        source = self.source()
        bound = binding(secret, context, self._name, self._id_column, source)
        return kept_or_aligned(
            self._keep, bound, spec, plan.rows, lambda: self._aligned(spec, secret, context, plan)
        )

    def source(self) -> str:
        """SHA-256 (hex) of the file's bytes (a folder's: its files'), read in chunks."""
        return source_digest(self.path)

    def one_way(self, spec: DomainSpec) -> list[np.ndarray]:
        """The count of every code of each column of ``spec`` over the file's rows, read in
        batches (a file whose batches do not settle how pandas reads it is read whole)."""
        path, ids, name, rows, typed = (
            self.path, self._id_column, self._name, self.batch_rows, self._id_type
        )  # fmt: skip
        counts = [np.zeros(c.size, np.int64) for c in spec.columns]
        try:
            batches = stream_party_table(
                path, spec, ids, party=name, batch_rows=rows, id_type=typed
            )
            for codes, _ in batches:
                for n, more in zip(counts, column_counts(codes, spec), strict=True):
                    n += more
        except WholeTableNeededError:
            table, _ = read_party_table(path, spec, ids, party=name, batch_rows=rows, id_type=typed)
            counts = column_counts(table.codes, spec)
        return counts

    def partial_records(
        self, spec: DomainSpec, keys: TokenKeys, plan: SecurePlan, index: int
    ) -> TokenFiles | MemoryRecords:
        """Partial record sets: party ``index``'s records sorted by token through temporary
        files (:class:`~vertimrf.party.records.slot_file.TokenFiles`), read in batches; a
        file whose batches do not settle how pandas reads it is read whole first. When the
        public max_rows fits one part, the records are read and sorted in memory
        (:class:`~vertimrf.party.records.slot_table.MemoryRecords`): that holds no more than
        a part, and the same tokens, digest and layout come without the part files."""
        if plan.max_rows <= self.part_rows:
            return MemoryRecords(*self._whole(spec), keys, plan, index)

        def sort(batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> TokenFiles:
            return TokenFiles(
                batches, TableEncoder(spec).dtype, len(spec.names), keys, plan, index,
                part_rows=self.part_rows, temp_dir=self.temp_dir,
            )  # fmt: skip

        try:
            return sort(self._batches(spec))
        except WholeTableNeededError:
            table, fingerprints = self._whole(spec)
            return sort([(table.codes, fingerprints)])

    def _batches(self, spec: DomainSpec) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The table's batches, encoded, with their IDs' fingerprints."""
        return stream_party_table(
            self.path, spec, self._id_column, party=self._name, batch_rows=self.batch_rows,
            id_type=self._id_type,
        )  # fmt: skip

    def _whole(self, spec: DomainSpec) -> tuple[EncodedTable, np.ndarray]:
        """The table read whole and encoded, with its IDs' fingerprints."""
        return read_party_table(
            self.path, spec, self._id_column, party=self._name, batch_rows=self.batch_rows,
            id_type=self._id_type,
        )  # fmt: skip

    def _aligned(
        self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan
    ) -> Aligned:
        """The records aligned from the file. When the public max_rows fits one part, the
        table is read and aligned in memory: that holds no more than a part."""
        if plan.max_rows > self.part_rows:
            folder = ScratchFolder(prefix="vertimrf-rows-", dir=self.temp_dir)
            try:
                return self._align(Path(folder.name), folder, spec, secret, context, plan)
            except WholeTableNeededError:
                folder.cleanup()
            except BaseException:
                folder.cleanup()
                raise
        table, fingerprints = self._whole(spec)
        return AlignedTable(
            table.codes, fingerprints, secret, context, plan.buckets, plan.capacity,
            plan.max_rows,
        )  # fmt: skip

    def _align(
        self,
        where: Path,
        folder: ScratchFolder,
        spec: DomainSpec,
        secret: bytes,
        context: bytes,
        plan: SecurePlan,
    ) -> FileAligned:
        parts = part_count(plan.max_rows, self.part_rows)
        batches = self._batches(spec)
        keys = order_keys(secret, context)
        counts = np.zeros(plan.buckets, np.int64)
        dtype, width = TableEncoder(spec).dtype, len(spec.names)
        record = np.dtype([("prf", "<u8"), ("fp", "<u8"), ("c", dtype, (width,))])
        with ExitStack() as stack:
            files = [  # unbuffered: a batch writes each part's records at once
                stack.enter_context(open(where / f"part{i}", "wb", buffering=0))
                for i in range(parts)
            ]
            for codes, fingerprints in batches:
                prf = keyed_prf(keys, fingerprints)
                counts += bucket_counts(prf, plan.buckets)
                check_count(int(counts.sum()), plan.max_rows, so_far=True)
                _scatter(prf, fingerprints, codes, record, parts, files)
        record_hashes = _sort_parts(where, record, parts, plan.buckets)
        data_hashes = _data_hashes(where, dtype, width, counts, self.part_rows)
        record_digest, data_digest = combine_digests(
            record_hashes, data_hashes, plan.buckets, record_set_key(secret, context)
        )
        return FileAligned(
            folder, dtype, width, counts, plan.capacity, record_digest, data_digest,
            self.part_rows,
        )  # fmt: skip


def _scatter(
    prf: np.ndarray,
    fingerprints: np.ndarray,
    codes: np.ndarray,
    record: np.dtype,
    parts: int,
    files: Sequence[IO[bytes]],
) -> None:
    """Append one batch's records to their part files (part: the top bits of the PRF)."""
    rows = np.empty(prf.size, record)
    rows["prf"], rows["fp"], rows["c"] = prf, fingerprints, codes
    scatter(rows, bucket_of(prf, parts), files)


def _sort_parts(where: Path, record: np.dtype, parts: int, buckets: int) -> dict[int, bytes]:
    """Pass 2: each part sorted by PRF value, its fingerprints and codes appended to the
    files ``fp`` and ``codes`` (each part removed once read); the SHA-256 of each bucket's
    sorted PRF values. RecordIDError for repeated PRF values (in all the parts)."""
    hashes: dict[int, Any] = {}
    same, repeated = 0, False
    with open(where / "fp", "wb") as fp_out, open(where / "codes", "wb") as codes_out:
        for i in range(parts):
            path = where / f"part{i}"
            rows = np.fromfile(path, record)
            path.unlink()
            rows = rows[np.argsort(rows["prf"], kind="stable")]
            prf = np.ascontiguousarray(rows["prf"])
            s, r = repeated_prf(prf, rows["fp"])
            same, repeated = same + s, repeated or r
            bucket = bucket_of(prf, buckets)
            bounds = np.searchsorted(bucket, np.arange(buckets + 1))
            for b in np.unique(bucket):
                h = hashes.setdefault(int(b), hashlib.sha256())
                h.update(prf[bounds[b] : bounds[b + 1]].data)  # little-endian uint64
            np.ascontiguousarray(rows["fp"], "<u8").tofile(fp_out)
            np.ascontiguousarray(rows["c"]).tofile(codes_out)
    if same:
        raise duplicate_error(same, repeated)
    return {b: h.digest() for b, h in hashes.items()}


def _data_hashes(
    where: Path, dtype: np.dtype, width: int, counts: np.ndarray, rows: int
) -> dict[int, bytes]:
    """Pass 3: the SHA-256 of each bucket's fingerprints and then its codes (as 4-byte
    little-endian integers), in row order, read ``rows`` records at a time."""
    first = np.concatenate(([0], np.cumsum(counts)))
    out = {}
    for b in np.flatnonzero(counts):
        h = hashlib.sha256()
        for chunk in row_chunks(where / "fp", np.dtype("<u8"), 1, first[b], first[b + 1], rows):
            h.update(chunk.data)
        for chunk in row_chunks(where / "codes", dtype, width, first[b], first[b + 1], rows):
            h.update(np.ascontiguousarray(chunk, "<i4").data)
        out[int(b)] = h.digest()
    return out


class FileAligned:
    """A party's records in row order in a temporary file: bucket b's are records
    [first_b, first_b + count_b), the first C of them in padded rows b C onward and the rest
    in the spill rows (held in memory: there are none but with probability 2^-40)."""

    def __init__(
        self,
        folder: ScratchFolder,
        dtype: np.dtype,
        width: int,
        counts: np.ndarray,
        capacity: int,
        record_digest: bytes,
        data_digest: str,
        chunk_rows: int,
    ) -> None:
        self._folder = folder  # removed with this object
        self._chunk_rows = chunk_rows
        self._path = Path(folder.name) / "codes"
        self._dtype, self._width, self._capacity = dtype, width, capacity
        self.n = int(counts.sum())
        self.record_digest, self.data_digest = record_digest, data_digest
        self._first = np.concatenate(([0], np.cumsum(counts)))
        self._home = np.minimum(counts, capacity)
        over = [
            np.arange(self._first[b] + capacity, self._first[b + 1], dtype=np.int64)
            for b in np.flatnonzero(counts > capacity)
        ]
        self._spill_slots = spill_slots(counts, capacity)
        with open(self._path, "rb") as fh:
            self._spill_codes = np.concatenate(
                [read_rows(fh, dtype, width, int(r[0]), int(r[-1]) + 1) for r in over]
                or [np.empty((0, width), dtype)]
            )

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`vertimrf.party.records.aligned.slot_columns`)."""
        c = self._capacity
        out = np.full((r1 - r0, self._width), -1, np.int32)
        with open(self._path, "rb") as fh:
            for b in range(r0 // c, (r1 - 1) // c + 1):
                lo = max(r0, b * c)
                t0, t1 = lo - b * c, min(min(r1, (b + 1) * c) - b * c, int(self._home[b]))
                if t1 > t0:
                    i0 = int(self._first[b]) + t0
                    out[lo - r0 : lo - r0 + t1 - t0] = (
                        read_rows(fh, self._dtype, self._width, i0, i0 + t1 - t0) + offsets
                    )
        i0, i1 = np.searchsorted(self._spill_slots, (r0, r1))
        out[self._spill_slots[i0:i1] - r0] = self._spill_codes[i0:i1] + offsets
        return out

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``, summed chunk by chunk."""
        chunks = row_chunks(self._path, self._dtype, self._width, 0, self.n, self._chunk_rows)
        return chunk_histograms(chunks, attrs, sizes)
