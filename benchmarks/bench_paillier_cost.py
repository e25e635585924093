"""What the dealer-free product (``vertimrf.product.paillier``, packed Paillier on gmpy2)
costs on this machine, against the dealer product, for one pair's first-round product.

Each function of the product is timed on a sample of rows with a 2048-bit key (CPU seconds,
best of three), then multiplied out to each shape (its rows, one-hot widths and attributes
from the plan of a real config; public values only). Nothing here runs the whole protocol:
the backend is not yet a run option.

- E (the encrypter) makes one randomiser a ciphertext (before the data exists: it needs only
  the key and the run's key schedule), encrypts its rows, and decrypts G's reply;
- G (the aggregator) multiplies each row's ciphertexts into one accumulator per attribute,
  masks and re-randomises the accumulators;
- the dealer product's own work on the same shape is timed in the same run (the parties'
  one-hot sums and the dense U^T Y', 24-bit words), and the dealer run's whole party CPU is
  quoted from ``profile_run.json`` (another commit; for scale only).

    python benchmarks/bench_paillier_cost.py --json J --md M
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_cpu, load_average, run_head, write_results  # noqa: E402

from vertimrf.crypto import paillier as pl  # noqa: E402
from vertimrf.crypto.paillier_slots import (  # noqa: E402
    SlotLayout,
    aggregate,
    decrypt_shares,
    draw_masks,
    encrypt_onehot,
    mask,
)
from vertimrf.kernels.secure import matmul_tn_u64  # noqa: E402
from vertimrf.product.paillier import encrypter, reply_bits  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The shapes: (name, rows = max_rows, widths (A, B), attributes (A, B)), from the plans of
# the profiled config (benchmarks/profile_run.py: Adult's 8 and 7 columns, epsilon 1.6) at
# max_rows 2^20 and 2^16.
SHAPES = (
    ("1M x 15 x 2 (8 & 7 columns)", 1 << 20, (98, 89), (8, 7)),
    ("Adult scale (max_rows 2^16)", 1 << 16, (98, 89), (8, 7)),
)
BASELINE_ROWS = 1 << 16  # the dealer product is timed on this many rows, then scaled


def rates(bits: int, sample: int, width_e: int, width_g: int, attrs_g: int) -> dict[str, float]:
    """CPU seconds of each unit of the product's work, timed on ``sample`` rows."""
    key = pl.generate(bits)
    pub = key.public
    start = time.process_time()
    table = pl.randomiser_table(pub)
    table_s = time.process_time() - start
    layout = SlotLayout.for_rows(1 << 20, bits)
    per = layout.per_row(width_e)
    rng = np.random.default_rng(0)
    e = rng.integers(0, width_e, (sample, 1))
    g = np.stack([rng.integers(0, width_g // attrs_g, sample) + a * (width_g // attrs_g)
                  for a in range(attrs_g)], 1)  # fmt: skip
    k_e, k_g = bytes(range(32)), bytes(range(1, 33))
    cts_n = sample * per
    rand = pl.randomisers(table, k_e, 0, cts_n)
    cts = encrypt_onehot(pub, layout, e, width_e, rand)
    acc = aggregate(pub, cts, per, g, width_g)
    masks = draw_masks(layout, k_g, (width_g, width_e))
    reply_rand = pl.randomisers(table, k_g, 0, len(acc), reply_bits(layout))
    masked = mask(pub, layout, acc, masks, reply_rand)
    raw = pl.ciphertexts_to_bytes(pub, cts)
    accs = len(acc)
    return {
        "table_s": table_s,
        "randomiser": best_cpu(lambda: pl.randomisers(table, k_e, 0, cts_n)) / cts_n,
        "encrypt": best_cpu(lambda: encrypt_onehot(pub, layout, e, width_e, rand)) / cts_n,
        "aggregate_mul": best_cpu(lambda: aggregate(pub, cts, per, g, width_g))
        / (sample * attrs_g * per),
        "reply_randomiser": best_cpu(
            lambda: pl.randomisers(table, k_g, 0, accs, reply_bits(layout))
        )
        / accs,  # fmt: skip
        "mask": best_cpu(lambda: mask(pub, layout, acc, masks, reply_rand)) / accs,
        "decrypt": best_cpu(lambda: decrypt_shares(key, layout, masked, (width_g, width_e))) / accs,
        "to_bytes": best_cpu(lambda: pl.ciphertexts_to_bytes(pub, cts)) / cts_n,
        "from_bytes": best_cpu(lambda: pl.ciphertexts_from_bytes(pub, raw)) / cts_n,
    }


def dealer_product_s(rows: int, widths: tuple[int, int]) -> float:
    """CPU seconds of the dealer product's dense U_A^T Y' at ``rows`` rows (timed at
    BASELINE_ROWS, scaled linearly): the costliest part of its online product."""
    rng = np.random.default_rng(0)
    u = rng.integers(0, 1 << 24, (BASELINE_ROWS, widths[0]), dtype=np.uint64)
    y = rng.integers(0, 1 << 24, (BASELINE_ROWS, widths[1]), dtype=np.uint64)
    matmul_tn_u64(u[:64], y[:64])  # compile or load
    return best_cpu(lambda: matmul_tn_u64(u, y)) * rows / BASELINE_ROWS


def model(r: dict[str, float], rows: int, widths: tuple[int, int], attrs: tuple[int, int],
          encrypter: int, bits: int) -> dict:  # fmt: skip
    """One pair's first-round product at a shape, E = party ``encrypter`` (0: A, 1: B)."""
    layout = SlotLayout.for_rows(rows, bits)
    w_e, w_g = widths[encrypter], widths[1 - encrypter]
    per = layout.per_row(w_e)
    cts, accs, size = rows * per, w_g * per, 2 * bits // 8
    mults = rows * attrs[1 - encrypter] * per
    return {
        "encrypter": "AB"[encrypter],
        "ciphertexts_per_row": per,
        "e_to_g_bytes": cts * size,
        "g_to_e_bytes": accs * size,
        "e_randomisers_s": cts * r["randomiser"],
        "e_online_s": cts * (r["encrypt"] + r["to_bytes"])
        + accs * (r["decrypt"] + r["from_bytes"]),
        "g_online_s": cts * r["from_bytes"] + mults * r["aggregate_mul"]
        + accs * (r["reply_randomiser"] + r["mask"] + r["to_bytes"]),
        "g_multiplications": mults,
    }  # fmt: skip


def markdown(head: dict, rows: list[dict]) -> str:
    row = rows[0]
    r = row["rates"]
    lines = [
        "# The dealer-free product (packed Paillier): its cost against the dealer's",
        "",
        f"`{head['command']}` at {head['commit']}; {head['machine']}; load average "
        f"{row['load_before']} before, {row['load_after']} after; one process, CPU seconds. "
        f"Each function of `vertimrf.product.paillier` was timed on {row['sample']:,} rows "
        f"with a {row['bits']}-bit key and multiplied out to each shape "
        "(`benchmarks/bench_paillier_cost.py`); nothing here runs the whole protocol.",
        "",
        "| unit | us each |",
        "|---|---:|",
        *(f"| {k} | {v * 1e6:,.1f} |" for k, v in r.items() if k != "table_s"),
        f"| the randomiser table, once a key | {r['table_s'] * 1e6:,.0f} |",
        "",
        "One pair's first-round product (the re-measurement's groups add their own blocks):",
        "",
        "| shape | E | ct/row | E to G | G to E | E: randomisers (before the data) | "
        "E online | G online | dealer: A and B send | dealer: U^T Y' |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in row["shapes"]:
        m, d = s["paillier"], s["dealer"]
        lines.append(
            f"| {s['name']} | {m['encrypter']} | {m['ciphertexts_per_row']} | "
            f"{m['e_to_g_bytes'] / 1e9:.2f} GB | {m['g_to_e_bytes'] / 1e6:.2f} MB | "
            f"{m['e_randomisers_s']:,.0f} s | {m['e_online_s']:,.1f} s | "
            f"{m['g_online_s']:,.1f} s | {d['bytes'] / 1e9:.2f} GB | {d['product_s']:.2f} s |"
        )
    big = row["shapes"][0]
    m, d = big["paillier"], big["dealer"]
    ratio_bytes = (m["e_to_g_bytes"] + m["g_to_e_bytes"]) / d["bytes"]
    lines += [
        "",
        f"At {big['name']}: bytes {ratio_bytes:.2f}x the dealer run's (both parties' features; "
        f"target at most 3x). Party time: the dealer run's whole party CPU was "
        f"A {d['party_cpu_s'][0]:.2f} s and B {d['party_cpu_s'][1]:.2f} s "
        f"(`profile_run.json`, {d['party_commit']}); here G's online work alone is "
        f"{m['g_online_s']:,.0f} s ({m['g_online_s'] / max(d['party_cpu_s']):.0f}x) and E's "
        f"{m['e_online_s']:,.0f} s, plus {m['e_randomisers_s']:,.0f} s of randomisers that "
        "can be made before the data exists. The 3x target on time is not reachable this "
        f"way: G makes {m['g_multiplications']:,} products mod n^2 (rows x G's attributes x "
        f"ciphertexts a row) at {r['aggregate_mul'] * 1e6:.1f} us each, and E "
        f"{big['rows'] * m['ciphertexts_per_row']:,} randomisers at "
        f"{r['randomiser'] * 1e6:,.0f} us each.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bits", type=int, default=pl.KEY_BITS, help="the modulus n's bits")
    ap.add_argument("--sample", type=int, default=2000, help="rows each function is timed on")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    before = load_average()
    profile = json.loads((ROOT / "benchmarks/results/profile_run.json").read_text())
    party_cpu = [x["cpu_s"] for x in profile["rows"] if x["role"] in ("A", "B")]
    shapes = []
    # E = A (98 columns) against G = B (89 columns, 7 attributes): the encrypter both shapes take.
    r = rates(args.bits, args.sample, SHAPES[0][2][0], SHAPES[0][2][1], SHAPES[0][3][1])
    for name, rows, widths, attrs in SHAPES:
        who = encrypter(SlotLayout.for_rows(rows, args.bits), widths, attrs)
        options = [model(r, rows, widths, attrs, e, args.bits) for e in (0, 1)]
        best = options[who]
        shapes.append({
            "name": name, "rows": rows, "widths": widths, "attrs": attrs, "paillier": best,
            "other_encrypter": options[1 - who],
            "dealer": {
                "bytes": rows * sum(widths) * 3,
                "product_s": dealer_product_s(rows, widths),
                "party_cpu_s": party_cpu,  # the dealer run at 1M rows, whatever the shape
                "party_commit": profile["commit"],
            },
        })  # fmt: skip
    row = {"bits": args.bits, "sample": args.sample, "rates": r, "shapes": shapes,
           "load_before": before, "load_after": load_average()}  # fmt: skip
    write_results(args.json, args.md, run_head(__file__, argv), [row], markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
