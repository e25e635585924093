"""What a dealer-free cross product built on packed Paillier would cost on this machine, from
measured big-integer operations (gmpy2), against the dealer product's online work on the same
shape.

The design costed (one of the options the two-organisation product weighs): party B encrypts
each record's one-hot block (``k_b`` columns) in packed slots; party A multiplies each record's
ciphertexts into the accumulator of its own value, per attribute, masks every slot with a
random value ``kappa`` bits wider than any count, re-randomises and returns; B decrypts. A slot
holds a count (at most ``max_rows``) plus its mask without carrying into the next slot, so it
is ``log2(max_rows) + 1 + kappa + 1`` bits wide. Per-operation CPU seconds are measured (best
of a few repeats) and multiplied out: nothing here runs the protocol.

Operations measured, for a modulus n of ``--bits`` bits (ciphertexts mod n^2):
- ``mul``: one product of two ciphertexts (the aggregation's step and the online encryption's);
- ``powmod``: a fresh randomiser r^n mod n^2, computed plainly;
- ``powmod_crt``: the same by the Chinese remainder theorem (only the key's owner can);
- ``fixed_base``: h^(n x) from a precomputed table of a fixed base (x of half n's bits, comb
  with 8-bit windows): the randomisers a party can make before its data exists;
- ``decrypt``: one decryption by CRT.

The key is made with gmpy2's ``next_prime`` from OS randomness: for measuring, not for use.

    python benchmarks/bench_paillier_cost.py --json J --md M
"""

from __future__ import annotations

import argparse
import math
import secrets
import sys
import time
from pathlib import Path

import gmpy2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_cpu, load_average, run_head, write_results  # noqa: E402

from vertimrf.kernels.secure import matmul_tn_u64  # noqa: E402

WINDOW = 8  # bits per comb window of the fixed-base table
BASELINE_ROWS = 1 << 16  # the dealer product is timed on this many rows, then scaled


def _prime(bits: int) -> gmpy2.mpz:
    return gmpy2.next_prime(gmpy2.mpz(secrets.randbits(bits)) | (gmpy2.mpz(1) << (bits - 1)))


