"""What the dealer-free product (``vertimrf.product.paillier``, packed Paillier on gmpy2)
costs on this machine, against the dealer product, for one pair's first-round product.

Each function of the product is timed on a sample of rows with a 2048-bit key (CPU seconds,
best of three), then multiplied out to each shape (its rows, one-hot widths and attributes
from the plan of a real config; public values only). Nothing here runs the whole protocol:
the backend is not yet a run option.

- E (the encrypter) makes one randomiser a ciphertext (before the data exists: it needs only
  the key and the run's key schedule; by CRT from its own key, ``randomiser``, and from the
  public table for comparison, ``randomiser_public_table``), encrypts its rows, and
  decrypts G's reply;
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
    aggregate_joint,
    decrypt_shares,
    draw_masks,
    encrypt_onehot,
    joint_blocks,
    mask,
)
from vertimrf.kernels.secure import matmul_tn_u64  # noqa: E402
from vertimrf.product.paillier import reply_bits  # noqa: E402
from vertimrf.protocol.secure import paillier as pw  # noqa: E402
from vertimrf.protocol.secure.paillier import encrypter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The attribute sizes of A and B in the plans of the profiled config
# (benchmarks/profile_run.py: Adult's 8 and 7 columns, epsilon 1.6), at max_rows 2^20 and
# 2^16 alike; the shapes: (name, rows = max_rows).
SIZES = ((16, 7, 16, 16, 16, 7, 14, 6), (5, 2, 8, 15, 16, 41, 2))
SHAPES = (("1M x 15 x 2 (8 & 7 columns)", 1 << 20), ("Adult scale (max_rows 2^16)", 1 << 16))
# The rates reported apart from the table of units.
SUMMARY = ("table_s", "owner_table_s", "joint_per_row", "joint_per_row_model")
BASELINE_ROWS = 1 << 16  # the dealer product is timed on this many rows, then scaled


def onehot(rng: np.random.Generator, sizes: tuple[int, ...], rows: int) -> np.ndarray:
    """Rows of one value an attribute (uniform), as one-hot columns at their offsets."""
    offsets = np.cumsum([0, *sizes[:-1]])
    return np.stack([rng.integers(0, s, rows) + o for s, o in zip(sizes, offsets, strict=True)], 1)


def rates(
    bits: int, sample: int, sizes_e: tuple[int, ...], sizes_g: tuple[int, ...]
) -> dict[str, float]:
    """CPU seconds of each unit of the product's work, timed on ``sample`` rows; and the
    joint aggregation's measured time on them against :func:`products` times the rate."""
    key = pl.generate(bits)
    pub = key.public
    start = time.process_time()
    table = pl.randomiser_table(pub)
    table_s = time.process_time() - start
    start = time.process_time()
    owner = pl.randomiser_table(key)
    owner_table_s = time.process_time() - start
    layout, width_e, width_g = SlotLayout.for_rows(1 << 20, bits), sum(sizes_e), sum(sizes_g)
    per = layout.per_row(width_e)
    rng = np.random.default_rng(0)
    e, g = onehot(rng, sizes_e, sample), onehot(rng, sizes_g, sample)
    k_e, k_g = bytes(range(32)), bytes(range(1, 33))
    cts_n = sample * per
    rand = pl.randomisers(table, k_e, 0, cts_n)
    cts = encrypt_onehot(pub, layout, e, width_e, rand)
    acc = aggregate(pub, cts, per, g, width_g)
    masks = draw_masks(layout, k_g, (width_g, width_e))
    reply_rand = pl.randomisers(table, k_g, 0, len(acc), reply_bits(layout))
    masked = mask(pub, layout, acc, masks, reply_rand)
    raw = pl.ciphertexts_to_bytes(pub, cts)
    accs, half = len(acc), sample // 2
    product = best_cpu(lambda: aggregate(pub, cts, per, g, width_g)) / (sample * len(sizes_g) * per)
    return {
        "table_s": table_s,
        "owner_table_s": owner_table_s,
        "randomiser": best_cpu(lambda: pl.randomisers(owner, k_e, 0, cts_n)) / cts_n,
        "randomiser_public_table": best_cpu(lambda: pl.randomisers(table, k_e, 0, cts_n)) / cts_n,
        "encrypt": best_cpu(lambda: encrypt_onehot(pub, layout, e, width_e, rand)) / cts_n,
        "product": product,
        # The joint aggregation's CPU a row: its time on all the sample's rows less that on
        # half of them, over the other half (the dense pass over the buckets cancels).
        "joint_per_row": (
            best_cpu(lambda: aggregate_joint(pub, cts, per, g, sizes_g))
            - best_cpu(lambda: aggregate_joint(pub, cts[: half * per], per, g[:half], sizes_g))
        )
        / (sample - half),
        "joint_per_row_model": len(joint_blocks(sizes_g)) * per * product,
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


def model(r: dict[str, float], rows: int, encrypter: int, bits: int) -> dict:
    """One pair's first-round product at ``rows`` rows, E = party ``encrypter`` (0: A), at
    the measured rates ``r`` (the plan's model, :func:`vertimrf.protocol.secure.paillier.
    seconds`)."""
    layout = SlotLayout.for_rows(rows, bits)
    sizes_e, sizes_g = SIZES[encrypter], SIZES[1 - encrypter]
    per = layout.per_row(sum(sizes_e))
    cts, accs, size = rows * per, sum(sizes_g) * per, pl.ciphertext_bytes(bits)
    t = pw.seconds(rows, layout, sizes_e, sizes_g, r)
    return {
        "encrypter": "AB"[encrypter],
        "ciphertexts_per_row": per,
        "e_to_g_bytes": cts * size,
        "g_to_e_bytes": accs * size,
        "e_randomisers_s": t["e_randomisers"],
        "e_online_s": t["e_online"],
        "g_online_s": t["g_online"],
        "g_multiplications": pw.products(rows, per, sizes_g),
        "g_multiplications_plain": rows * len(sizes_g) * per,
    }


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
        *(f"| {k} | {v * 1e6:,.1f} |" for k, v in r.items() if k not in SUMMARY),
        f"| the randomiser table, once a key | {r['table_s'] * 1e6:,.0f} |",
        f"| the owner's CRT tables, once a key | {r['owner_table_s'] * 1e6:,.0f} |",
        "",
        f"G's joint aggregation: {r['joint_per_row'] * 1e6:.1f} us a row measured (the "
        "sample's time less that of its first half, over the other half), "
        f"{r['joint_per_row_model'] * 1e6:.1f} us modelled (runs x ciphertexts a row x "
        "the product's rate); the model below uses the measured rate a row, and the product's "
        "rate for the pass over the buckets.",
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
    e_at = "AB".index(m["encrypter"])
    cpu_e, cpu_g = d["party_cpu_s"][e_at], d["party_cpu_s"][1 - e_at]
    lines += [
        "",
        f"At {big['name']}: bytes {ratio_bytes:.2f}x the dealer run's (both parties' features; "
        f"target at most 3x). Party time: the dealer run's whole party CPU was "
        f"A {d['party_cpu_s'][0]:.2f} s and B {d['party_cpu_s'][1]:.2f} s "
        f"(`profile_run.json`, {d['party_commit']}). A run with this product would add to "
        f"them G's {m['g_online_s']:,.0f} s and E's {m['e_online_s']:,.0f} s of online work "
        f"(G {(m['g_online_s'] + cpu_g) / cpu_g:.1f}x and E "
        f"{(m['e_online_s'] + cpu_e) / cpu_e:.1f}x their dealer "
        "run's CPU, less the dealer product's own phases of about 1 s; target at most 3x), "
        f"plus E's {m['e_randomisers_s']:,.0f} s of randomisers, which "
        "can be made before the data exists. What bounds the time: G makes "
        f"{m['g_multiplications']:,} products mod n^2 (rows x G's runs of joint values x "
        f"ciphertexts a row; {m['g_multiplications_plain']:,} one attribute at a time) at "
        f"{r['product'] * 1e6:.1f} us each, and E {big['rows'] * m['ciphertexts_per_row']:,} "
        f"randomisers at {r['randomiser'] * 1e6:,.0f} us each.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bits", type=int, default=pl.KEY_BITS, help="the modulus n's bits")
    ap.add_argument("--sample", type=int, default=20_000, help="rows each function is timed on")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    before = load_average()
    profile = json.loads((ROOT / "benchmarks/results/profile_run.json").read_text())
    party_cpu = [x["cpu_s"] for x in profile["rows"] if x["role"] in ("A", "B")]
    shapes = []
    # E = A (98 columns) against G = B (7 attributes in 2 runs): the encrypter both shapes take.
    r = rates(args.bits, args.sample, SIZES[0], SIZES[1])
    for name, rows in SHAPES:
        widths = (sum(SIZES[0]), sum(SIZES[1]))
        who = encrypter(SlotLayout.for_rows(rows, args.bits), widths, SIZES)
        options = [model(r, rows, e, args.bits) for e in (0, 1)]
        shapes.append({
            "name": name, "rows": rows, "widths": widths, "paillier": options[who],
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
