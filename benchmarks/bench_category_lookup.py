"""A party's categorical CSV columns encoded by arrow's lookup against the encoder's pandas
path, in the same run (issue 62's "encode codes" phase).

Per column: 16 batches of 65,536 rows (1M rows) of 12 text categories, of 9 integer
categories, and of 9 integer categories typed int64 (as Parquet gives them, encoded by a table
from integer to code), CPU seconds (best of 5), each path on the same batches. Whole file: a
1M-row CSV of 3 text, 2 integer and 2 numeric columns and an integer ID, read and encoded by
``read_party_table`` with the lookup and without it (the encoder's path for every batch), and
read as text by pyarrow alone (the part no encoder can remove).

    python benchmarks/bench_category_lookup.py [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pa_csv

from vertimrf.domain import ColumnSpec, DomainSpec
from vertimrf.party.records import table_input
from vertimrf.party.records.table_input import _Column, read_party_table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_cpu, git_commit, load_average, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ROWS, BATCH = 1 << 20, 1 << 16
TEXT = tuple(f"v{i}" for i in range(12))
INTS = tuple(range(9))


def _column(
    spec: ColumnSpec, batches: list[pa.ChunkedArray], lookup: bool, typed: bool = False
) -> float:
    def run() -> None:
        column = _Column(spec, typed=typed)
        if not lookup:
            column._lookup, column._ints = None, None
        for batch in batches:
            column.encode(batch)

    return best_cpu(run, 5)


def _whole(path: Path, spec: DomainSpec, lookup: bool) -> float:
    real = table_input._lookup

    def run() -> None:
        if not lookup:
            table_input._lookup = lambda spec, kind: None  # type: ignore[assignment]
        try:
            read_party_table(path, spec, "rid", party="A")
        finally:
            table_input._lookup = real

    return best_cpu(run, 3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    rows: list[dict] = []
    columns = {
        "text": (ColumnSpec("t", "categorical", TEXT), [str(v) for v in TEXT]),
        "integer": (ColumnSpec("i", "categorical", INTS), [str(v) for v in INTS]),
    }
    for kind, (spec, cells) in columns.items():
        batches = [
            pa.chunked_array([pa.array(rng.choice(cells, BATCH).tolist(), pa.string())])
            for _ in range(ROWS // BATCH)
        ]
        base, new = _column(spec, batches, False), _column(spec, batches, True)
        rows.append({"what": f"one {kind} column, 1M rows", "encoder_s": base, "lookup_s": new})
    typed = [pa.chunked_array([pa.array(rng.choice(INTS, BATCH), pa.int64())]) for _ in range(16)]
    spec = columns["integer"][0]
    base, new = _column(spec, typed, False, True), _column(spec, typed, True, True)
    rows.append({"what": "one int64 column (Parquet), 1M rows", "encoder_s": base, "lookup_s": new})
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.csv"
        frame = pd.DataFrame(
            {
                "rid": np.arange(ROWS),
                **{f"t{j}": rng.choice(TEXT, ROWS) for j in range(3)},
                **{f"i{j}": rng.choice(INTS, ROWS) for j in range(2)},
                "x0": rng.normal(40, 10, ROWS).round(1).clip(0, 99),
                "x1": rng.integers(0, 100_000, ROWS),
            }
        )
        frame.to_csv(path, index=False)
        spec = DomainSpec(
            [
                *(ColumnSpec(f"t{j}", "categorical", TEXT) for j in range(3)),
                *(ColumnSpec(f"i{j}", "categorical", INTS) for j in range(2)),
                ColumnSpec("x0", "numeric", None, 0, 99, 16),
                ColumnSpec("x1", "numeric", None, 0, 100_000, 32),
            ]
        )
        base, new = _whole(path, spec, False), _whole(path, spec, True)
        text = pa_csv.ConvertOptions(column_types={c: pa.string() for c in frame.columns})
        read = best_cpu(lambda: pa_csv.read_csv(path, convert_options=text), 3)
        rows.append({"what": "the whole CSV, 1M rows", "encoder_s": base, "lookup_s": new,
                     "read_s": read})  # fmt: skip
    commit = git_commit(ROOT)
    print(f"{machine()}, load {load_average()}, commit {commit}")
    print("| what | encoder's path, CPU s | lookup, CPU s | ratio |\n|---|---:|---:|---:|")
    for r in rows:
        r["ratio"] = r["encoder_s"] / r["lookup_s"]
        print(f"| {r['what']} | {r['encoder_s']:.3f} | {r['lookup_s']:.3f} | {r['ratio']:.1f}x |")
    print(f"the same CSV read as text by pyarrow alone: {rows[-1]['read_s']:.3f} CPU s")
    if args.json is not None:
        meta = {"machine": machine(), "load": load_average(), "commit": commit}
        args.json.write_text(json.dumps({**meta, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
