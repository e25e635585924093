"""A party's partial record sets from a file, sorted in memory against through part files,
in the same run (issue 62: "slots sorted in memory when the records fit one part").

A Parquet table of 1M records (an ID and two columns), max_rows 2^20 (one part): the token
list made (records and dummies) and the records laid out at a uniform injection of slots,
by ``FileTable.partial_records`` (in memory, since max_rows fits a part) and by the part
files (``part_rows`` one less than max_rows, so the same records take the file path), and in
memory with numpy's stable argsort in place of ``stable_order`` (the sorts before it).
CPU seconds, best of 3, alternating.

    python benchmarks/bench_slots_in_memory.py [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from vertimrf.domain import DomainSpec
from vertimrf.party.records import aligned, slot_table, tokens
from vertimrf.party.records.file_table import FileTable
from vertimrf.party.records.tokens import TokenKeys
from vertimrf.protocol.factory import from_preset
from vertimrf.protocol.methods import secure_plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, load_average, machine, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ROWS, MAX_ROWS = 1_000_000, 1 << 20
ADMIT, ASSIGNMENT = bytes(range(32)), bytes(32)


def _run(path: Path, part_rows: int) -> float:
    spec_all = DomainSpec.from_dict({"a0": 4, "a1": 3, "b0": 5})
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-6, spec=spec_all,
        parties=[("A", ["a0", "a1"]), ("B", ["b0"])], method="secure", max_rows=MAX_ROWS,
        record_sets="partial",
    )  # fmt: skip
    plan, spec = secure_plan(cfg), spec_all.subset(["a0", "a1"])
    keys = TokenKeys(bytes(range(32, 64)), bytes(range(64, 96)), cfg.run_context())
    start = time.process_time()
    table = FileTable(path, part_rows=part_rows).check("A", spec, "id")
    records = table.partial_records(spec, keys, plan, 0)
    count, blocks = records.tokens(ADMIT)
    for _ in blocks():
        pass
    slots = np.random.default_rng(0).permutation(plan.max_rows)[:count].astype(np.int64)
    records.lay_out(iter([slots]), count, ADMIT, ASSIGNMENT)
    return time.process_time() - start


def _numpy_stable(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    return order, keys[order]


def _stable_sorts(path: Path) -> float:
    """The in-memory path with every ``stable_order`` numpy's stable argsort."""
    modules, real = (aligned, slot_table, tokens), tokens.stable_order
    for module in modules:
        module.stable_order = _numpy_stable  # type: ignore[attr-defined]
    try:
        return _run(path, MAX_ROWS)
    finally:
        for module in modules:
            module.stable_order = real  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "a.parquet"
        frame = pd.DataFrame(
            {"id": rng.permutation(ROWS), "a0": rng.integers(0, 4, ROWS),
             "a1": rng.integers(0, 3, ROWS)}
        )  # fmt: skip
        frame.to_parquet(path)
        memory, files, stable = [], [], []
        for _ in range(3):
            memory.append(_run(path, MAX_ROWS))
            files.append(_run(path, MAX_ROWS - 1))
            stable.append(_stable_sorts(path))
    row = {"files_s": min(files), "memory_s": min(memory), "ratio": min(files) / min(memory),
           "stable_argsort_s": min(stable), "sort_ratio": min(stable) / min(memory)}  # fmt: skip
    commit = git_commit(ROOT)
    print(f"{machine()}, load {load_average()}, commit {commit}")
    print(
        f"1M records: part files {row['files_s']:.2f} s CPU, in memory {row['memory_s']:.2f} s, "
        f"{row['ratio']:.2f}x; in memory with numpy's stable argsort "
        f"{row['stable_argsort_s']:.2f} s ({row['sort_ratio']:.2f}x)"
    )
    meta = {"machine": machine(), "load": load_average(), "commit": commit}
    write_json(args.json, {**meta, **row})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