def _key(bits: int) -> tuple[gmpy2.mpz, gmpy2.mpz]:
    while True:
        p, q = _prime(bits // 2), _prime(bits // 2)
        if p != q and gmpy2.gcd(p * q, (p - 1) * (q - 1)) == 1:
            return p, q


def _table(base: gmpy2.mpz, exp_bits: int, mod: gmpy2.mpz) -> list[list[gmpy2.mpz]]:
    """table[j][d] = base^(d 2^(WINDOW j)) mod ``mod``."""
    out = []
    step = base
    for _ in range(math.ceil(exp_bits / WINDOW)):
        row = [gmpy2.mpz(1)]
        for _ in range((1 << WINDOW) - 1):
            row.append(row[-1] * step % mod)
        out.append(row)
        step = row[-1] * step % mod
    return out


def _fixed_power(table: list[list[gmpy2.mpz]], x: int, mod: gmpy2.mpz) -> gmpy2.mpz:
    acc = gmpy2.mpz(1)
    mask = (1 << WINDOW) - 1
    for row in table:
        acc = acc * row[x & mask] % mod
        x >>= WINDOW
    return acc


def measure(bits: int, reps: int) -> dict[str, float]:
    """CPU seconds of one of each operation (module doc)."""
    p, q = _key(bits)
    n, n2 = p * q, (p * q) ** 2
    p2, q2 = p * p, q * q
    hp = gmpy2.invert((gmpy2.powmod(n + 1, p - 1, p2) - 1) // p, p)
    hq = gmpy2.invert((gmpy2.powmod(n + 1, q - 1, q2) - 1) // q, q)
    q_inv_p = gmpy2.invert(q, p)
    cts = [gmpy2.mpz(secrets.randbits(2 * bits)) % n2 for _ in range(64)]
    r = gmpy2.mpz(secrets.randbits(bits)) % n
    hn = gmpy2.powmod(gmpy2.mpz(secrets.randbits(bits)) % n, n, n2)
    half = bits // 2
    start = time.process_time()
    table = _table(hn, half, n2)
    table_s = time.process_time() - start
    exps = [secrets.randbits(half) for _ in range(reps)]
    qinv = gmpy2.invert(q2, p2)

    def crt(a: gmpy2.mpz, b: gmpy2.mpz) -> gmpy2.mpz:
        return b + q2 * ((a - b) * qinv % p2)

    def decrypt(c: gmpy2.mpz) -> gmpy2.mpz:
        mp = (gmpy2.powmod(c, p - 1, p2) - 1) // p * hp % p
        mq = (gmpy2.powmod(c, q - 1, q2) - 1) // q * hq % q
        return mq + q * ((mp - mq) * q_inv_p % p)

    m = gmpy2.mpz(secrets.randbits(bits - 2))  # the arithmetic timed is checked first
    assert decrypt((1 + m * n) * _fixed_power(table, exps[0], n2) % n2) == m
    assert _fixed_power(table, exps[0], n2) == gmpy2.powmod(hn, exps[0], n2)

    def each(fn, count: int) -> float:
        return best_cpu(lambda: [fn(i) for i in range(count)]) / count

    return {
        "mul": each(lambda i: cts[i % 64] * cts[(i + 1) % 64] % n2, 2000),
        "powmod": each(lambda i: gmpy2.powmod(r + i, n, n2), reps),
        "powmod_crt": each(
            lambda i: crt(
                gmpy2.powmod(r + i, n % (p2 - p), p2), gmpy2.powmod(r + i, n % (q2 - q), q2)
            ),
            reps,
        ),
        "fixed_base": each(lambda i: _fixed_power(table, exps[i], n2), reps),
        "fixed_base_table": table_s,
        "decrypt": each(lambda i: decrypt(cts[i % 64]), reps),
    }


def dealer_online(rows: int, k_a: int, k_b: int) -> float:
    """CPU seconds of the dealer product's online share product U_A^T Y' at ``rows`` rows,
    timed at BASELINE_ROWS and scaled linearly."""
    rng = np.random.default_rng(0)
    u = rng.integers(0, 1 << 24, (BASELINE_ROWS, k_a), dtype=np.uint64)
    y = rng.integers(0, 1 << 24, (BASELINE_ROWS, k_b), dtype=np.uint64)
    matmul_tn_u64(u[:64], y[:64])  # compile or load
    return best_cpu(lambda: matmul_tn_u64(u, y)) * rows / BASELINE_ROWS


def cost(ops: dict[str, float], dealer_s: float, args: argparse.Namespace) -> dict:
    """The whole product's cost on one shape, from the per-operation seconds, beside the
    dealer product's measured ``dealer_s``."""
    slot = math.ceil(math.log2(args.max_rows + 1)) + 1 + args.kappa
    slots = (args.bits - 2) // slot
    per_row = math.ceil(args.k_b / slots)
    cts = args.rows * per_row
    accumulators = args.k_a * per_row
    ct_bytes = 2 * args.bits // 8
    return {
        "slot_bits": slot,
        "slots_per_ciphertext": slots,
        "ciphertexts_per_row": per_row,
        "b_to_a_bytes": cts * ct_bytes,
        "a_to_b_bytes": accumulators * ct_bytes,
        "b_randomisers_s": cts * ops["fixed_base"],
        "b_online_s": cts * ops["mul"],
        "a_aggregate_s": cts * args.attrs_a * ops["mul"],
        "a_mask_s": accumulators * (ops["fixed_base"] + ops["mul"]),
        "b_decrypt_s": accumulators * ops["decrypt"],
        "dealer_online_s": dealer_s,
        "dealer_b_to_a_bytes": args.rows * args.k_b * 3,
    }


def markdown(head: dict, rows: list[dict]) -> str:
    row = rows[0]
    ops, c = row["ops"], row["cost"]
    ms = {k: f"{v * 1e3:.3f}" for k, v in ops.items()}
    online = c["b_online_s"] + c["a_aggregate_s"] + c["a_mask_s"] + c["b_decrypt_s"]
    return "\n".join(
        [
            "# A dealer-free product by packed Paillier: its cost from measured operations",
            "",
            f"`{head['command']}` at {head['commit']}; {head['machine']}; load average "
            f"{row['load_before']} before, {row['load_after']} after; one process, CPU "
            "seconds. Nothing here runs the protocol: each operation is timed and multiplied "
            "by how often the design below needs it (`benchmarks/bench_paillier_cost.py`).",
            "",
            f"Shape: {row['rows']:,} records; A holds {row['attrs_a']} attribute(s), "
            f"{row['k_a']} one-hot columns; B's block has {row['k_b']} columns; max_rows "
            f"{row['max_rows']:,}; {row['bits']}-bit modulus; masks {row['kappa']} bits wider "
            "than any count.",
            "",
            "| operation | ms each |",
            "|---|---:|",
            *(f"| {k} | {v} |" for k, v in ms.items()),
            "",
            f"Slots of {c['slot_bits']} bits, {c['slots_per_ciphertext']} a ciphertext, "
            f"{c['ciphertexts_per_row']} ciphertext(s) a record.",
            "",
            "| part | CPU s | bytes |",
            "|---|---:|---:|",
            f"| B: randomisers (before the data) | {c['b_randomisers_s']:.1f} | |",
            f"| B: encrypt (online) | {c['b_online_s']:.1f} | {c['b_to_a_bytes']:,} to A |",
            f"| A: aggregate | {c['a_aggregate_s']:.1f} | |",
            f"| A: mask and re-randomise | {c['a_mask_s']:.2f} | {c['a_to_b_bytes']:,} to B |",
            f"| B: decrypt | {c['b_decrypt_s']:.2f} | |",
            f"| **online, both** | **{online:.1f}** | |",
            f"| dealer product, online (U_A^T Y', 24-bit words) | {c['dealer_online_s']:.2f} | "
            f"{c['dealer_b_to_a_bytes']:,} to A |",
            "",
            f"Online: {online / c['dealer_online_s']:.0f}x the dealer product's CPU and "
            f"{c['b_to_a_bytes'] / c['dealer_b_to_a_bytes']:.1f}x its bytes from B to A; the "
            f"randomisers add {c['b_randomisers_s']:.0f} s before the data exists.",
            "",
            "The issue's paper estimate (512 MB, one ciphertext a record, about 650 core-s of "
            "randomisers) leaves no room in a slot for a mask wider than the count; with "
            "statistical masking a slot is about 62 bits, so a 100-column block takes 4 "
            "ciphertexts a record. The randomisers here use exponents of half n's bits; "
            "shorter ones would cut them, under a stronger assumption. No design is chosen "
            "yet: OT- or VOLE-based correlations were not measured (no maintained Python "
            "package).",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bits", type=int, default=2048, help="the modulus n's bits")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--max-rows", type=int, default=1 << 20)
    ap.add_argument("--k-a", type=int, default=100, help="A's one-hot columns")
    ap.add_argument("--attrs-a", type=int, default=1, help="A's attributes")
    ap.add_argument("--k-b", type=int, default=100, help="B's one-hot columns")
    ap.add_argument("--kappa", type=int, default=40, help="statistical masking bits")
    ap.add_argument("--reps", type=int, default=40, help="exponentiations timed")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    before = load_average()
    ops = measure(args.bits, args.reps)
    row = {
        **{k: getattr(args, k) for k in ("bits", "rows", "max_rows", "k_a", "attrs_a", "k_b")},
        "kappa": args.kappa,
        "ops": ops,
        "cost": cost(ops, dealer_online(args.rows, args.k_a, args.k_b), args),
        "load_before": before,
        "load_after": load_average(),
    }
    write_results(args.json, args.md, run_head(__file__, argv), [row], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
