"""A kept message file sent to a folder outbox: copied (the fallback, as every send was) and
hard-linked (on one file system), in one run, interleaved; the seconds of each and their
ratio. The issue's case was a 308 MB kept features file copied to the outbox.

    python benchmarks/bench_outbox_link.py [--mb 308] [--repeats 5] [--json P] [--md P]
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import interleaved, load_average, run_head, write_results  # noqa: E402

from vertimrf.driver.transport import DirectoryTransport, Stored, file_sha256  # noqa: E402
from vertimrf.protocol.schedule import Message  # noqa: E402

FEATURES = Message("A", "B", "features")


def _no_link(source: object, target: object) -> None:
    raise OSError(errno.EXDEV, "forced copy")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=308)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        kept = Path(folder) / "kept"
        with open(kept, "wb") as fh:
            for _ in range(args.mb):
                fh.write(os.urandom(1 << 20))
        data = Stored(kept, file_sha256(kept), kept.stat().st_size)

        def send(seed: int, link: bool) -> float:
            out = Path(folder) / f"out-{link}-{seed}"
            linker = os.link
            if not link:
                os.link = _no_link  # type: ignore[assignment]
            try:
                start = time.perf_counter()
                DirectoryTransport(Path(folder) / "in", out).send(FEATURES, data)
                return time.perf_counter() - start
            finally:
                os.link = linker
                shutil.rmtree(out)

        timed = interleaved(lambda s: send(s, False), lambda s: send(s, True), args.repeats)
    row = {"mb": args.mb, "load": load_average(), **timed}
    write_results(args.json, args.md, run_head(__file__, argv), [row], markdown)
    return 0


def markdown(head: dict, rows: list[dict]) -> str:
    """The copy's and the link's median seconds and their ratio."""
    r = rows[0]
    return (
        f"# A kept file sent to a folder outbox: copy against hard link "
        f"(`benchmarks/bench_outbox_link.py`)\n\nCommand: `{head['command']}`. Commit "
        f"{head['commit']}. Machine: {head['machine']} (load average "
        f"{r['load']}). A {r['mb']} MB kept file, {len(r['first'])} sends of each, "
        "interleaved after one warm-up each; wall seconds (the copy is written and fsynced).\n\n"
        "| send | median s | each |\n|---|---:|---|\n"
        f"| copy (before; still the fallback across file systems) | {r['first_median']:.4f} | "
        f"{', '.join(f'{x:.3f}' for x in r['first'])} |\n"
        f"| hard link (after) | {r['second_median']:.6f} | "
        f"{', '.join(f'{x:.5f}' for x in r['second'])} |\n\n"
        f"Link / copy: {r['ratio']:.5f} ({1 / r['ratio']:,.0f}x faster).\n"
    )


if __name__ == "__main__":
    raise SystemExit(main())
