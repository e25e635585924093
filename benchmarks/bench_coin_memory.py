"""Peak memory of a run with coins through the dealer-free product, one process for every
role (``simulate``, messages through files), on the bundled Adult split 8 & 7 columns:
its peak resident memory (``VmHWM``), the 3-way TVD and a digest of the synthetic table, so
that two trees can be compared on the same seed (run it once a tree, ``PYTHONPATH=TREE``).

    PYTHONPATH=. python benchmarks/bench_coin_memory.py --epsilon 3.2 \
        --json benchmarks/results/coin_memory_new.json
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, peak_rss_kb, run_head, write_results  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilon", type=float, default=3.2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-rows", type=int, default=65536)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    from vertimrf import load_dataset, simulate
    from vertimrf.metrics import tvd

    df, spec = load_dataset("adult")
    names = list(spec.names)
    before, start = load_average(), time.perf_counter()
    with tempfile.TemporaryDirectory() as mail:
        synth, _ = simulate(
            df, spec, [names[:8], names[8:]], args.epsilon, 1e-6, method="secure",
            seed=args.seed, max_rows=args.max_rows, cross_noise="coins", message_dir=mail,
            product="paillier",
        )  # fmt: skip
    seconds = time.perf_counter() - start
    row = {
        "epsilon": args.epsilon,
        "seed": args.seed,
        "peak_mb": peak_rss_kb() / 1024,
        "tvd3": tvd(df, synth, spec, ways=3),
        "table_sha256": hashlib.sha256(synth.to_csv(index=False).encode()).hexdigest(),
        "seconds": seconds,
    }
    head = run_head(__file__, None) | {"load": [before, load_average()]}
    write_results(args.json, None, head, [row], lambda _h, rows: f"{rows[0]}\n")


if __name__ == "__main__":
    main()
