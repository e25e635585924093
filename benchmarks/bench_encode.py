"""Benchmark of LocEnc before DP noise: registers + geometric values.

Times the public entry (``compute_registers`` then ``registers_to_geometric``, gamma = 1) on
Adult's party A (first 8 columns, n = 45,222) at t = 2000 (SipHash-2-4 and xxh64) and
t = 16,000, against a per-record Python baseline in the same run, and (without ``--quick``)
on a seeded million-row table in a subprocess whose peak RSS is reported.

    python benchmarks/bench_encode.py [--quick] --json benchmarks/results/bench_encode.json

Times are medians of several runs after a warm-up call; the warm-up (JIT compile, or loading
the on-disk cache) is reported separately, and the full run also measures a cold compile in
a subprocess with an empty Numba cache. The baseline's repetitions alternate with the t = 2000
default-hash runs, so both sides of the ratio see the same machine speed (this VM drifts by up
to 30 % over minutes); the ratio is also given as the ratio of the fastest run on each side
and per round.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
import pandas as pd
import xxhash

from vertimrf.domain import Domain
from vertimrf.party.keys import HashKeys
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.registers import compute_registers, registers_to_geometric

REPO = Path(__file__).resolve().parents[1]
ADULT_CSV = REPO.parent / "shared" / "data" / "adult.csv"
PARTY_A_SIZES = [16, 7, 16, 16, 16, 7, 14, 6]
# A fixed, public benchmark secret: reproducible keys, never used for real data.
BENCH_SECRET = b"vertimrf benchmark secret, not for real use!"
MILLION_ROWS = 1_000_000
MILLION_SEED = 20240611
MILLION_SIZES_RANGE = (2, 50)


def load_party_a() -> np.ndarray:
    """Codes (n, 8) uint8 of Adult's first 8 columns."""
    try:
        from vertimrf.datasets import load_dataset
    except ImportError:
        frame = pd.read_csv(ADULT_CSV)
    else:
        frame, _ = load_dataset("adult")
    return frame.iloc[:, : len(PARTY_A_SIZES)].to_numpy().astype(np.uint8)


def encode(codes, domain, fps, keys, hash_name) -> np.ndarray:
    """The timed unit: LocEnc registers and their geometric values."""
    return registers_to_geometric(compute_registers(codes, domain, fps, keys, hash=hash_name))


def time_runs(fn, runs: int) -> tuple[float, list[float]]:
    """Time of a first (warm-up) call, then ``runs`` timed calls."""
    start = time.perf_counter()
    fn()
    first = time.perf_counter() - start
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return first, times


def reference_repetition(columns: list[list[int]], sizes: list[int], seed: int) -> list[list[int]]:
    """One repetition the reference code's way: per attribute (value sets), per record,
    a Python xxh32 of the row id, its geometric value, and a max per value."""
    log_q = math.log(0.5)
    sketches = []
    for column, size in zip(columns, sizes, strict=True):
        best = [0] * size
        for row, value in enumerate(column):
            h = xxhash.xxh32_intdigest(row.to_bytes(8, "little"), seed=seed)
            g = math.ceil(math.log(h / 2**32) / log_q) if h else 33
            if g > best[value]:
                best[value] = g
        sketches.append(best)
    return sketches


def once_per_record_repetition(columns, sizes, seed) -> list[list[int]]:
    """A kinder Python baseline: one hash per record, then the d per-value maxima."""
    log_q = math.log(0.5)
    best = [[0] * size for size in sizes]
    rows = list(zip(*columns, strict=True))
    for row, values in enumerate(rows):
        h = xxhash.xxh32_intdigest(row.to_bytes(8, "little"), seed=seed)
        g = math.ceil(math.log(h / 2**32) / log_q) if h else 33
        for j, value in enumerate(values):
            if g > best[j][value]:
                best[j][value] = g
    return best


def baseline_columns(codes: np.ndarray) -> list[list[int]]:
    return [codes[:, j].tolist() for j in range(codes.shape[1])]


def time_baseline(fn, codes: np.ndarray, reps: int) -> list[float]:
    """Seconds per repetition of a Python baseline, after one warm-up repetition."""
    columns = baseline_columns(codes)
    fn(columns, PARTY_A_SIZES, 0)
    times = []
    for seed in range(1, reps + 1):
        start = time.perf_counter()
        fn(columns, PARTY_A_SIZES, seed)
        times.append(time.perf_counter() - start)
    return times


