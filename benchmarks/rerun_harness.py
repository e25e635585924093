"""The re-run harness's table: what two runs of one config share, for every input changed.

``python benchmarks/rerun_harness.py`` runs the harness of ``tests/rerun_harness.py`` (as
``python -m tests.rerun_harness --https``, a separate process: the benchmarks import nothing
from the tests) and writes its table to ``benchmarks/results/rerun_harness.md`` and its
findings to ``benchmarks/results/rerun_harness.json``, then prints the table. Each row: the
input changed between run 1 and run 2 (each from fresh state and message folders), a viewer
(the server or a party), the count of high-entropy 8-byte windows it received in both runs
beyond public metadata and an unchanged party's commitment, and (the server, partial record
sets) the tokens of run 1 among those of run 2. Every count should be 0, and with nothing
changed every byte identical. ``--no-https`` leaves out the rows over the HTTPS service.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_average, machine  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-https", action="store_true", help="only the in-process rows")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rerun-harness-") as tmp:
        found, table = Path(tmp) / "findings.json", Path(tmp) / "table.md"
        command = [sys.executable, "-m", "tests.rerun_harness", "--json", str(found),
                   "--markdown", str(table), *([] if args.no_https else ["--https"])]  # fmt: skip
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        result = json.loads(found.read_text())
        rows = table.read_text()
    seconds = round(time.perf_counter() - start, 1)
    failing = sum(not f["ok"] for f in result["findings"])
    head = (
        f"# Re-run harness: what two runs of one config share\n\n"
        f"Machine: {machine()}; load average {load_average()}. {seconds} s in all "
        f"(by setting: {', '.join(f'{k} {v} s' for k, v in result['seconds'].items())}).\n\n"
        f"{failing} of {len(result['findings'])} rows fail (LEAK: shared bytes or tokens; "
        f"FAILED: a run stopped).\n\n"
    )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rerun_harness.md").write_text(head + rows)
    meta = {"machine": machine(), "seconds": seconds, "failing": failing}
    (RESULTS / "rerun_harness.json").write_text(json.dumps({**meta, **result}, indent=1) + "\n")
    print(head + rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
