"""Wall time of ``simulate`` (NLTCS, method secure, epsilon 0.8, max_rows 32,768) per seed,
and the SHA-256 of the last synthetic CSV, to compare two commits in one session.

Run it alternately in two checkouts (``git worktree add``), with the checkout first on the
path, and compare the warm runs (the first run of a process compiles or loads kernels):

    PYTHONPATH=OLD python benchmarks/bench_simulate_time.py --label before
    PYTHONPATH=NEW python benchmarks/bench_simulate_time.py --label after
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time

from vertimrf import load_dataset, simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--label", required=True, help="a name for this checkout")
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    df, spec = load_dataset("nltcs")
    names = list(spec.names)
    seconds, digest = [], ""
    for seed in range(args.seeds):
        start = time.perf_counter()
        synth, _ = simulate(
            df, spec, [names[:8], names[8:]], 0.8, 1e-6, method="secure", seed=seed,
            max_rows=32768,
        )  # fmt: skip
        seconds.append(round(time.perf_counter() - start, 3))
        digest = hashlib.sha256(synth.to_csv(index=False).encode()).hexdigest()[:16]
    print(json.dumps({"label": args.label, "seconds": seconds, "sha256": digest}))


if __name__ == "__main__":
    main()