def time_against_baseline(
    fn, codes: np.ndarray, runs: int
) -> tuple[float, list[float], list[float]]:
    """Warm-up of ``fn``, then ``runs`` rounds of one reference-baseline repetition and one
    call of ``fn``, so that both sides of the ratio are timed over the same stretch of machine
    time (this VM's speed drifts by up to 30 % over minutes)."""
    columns = baseline_columns(codes)
    reference_repetition(columns, PARTY_A_SIZES, 0)
    warmup, _ = time_runs(fn, 0)
    base, own = [], []
    for seed in range(1, runs + 1):
        start = time.perf_counter()
        reference_repetition(columns, PARTY_A_SIZES, seed)
        base.append(time.perf_counter() - start)
        start = time.perf_counter()
        fn()
        own.append(time.perf_counter() - start)
    return warmup, base, own


def summary(times: list[float]) -> dict:
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
        "runs": len(times),
    }


def million_rows_child(runs: int) -> None:
    """Run in a subprocess: encode a seeded million-row table, print timings and peak RSS."""
    rng = np.random.default_rng(MILLION_SEED)
    sizes = rng.integers(MILLION_SIZES_RANGE[0], MILLION_SIZES_RANGE[1] + 1, 8).tolist()
    codes = np.stack([rng.integers(0, s, MILLION_ROWS) for s in sizes], axis=1).astype(np.uint8)
    domain = Domain.from_sizes(sizes)
    keys = HashKeys.from_secret(BENCH_SECRET, 2000)
    start = time.perf_counter()
    fps = record_fingerprints(np.arange(MILLION_ROWS, dtype=np.int64))
    fp_int = time.perf_counter() - start
    small = slice(0, 1000)
    first, _ = time_runs(lambda: encode(codes[small], domain, fps[small], keys, None), 0)
    _, times = time_runs(lambda: encode(codes, domain, fps, keys, None), runs)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "sizes": sizes,
                "times": times,
                "warmup_seconds": first,
                "fingerprint_int_seconds": fp_int,
                "peak_rss_mb": peak_mb,
            }
        )
    )


def run_million(runs: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--million-child", str(runs)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_string_fingerprints() -> float:
    """Seconds to fingerprint a million distinct string IDs."""
    ids = pd.Series(np.arange(MILLION_ROWS)).astype(str).radd("rec-")
    start = time.perf_counter()
    record_fingerprints(ids)
    return time.perf_counter() - start


def cold_compile_child() -> None:
    """Run in a subprocess with an empty cache: time of the first call (compiles the uint8-code
    encode kernel, which holds both hashes, and the gamma = 1 geometric kernel)."""
    codes = np.zeros((10, 2), dtype=np.uint8)
    fps = np.arange(10, dtype=np.uint64)
    keys = HashKeys.from_secret(BENCH_SECRET, 3)
    start = time.perf_counter()
    encode(codes, Domain.from_sizes([2, 2]), fps, keys, None)
    first = time.perf_counter() - start
    start = time.perf_counter()
    encode(codes.astype(np.uint16), Domain.from_sizes([2, 2]), fps, keys, None)
    print(json.dumps({"uint8_codes": first, "uint16_codes": time.perf_counter() - start}))


def run_cold_compile() -> dict:
    with tempfile.TemporaryDirectory() as cache:
        out = subprocess.run(
            [sys.executable, __file__, "--cold-compile-child"],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "NUMBA_CACHE_DIR": cache},
        )
    return json.loads(out.stdout.strip().splitlines()[-1])


