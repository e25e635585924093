"""A party's table on a Dask ``distributed`` cluster (the optional extra
``vertimrf[dask]``); design notes in docs/design/party.md."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.encoding import TableEncoder
from vertimrf.errors import ConfigError
from vertimrf.io import atomic_open, atomic_write_text
from vertimrf.party.fine import column_counts
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.aligned import (
    BucketRows,
    HeldTable,
    align_buckets,
    bucket_counts,
    check_count,
    code_histogram,
    combine_digests,
    order_keys,
    record_set_key,
    slot_columns,
)
from vertimrf.party.records.frame import check_id_column, frame_table
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.kept_aligned import binding, source_digest
from vertimrf.party.records.slot_file import TokenFiles
from vertimrf.party.records.sorting import stable_order
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.party.registers import keyed_prf
from vertimrf.protocol.buckets import bucket_of
from vertimrf.protocol.costs import ALIGN_PART_ROWS

if TYPE_CHECKING:
    from vertimrf.protocol.secure.plan import SecurePlan

_FORMAT = "vertimrf-kept-aligned-dask/1"
_RECORD = "aligned.json"
_INSTALL = "install the Dask extra (pip install 'vertimrf[dask]')"


def _dask() -> tuple[Any, Any]:
    """The modules dask and dask.dataframe (ConfigError when not installed)."""
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise ConfigError(f"a table on Dask needs dask and distributed: {_INSTALL}.") from None
    return dask, dd


class DaskTable(HeldTable):
    """A party's table on a Dask cluster.

    Args:
        data: a Parquet dataset (a folder or a file) or a ``dask.dataframe.DataFrame``.
        client: the ``distributed.Client`` of this party's cluster.
    """

    def __init__(self, data: str | os.PathLike | Any, client: Any) -> None:
        _, dd = _dask()
        if isinstance(data, str | os.PathLike) and not os.path.exists(data):
            raise ConfigError(f"no Parquet dataset at {data}; give a folder or a file.")
        self._path = os.fspath(data) if isinstance(data, str | os.PathLike) else None
        if self._path is not None:
            data = dd.read_parquet(self._path)
        elif not isinstance(data, dd.DataFrame):
            raise ConfigError(
                f"a table on Dask is a Parquet dataset or a Dask DataFrame; got "
                f"{type(data).__name__}."
            )
        self._frame, self._client = data, client
        self._name, self._id_column, self._id_type = "", "", ""
        self._keep: Path | None = None

    def check(self, name: str, spec: DomainSpec, id_column: str, id_type: str = "") -> DaskTable:
        """This table as party ``name``'s over ``spec``: DomainError or ConfigError unless it
        has ``id_column`` and every column of ``spec``; its IDs of the declared ``id_type``
        (checked on every row as each partition is read, rows counted in the partition)."""
        columns = [str(c) for c in self._frame.columns]
        check_id_column(name, columns, id_column)
        missing = [c for c in spec.names if c not in columns]
        if missing:
            raise ConfigError(f"party {name!r}: the table on Dask lacks the columns {missing}.")
        self._name, self._id_column, self._id_type = name, id_column, id_type
        return self

    def keep(self, folder: Path) -> None:
        """Keep the aligned records in ``folder``: each worker writes the partitions it
        holds there (never through the party's process), and :meth:`align` then reads back
        those an earlier process kept for the same run, secret, party and dataset bytes. The
        workers must reach ``folder`` as they reach the dataset; a dataset given as a Dask
        DataFrame, not files, has no bytes to bind to and is aligned in every process."""
        self._keep = folder

    def align(
        self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan
    ) -> DaskAligned:
        """The records in the common row order: read back from the folder given to
        :meth:`keep` if kept there, else encoded, bucketed and aligned on the cluster
        (ConfigError when there are more than max_rows of them) and kept."""
        folder = self._keep
        source = None if folder is None else self.source()
        if folder is None or source is None:
            return self._align(spec, secret, context, plan)
        bound = binding(secret, context, self._name, self._id_column, source)
        kept = _load_kept(self._client, folder, bound, plan, secret, context)
        if kept is None:
            kept = self._align(spec, secret, context, plan)
            _keep(self._client, kept, folder, bound)
        return kept

    def source(self) -> str | None:
        """SHA-256 (hex) of the Parquet dataset's files, hashed on a worker; None for a
        Dask DataFrame given directly (no bytes to digest)."""
        if self._path is None:
            return None
        return str(self._client.submit(source_digest, self._path, pure=False).result())

    def one_way(self, spec: DomainSpec) -> list[np.ndarray]:
        """The count of every code of each column of ``spec`` over the table's records, each
        partition encoded and counted on its worker (only the counts come here)."""
        dask, _ = _dask()
        frame = self._frame[[self._id_column, *spec.names]]
        ids = self._id_column, self._id_type
        count = dask.delayed(_one_way)
        parts = [count(part, self._name, spec, *ids) for part in frame.to_delayed()]
        totals = [np.zeros(c.size, np.int64) for c in spec.columns]
        for counts in self._client.gather(self._client.compute(parts)):
            for total, n in zip(totals, counts, strict=True):
                total += n
        return totals

    def partial_records(
        self, spec: DomainSpec, keys: TokenKeys, plan: SecurePlan, index: int
    ) -> TokenFiles:
        """Partial record sets: party ``index``'s records sorted by token through temporary
        files of this process (:class:`~vertimrf.party.records.slot_file.TokenFiles`), the workers
        encoding one partition at a time and sending its codes and ID fingerprints here (so
        this process holds one partition's codes at a time)."""
        dask, _ = _dask()
        frame = self._frame[[self._id_column, *spec.names]]
        encode = dask.delayed(_records)
        ids = self._id_column, self._id_type
        parts = (encode(part, self._name, spec, *ids) for part in frame.to_delayed())
        batches = (self._client.compute(part).result() for part in parts)
        return TokenFiles(
            batches, TableEncoder(spec).dtype, len(spec.names), keys, plan, index,
            part_rows=ALIGN_PART_ROWS,
        )  # fmt: skip

    def _align(
        self, spec: DomainSpec, secret: bytes, context: bytes, plan: SecurePlan
    ) -> DaskAligned:
        dask, _ = _dask()
        keys = order_keys(secret, context)
        frame = self._frame[[self._id_column, *spec.names]]
        width = len(spec.names)
        meta = pd.DataFrame(
            {
                "prf": np.empty(0, np.uint64),
                "fp": np.empty(0, np.uint64),
                "bucket": np.empty(0, np.int64),
            }
            | {f"c{j}": np.empty(0, np.int32) for j in range(width)}
        )
        encoded = frame.map_partitions(
            _encode, self._name, spec, self._id_column, self._id_type, keys.k0, keys.k1,
            plan.buckets, meta=meta,
        )  # fmt: skip
        shuffled = encoded.shuffle(on="bucket", npartitions=plan.buckets).persist()
        parts = shuffled.to_delayed()
        delayed = dask.delayed
        counts = sum(dask.compute(*[delayed(_counts)(p, plan.buckets) for p in parts]))
        check_count(int(counts.sum()), plan.max_rows)
        aligned = [delayed(_align)(p, counts, plan.capacity, width) for p in parts]
        futures = self._client.compute(aligned)
        summaries = self._client.gather(self._client.map(_summary, futures))
        return DaskAligned(self._client, futures, summaries, counts, plan, secret, context)


def _save_part(rows: BucketRows, path: str) -> str:
    """Write one aligned partition to ``path`` (raw arrays in an ``.npz``, mode 0600, no
    pickle); the SHA-256 (hex) of the file."""
    buckets = sorted(rows.record_hashes)
    arrays = {
        "slots": rows.slots, "codes": rows.codes, "spilled": rows.spilled,
        "buckets": np.array(buckets, np.int64),
        "record_hashes": _hash_rows([rows.record_hashes[b] for b in buckets]),
        "data_hashes": _hash_rows([rows.data_hashes[b] for b in buckets]),
    }  # fmt: skip
    with atomic_open(path, sync=False) as fh:
        np.savez(fh, allow_pickle=False, **arrays)
    return source_digest(path)


def _hash_rows(hashes: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(hashes), np.uint8).reshape(len(hashes), 32)


def _load_part(path: str, digest: str) -> BucketRows:
    """The aligned partition kept in ``path``; ValueError unless the file's SHA-256 is
    ``digest``."""
    if source_digest(path) != digest:
        raise ValueError(f"{path} was altered")
    with np.load(path, allow_pickle=False) as z:
        buckets = [int(b) for b in z["buckets"]]
        records, data = (
            {b: bytes(h) for b, h in zip(buckets, z[name], strict=True)}
            for name in ("record_hashes", "data_hashes")
        )
        return BucketRows(z["slots"], z["codes"], z["spilled"], records, data)


def _keep(client: Any, aligned: DaskAligned, folder: Path, bound: str) -> None:
    """Have the workers write ``aligned``'s partitions into ``folder``, then record them
    there under the binding ``bound``; a worker that cannot write there only costs the
    next process an alignment (a one-line warning)."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)  # private: the party's records
    (folder / _RECORD).unlink(missing_ok=True)  # no record names half-written parts
    names = [f"part-{j:05d}.npz" for j in range(len(aligned.futures))]
    try:
        digests = client.gather(
            client.map(_save_part, aligned.futures, [str(folder / n) for n in names], pure=False)
        )
    except OSError as e:
        warnings.warn(
            f"the Dask workers could not keep the aligned records in {folder} ({e.strerror}): "
            "each step aligns the table again; give a state folder the workers reach.",
            stacklevel=2,
        )
        return
    record = {
        "format": _FORMAT, "binding": bound, "counts": aligned.counts.tolist(),
        "parts": [[n, d] for n, d in zip(names, digests, strict=True)],
        "record_digest": aligned.record_digest.hex(), "data": aligned.data_digest,
    }  # fmt: skip
    atomic_write_text(folder / _RECORD, json.dumps(record) + "\n")


def _load_kept(
    client: Any, folder: Path, bound: str, plan: SecurePlan, secret: bytes, context: bytes
) -> DaskAligned | None:
    """The records kept in ``folder`` under the binding ``bound``; None when there are
    none, or they are another run's, party's or dataset's, or were altered or cannot be
    read by the workers."""
    try:
        record = json.loads((folder / _RECORD).read_text(encoding="utf-8"))
        if record["format"] != _FORMAT or record["binding"] != bound:
            return None
        counts = np.array(record["counts"], np.int64)
        paths = [str(folder / name) for name, _ in record["parts"]]
        futures = client.map(_load_part, paths, [d for _, d in record["parts"]], pure=False)
        summaries = client.gather(client.map(_summary, futures))
        kept = DaskAligned(client, futures, summaries, counts, plan, secret, context)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    same = (kept.record_digest.hex(), kept.data_digest) == (record["record_digest"], record["data"])
    return kept if same and counts.size == plan.buckets else None


def _encode(
    frame: pd.DataFrame,
    name: str,
    spec: DomainSpec,
    id_column: str,
    id_type: str,
    k0: np.ndarray,
    k1: np.ndarray,
    buckets: int,
) -> pd.DataFrame:
    """One partition's codes, ID fingerprints, PRF values and buckets."""
    table, ids = frame_table(name, spec, frame, id_column)
    fp = record_fingerprints(ids, id_type, id_column)
    prf = keyed_prf(HashKeys(k0, k1), fp)
    out = {"prf": prf, "fp": fp, "bucket": bucket_of(prf, buckets)}
    out |= {f"c{j}": table.codes[:, j].astype(np.int32) for j in range(table.codes.shape[1])}
    return pd.DataFrame(out)


def _records(
    frame: pd.DataFrame, name: str, spec: DomainSpec, id_column: str, id_type: str
) -> tuple[np.ndarray, np.ndarray]:
    """One partition's codes and ID fingerprints."""
    table, ids = frame_table(name, spec, frame, id_column)
    return table.codes, record_fingerprints(ids, id_type, id_column)


def _one_way(
    frame: pd.DataFrame, name: str, spec: DomainSpec, id_column: str, id_type: str
) -> list[np.ndarray]:
    """One partition's count of every code of each column of ``spec``."""
    codes, _ = _records(frame, name, spec, id_column, id_type)
    return column_counts(codes, spec)


def _counts(frame: pd.DataFrame, buckets: int) -> np.ndarray:
    return bucket_counts(frame["prf"].to_numpy(np.uint64), buckets)


def _align(frame: pd.DataFrame, counts: np.ndarray, capacity: int, width: int) -> BucketRows:
    codes = frame[[f"c{j}" for j in range(width)]].to_numpy(np.int32)
    prf, fp = frame["prf"].to_numpy(np.uint64), frame["fp"].to_numpy(np.uint64)
    return align_buckets(prf, fp, codes.reshape(len(frame), width), counts, capacity)


@dataclass(frozen=True)
class _Summary:
    """What the party's process keeps of one aligned partition: its buckets' hashes, and
    its records that spilled past their bucket's capacity (rare)."""

    record_hashes: dict[int, bytes]
    data_hashes: dict[int, bytes]
    spill_slots: np.ndarray
    spill_codes: np.ndarray


def _summary(rows: BucketRows) -> _Summary:
    spilled = rows.spilled
    return _Summary(rows.record_hashes, rows.data_hashes, rows.slots[spilled], rows.codes[spilled])


def _bucket(rows: BucketRows, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The partition's records at home in padded rows lo:hi (slots, codes)."""
    i0, i1 = np.searchsorted(rows.slots, (lo, hi))
    home = ~rows.spilled[i0:i1]
    return rows.slots[i0:i1][home], rows.codes[i0:i1][home]


def _histograms(
    rows: BucketRows, attrs: Sequence[tuple[int, ...]], sizes: tuple[int, ...]
) -> list[np.ndarray]:
    return [code_histogram(rows.codes, a, sizes) for a in attrs]


class DaskAligned:
    """A party's aligned records held by its Dask workers, one partition per future; a
    bucket's codes are fetched when its rows are streamed (one bucket held at a time)."""

    def __init__(
        self,
        client: Any,
        futures: list[Any],
        summaries: list[_Summary],
        counts: np.ndarray,
        plan: SecurePlan,
        secret: bytes,
        context: bytes,
    ) -> None:
        self._client, self.futures, self.counts = client, futures, counts
        self._capacity = plan.capacity
        self.n = int(counts.sum())
        self._owner = {b: j for j, s in enumerate(summaries) for b in s.record_hashes}
        spills = [s for s in summaries if s.spill_slots.size]
        width = summaries[0].spill_codes.shape[1] if summaries else 0
        slots = np.concatenate([s.spill_slots for s in spills]) if spills else np.empty(0, np.int64)
        codes = (
            np.concatenate([s.spill_codes for s in spills])
            if spills
            else np.empty((0, width), np.int32)
        )
        order, self._spill_slots = stable_order(slots)
        self._spill_codes = codes[order]
        records = {b: h for s in summaries for b, h in s.record_hashes.items()}
        data = {b: h for s in summaries for b, h in s.data_hashes.items()}
        self.record_digest, self.data_digest = combine_digests(
            records, data, plan.buckets, record_set_key(secret, context)
        )
        self._held: tuple[int, np.ndarray, np.ndarray] | None = None

    def _rows(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Bucket b's records (slots, codes), with those that spilled into its rows."""
        if self._held is None or self._held[0] != b:
            lo, hi = b * self._capacity, (b + 1) * self._capacity
            if b in self._owner:
                future = self._client.submit(_bucket, self.futures[self._owner[b]], lo, hi)
                slots, codes = future.result()
            else:
                slots, codes = np.empty(0, np.int64), self._spill_codes[:0]
            i0, i1 = np.searchsorted(self._spill_slots, (lo, hi))
            if i1 > i0:
                slots = np.concatenate((slots, self._spill_slots[i0:i1]))
                codes = np.concatenate((codes, self._spill_codes[i0:i1]))
                order, slots = stable_order(slots)
                codes = codes[order]
            self._held = (b, slots, codes)
        return self._held[1], self._held[2]

    def columns(self, r0: int, r1: int, offsets: np.ndarray) -> np.ndarray:
        """The one-hot columns of padded rows r0:r1 (see
        :func:`vertimrf.party.records.aligned.slot_columns`)."""
        c, parts = self._capacity, []
        for b in range(r0 // c, (r1 - 1) // c + 1):
            slots, codes = self._rows(b)
            parts.append(slot_columns(slots, codes, max(r0, b * c), min(r1, (b + 1) * c), offsets))
        return np.concatenate(parts) if len(parts) != 1 else parts[0]

    def histograms(self, attrs: list[tuple[int, ...]], sizes: tuple[int, ...]) -> list[np.ndarray]:
        """Exact counts on each attribute set of ``attrs``, summed over the partitions."""
        if not attrs:
            return []
        parts = self._client.gather(
            [self._client.submit(_histograms, f, attrs, sizes) for f in self.futures]
        )
        return [sum(p[i] for p in parts) for i in range(len(attrs))]
