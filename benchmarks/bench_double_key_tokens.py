"""Tokens that need both parties' keys (H(x)^(ab), as a Diffie-Hellman PSI) against today's
tokens (a PRF under a key of the group secret), in the same run (docs/threat-model.md,
"Record sets under collusion").

Today's: a party's order tokens and released tokens of 1M integer IDs (two keyed PRF passes).
Double-keyed: one X25519 scalar multiplication (``cryptography``'s ``exchange`` on a point
given as 32 bytes) timed over 2,000 points, times two per record (the party's own IDs, then
the peer's list), scaled to 1M records. CPU seconds, best of 3.

    python benchmarks/bench_double_key_tokens.py [--json OUT]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

from vertimrf.party.records.ids import int_fingerprints
from vertimrf.party.records.tokens import TokenKeys, order_tokens, release_tokens

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_cpu, git_commit, load_average, machine, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ROWS, POINTS = 1_000_000, 2_000


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    keys = TokenKeys(os.urandom(32), os.urandom(32), b"bench")
    fingerprints = int_fingerprints(np.arange(ROWS, dtype=np.int64))
    release_tokens(order_tokens(fingerprints[:10], keys), keys, bytes(32))  # load the kernels
    today = best_cpu(lambda: release_tokens(order_tokens(fingerprints, keys), keys, bytes(32)))
    key = X25519PrivateKey.generate()
    points = [X25519PublicKey.from_public_bytes(os.urandom(32)) for _ in range(POINTS)]
    each = best_cpu(lambda: [key.exchange(p) for p in points]) / POINTS
    row = {"today_s": today, "x25519_us": each * 1e6, "double_key_s": 2 * each * ROWS}
    row["ratio"] = row["double_key_s"] / today
    commit = git_commit(ROOT)
    print(f"{machine()}, load {load_average()}, commit {commit}")
    print(f"1M records: today's tokens {today:.3f} CPU s; one X25519 multiplication "
          f"{row['x25519_us']:.1f} us, two per record {row['double_key_s']:.1f} s "
          f"({row['ratio']:.0f}x)")  # fmt: skip
    meta = {"machine": machine(), "load": load_average(), "commit": commit}
    write_json(args.json, {**meta, **row})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