def markdown(results: dict) -> str:
    env = results["environment"]
    rows = [
        ("Adult A, t=2000, SipHash-2-4 (default)", results["detail"]["t2000"], "<= 0.45 s"),
        ("Adult A, t=2000, xxh64", results["detail"]["t2000_xxh64"], "<= 0.25 s"),
        ("Adult A, t=16000, SipHash-2-4", results["detail"]["t16000"], ""),
    ]
    if "million" in results["detail"]:
        rows.append(
            ("1M rows x 8 cols, t=2000, SipHash-2-4", results["detail"]["million"], "<= 8 s")
        )
    lines = [
        "# bench_encode: LocEnc registers + geometric values",
        "",
        f"{env['cpu_count']} cores ({env['numba_threads']} Numba threads), "
        f"load average before/after: {env['loadavg_before']} / {env['loadavg_after']}. "
        "Median (min-max) of the runs after a warm-up call.",
        "",
        "| case | cores | median s | min s | max s | runs | target |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, stats, target in rows:
        lines.append(
            f"| {name} | {env['cpu_count']} | {stats['median']:.3f} | {stats['min']:.3f} | "
            f"{stats['max']:.3f} | {stats['runs']} | {target} |"
        )
    base = results["detail"]["baseline"]
    lines += [
        "",
        "Python baseline (reference code's way: per repetition, per attribute, per record a "
        "Python xxh32 + geometric value + max), timed in rounds alternating with the t=2000 "
        "default-hash runs, median after a warm-up repetition: "
        f"{base['reference_seconds_per_rep']:.3f} s per repetition, "
        f"{base['reference_seconds_t2000']:.0f} s scaled to t=2000 "
        f"-> ratio **{results['baseline_ratio_t2000']:.0f}x** (target >= 1000x); "
        f"ratio of the fastest runs on each side {base['ratio_of_minima_t2000']:.0f}x, "
        f"per-round ratios {min(base['ratio_per_round_t2000']):.0f}-"
        f"{max(base['ratio_per_round_t2000']):.0f}x "
        f"(baseline repetitions ranged {min(base['reference_seconds_per_rep_all']):.3f}-"
        f"{max(base['reference_seconds_per_rep_all']):.3f} s).",
        f"Kinder baseline (one hash per record): {base['once_seconds_per_rep']:.3f} s per "
        f"repetition -> ratio {base['once_ratio_t2000']:.0f}x.",
        "",
        f"Warm-up call (cache load or compile) in this process: "
        f"{results['detail']['warmup_seconds']:.2f} s.",
    ]
    if "cold_compile_seconds" in results["detail"]:
        cold = results["detail"]["cold_compile_seconds"]
        lines.append(
            "Cold compile (empty Numba cache, subprocess; one kernel holds both hashes): "
            f"first call {cold['uint8_codes']:.1f} s (uint8 codes), "
            f"then {cold['uint16_codes']:.1f} s more for uint16 codes."
        )
    if "million" in results["detail"]:
        mil = results["detail"]["million"]
        lines += [
            f"Million rows (domain sizes {mil['sizes']}): peak RSS "
            f"**{results['million_rows_peak_mb']:.0f} MB** (ru_maxrss of the whole benchmark "
            "subprocess: interpreter, Numba, table, fingerprints and outputs); "
            f"record_fingerprints of 1M int IDs {mil['fingerprint_int_seconds']:.3f} s, "
            f"of 1M str IDs {results['detail']['fingerprint_1m_str_seconds']:.3f} s.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the million-row table")
    parser.add_argument("--json", type=Path, help="write results as JSON here (and .md beside)")
    parser.add_argument("--million-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--cold-compile-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.million_child is not None:
        million_rows_child(args.million_child)
        return
    if args.cold_compile_child:
        cold_compile_child()
        return

    loadavg_before = [round(x, 2) for x in os.getloadavg()]
    codes = load_party_a()
    domain = Domain.from_sizes(PARTY_A_SIZES)
    fps = record_fingerprints(np.arange(codes.shape[0]))
    keys_2000 = HashKeys.from_secret(BENCH_SECRET, 2000)
    keys_16000 = HashKeys.from_secret(BENCH_SECRET, 16_000)
    runs = 5 if args.quick else 9

    warmup, ref_reps, t2000 = time_against_baseline(
        lambda: encode(codes, domain, fps, keys_2000, None), codes, runs
    )
    _, t2000_xxh = time_runs(lambda: encode(codes, domain, fps, keys_2000, "xxh64"), runs)
    _, t16000 = time_runs(lambda: encode(codes, domain, fps, keys_16000, None), 3)
    once_rep = statistics.median(time_baseline(once_per_record_repetition, codes, 3))
    ref_rep = statistics.median(ref_reps)

    detail = {
        "t2000": summary(t2000),
        "t2000_xxh64": summary(t2000_xxh),
        "t16000": summary(t16000),
        "warmup_seconds": warmup,
        "baseline": {
            "reference_seconds_per_rep": ref_rep,
            "reference_seconds_t2000": ref_rep * 2000,
            "once_seconds_per_rep": once_rep,
            "once_ratio_t2000": once_rep * 2000 / statistics.median(t2000),
            "reference_seconds_per_rep_all": ref_reps,
            "ratio_of_minima_t2000": min(ref_reps) * 2000 / min(t2000),
            "ratio_per_round_t2000": [b * 2000 / e for b, e in zip(ref_reps, t2000, strict=True)],
        },
    }
    results = {
        "t2000_seconds": statistics.median(t2000),
        "t2000_xxh64_seconds": statistics.median(t2000_xxh),
        "t16000_seconds": statistics.median(t16000),
        "baseline_ratio_t2000": ref_rep * 2000 / statistics.median(t2000),
    }
    if not args.quick:
        million = run_million(3)
        detail["million"] = {**summary(million["times"]), **million}
        detail["cold_compile_seconds"] = run_cold_compile()
        detail["fingerprint_1m_str_seconds"] = time_string_fingerprints()
        results["million_rows_seconds"] = statistics.median(million["times"])
        results["million_rows_peak_mb"] = million["peak_rss_mb"]
    results["environment"] = {
        "cpu_count": os.cpu_count(),
        "numba_threads": numba.get_num_threads(),
        "loadavg_before": loadavg_before,
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "numba": numba.__version__,
        "quick": args.quick,
    }
    results["detail"] = detail

    report = markdown(results)
    print(report)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n")
        args.json.with_suffix(".md").write_text(report)


if __name__ == "__main__":
    main()
