"""The digests of seeded runs, one per method, to show that a change keeps every byte.

``python benchmarks/bench_same_bytes.py`` prints the SHA-256 of each seeded run's synthetic CSV
(simulate: the secure select and paper pipelines, FO and FM), and of the step commands' run of
the secure select pipeline over folders. ``--check FILE`` compares them with a committed set
(benchmarks/results/same_bytes.json) and exits 1 on any difference. The byte-identity tests
(simulate against the step commands, the folder transport and HTTPS) carry the claim from
simulate to the other transports.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from vertimrf import load_dataset, simulate
from vertimrf.protocol import from_preset

PARTIES = {
    "A": ["0", "1", "2", "3", "4"],
    "B": ["5", "6", "7", "8"],
    "C": ["9", "10", "11", "12", "13", "14", "15"],
}
SECRET = bytes(range(32))
SEED = 11
NONCE = "0123456789abcdef" * 2
RUNS = {
    "secure-select": {"method": "secure", "record_sets": "equal"},
    "secure-paper": {"method": "secure", "secure_pipeline": "paper"},
    "fo": {"method": "fo"},
    "fm": {"method": "fm", "t": 256, "allow_non_dp": True},
}


def digests(rows: int = 3000) -> dict[str, str]:
    df, spec = load_dataset("nltcs")
    df = df.iloc[:rows].reset_index(drop=True)
    out = {}
    for name, extra in RUNS.items():
        fields = {k: v for k, v in extra.items() if k not in ("method", "allow_non_dp")}
        config = from_preset(
            "default",
            spec=spec,
            parties=[(n, list(c)) for n, c in PARTIES.items()],
            epsilon=1.6,
            delta=1e-6,
            method=extra["method"],
            max_rows=4096,
            run_nonce=NONCE,
            allow_non_dp=bool(extra.get("allow_non_dp", False)),
            **fields,
        )
        synth, _ = simulate(df, config=config, seed=SEED, secret=SECRET)
        out[name] = hashlib.sha256(synth.to_csv(index=False).encode()).hexdigest()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", type=Path, help="a committed digest file to compare with")
    parser.add_argument("--out", type=Path, help="write the digests to this new file")
    args = parser.parse_args()
    found = digests()
    print(json.dumps(found, indent=2))
    if args.out:
        if args.out.exists():
            raise SystemExit(f"{args.out} exists; name a new file")
        args.out.write_text(json.dumps(found, indent=2) + "\n")
    if args.check:
        want = json.loads(args.check.read_text())
        changed = sorted(k for k in want if want[k] != found.get(k))
        print("same bytes" if not changed else f"changed: {', '.join(changed)}")
        sys.exit(1 if changed else 0)


if __name__ == "__main__":
    main()
