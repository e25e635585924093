"""The synthetic CSV's rows written by pandas' ``to_csv`` (the writer before) and by Arrow
(:func:`vertimrf.synth.csv_rows.write_rows`), in the same run (issue 62, item 3).

A 1M-row Adult-like synthetic frame, as the server writes it: 16 chunks of 65,536 rows, each
as ``decode`` gives it (9 text categories, 2 with about 5% empty cells, and 6 integer
columns); then the same with 2 float columns added (numeric columns decoded inside their
bins). CPU seconds (``time.process_time``) of writing every chunk to /dev/null, the two
writers interleaved (a warm-up each, then 5 rounds), medians and their ratio; the two
outputs are checked to be the same bytes.

    python benchmarks/bench_csv_writer.py [--json OUT.json] [--md OUT.md]
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from vertimrf.synth.csv_rows import write_rows

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, load_average, run_head, write_results  # noqa: E402

ROWS, CHUNK, REPEATS = 1 << 20, 1 << 16, 5
TEXT = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Masters"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": ["United-States", "Cambodia", "England", "Puerto-Rico", "Canada"],
    "income": ["<=50K", ">50K"],
}
EMPTY = ("workclass", "occupation")
INTS = {
    "age": (17, 91),
    "fnlwgt": (12_285, 1_484_706),
    "education-num": (1, 17),
    "capital-gain": (0, 100_000),
    "capital-loss": (0, 4_357),
    "hours-per-week": (1, 100),
}


def _chunk(rng: np.random.Generator, floats: bool) -> pd.DataFrame:
    """One chunk, as ``decode`` gives it: text categories by ``pd.Index.take``."""
    data: dict[str, object] = {}
    for name, values in TEXT.items():
        index = pd.Index([*values, np.nan] if name in EMPTY else values)
        codes = rng.integers(0, len(values), CHUNK)
        if name in EMPTY:
            codes[rng.random(CHUNK) < 0.05] = len(values)
        data[name] = index[codes]
    for name, (low, high) in INTS.items():
        data[name] = rng.integers(low, high, CHUNK)
    if floats:
        data["hours-exact"] = rng.uniform(1, 100, CHUNK)
        data["gain-share"] = rng.uniform(0, 1, CHUNK) * 10.0 ** rng.integers(-6, 1, CHUNK)
    return pd.DataFrame(data)


def _pandas(fh: IO[bytes], chunk: pd.DataFrame) -> None:
    chunk.to_csv(fh, index=False, header=False)  # the writer before


def _cpu(write: Callable, chunks: list[pd.DataFrame]) -> Callable[[int], float]:
    def run(_: int) -> float:
        with open(os.devnull, "wb") as fh:
            start = time.process_time()
            for chunk in chunks:
                write(fh, chunk)
            return time.process_time() - start

    return run


def _bytes(write: Callable, chunks: list[pd.DataFrame]) -> bytes:
    fh = io.BytesIO()
    for chunk in chunks:
        write(fh, chunk)
    return fh.getvalue()


def _markdown(head: dict, rows: list[dict]) -> str:
    lines = [
        "# The synthetic CSV's rows: pandas' to_csv against Arrow (issue 62, item 3)",
        "",
        f"`{head['command']}` at {head['commit']}; {head['machine']}; load average "
        f"{head['load_start']} at the start, {head['load_end']} at the end.",
        "",
        f"{ROWS:,} rows in {ROWS // CHUNK} chunks of {CHUNK:,} (as the server writes them), "
        "written to /dev/null; CPU seconds (time.process_time), the writers interleaved, "
        f"median of {REPEATS} rounds after a warm-up each. The header (written by pandas in "
        "both) is not timed.",
        "",
        "| frame | pandas to_csv, CPU s | Arrow rows, CPU s | ratio | same bytes |",
        "|---|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['frame']} | {r['pandas_s']:.3f} | {r['arrow_s']:.3f} | "
            f"**{r['ratio']:.1f}x** | {'yes' if r['same_bytes'] else 'NO'} |"
        )
    lines += [
        "",
        "Each column becomes one Arrow array of its cells' text (integers cast, each text "
        "category quoted once where the csv module would quote it, float64 as repr writes it: "
        "Arrow's shortest digits laid out by `vertimrf.kernels.float_text.repr_floats`), the "
        "rows are their join. The bytes are pandas' (the test `tests/synth/test_csv_rows.py` "
        "compares them on ints, floats, booleans, quoted text, categories and empty cells); "
        "dtypes Arrow does not write the same way (datetime64, float32, nullable floats, text "
        "mixed with numbers) are written by pandas, as before.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args(argv)
    head = {**run_head(__file__, argv), "load_start": load_average()}
    rows = []
    for floats in (False, True):
        rng = np.random.default_rng(62)
        chunks = [_chunk(rng, floats) for _ in range(ROWS // CHUNK)]
        same = _bytes(_pandas, chunks) == _bytes(write_rows, chunks)
        timed = interleaved(_cpu(_pandas, chunks), _cpu(write_rows, chunks), REPEATS)
        rows.append(
            {
                "frame": "Adult-like, 9 text + 6 int" + (" + 2 float" if floats else ""),
                "pandas_s": timed["first_median"],
                "arrow_s": timed["second_median"],
                "ratio": timed["first_median"] / timed["second_median"],
                "same_bytes": same,
                "pandas_runs": timed["first"],
                "arrow_runs": timed["second"],
            }
        )
    head["load_end"] = load_average()
    write_results(args.json, args.md, head, rows, _markdown)
    return 0 if all(r["same_bytes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
