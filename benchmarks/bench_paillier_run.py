"""The dealer-free product (packed Paillier) run end to end for one pair, each role its own
process: CPU, wall time, peak memory and bytes, at the shapes of ``bench_paillier_cost.py``.

The pair is Adult's split of the profiled config (A: 8 columns, 98 one-hot values; B: 7
columns, 89), each row's values drawn uniformly from the plan's sizes with a fixed seed (the
product's work depends on the sizes only). E = A encrypts, G = B aggregates
(:func:`vertimrf.protocol.secure.paillier.encrypter`). The steps, as a run would take them:

1. E's key for the run (``run_key``) and its randomisers, made ahead into a file so that
   their cost shows apart (a run makes them as it encrypts: they are bound to its data);
2. E encrypts its rows block by block into files in a shared folder (the "transport");
   G reads each block as it lands and multiplies it into its buckets (both at once);
3. G masks and replies; E decrypts.

The shares are checked against the cross counts (numpy), so a wrong product fails the run.
The dealer run's whole party CPU at 1M rows is quoted from ``profile_run.json`` beside it.

    python benchmarks/bench_paillier_run.py --rows 65536 1048576 --json J --md M
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, run_head, write_results  # noqa: E402
from bench_paillier_cost import SIZES, onehot  # noqa: E402

from vertimrf.crypto import paillier as pl  # noqa: E402
from vertimrf.crypto.paillier_slots import SlotLayout  # noqa: E402
from vertimrf.product import paillier as pp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SECRETS = {"E": b"E" * 32, "G": b"G" * 32}
BLOCK = 8192  # rows a block
WAIT_S = 3600  # the longest G waits for one of E's blocks


def _columns(party: int, rows: int) -> np.ndarray:
    """Party ``party``'s one-hot columns (rows x attributes, at their offsets)."""
    return onehot(np.random.default_rng([20261129, party]), SIZES[party], rows)


def _layout(rows: int) -> SlotLayout:
    return SlotLayout.for_rows(rows, pl.KEY_BITS)


def _encrypter(rows: int) -> tuple[pl.PrivateKey, bytes, int]:
    """E's key for the run, its randomisers' stream key and how many it needs."""
    key = pp.run_key(SECRETS["E"], "bench", "A->B")
    stream = pp.stream_key(SECRETS["E"], pp.RANDOMISERS, "bench", "A->B")
    return key, stream, rows * _layout(rows).per_row(sum(SIZES[0]))


def _usage(start_wall: float, **extra: object) -> dict:
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"cpu_s": time.process_time(), "wall_s": time.monotonic() - start_wall,
            "peak_mb": peak_kb / 1024, **extra}  # fmt: skip


def role_setup(folder: Path, rows: int) -> dict:
    """E's key and its randomisers, into the folder, a block of rows' worth at a time."""
    start = time.monotonic()
    key, stream, count = _encrypter(rows)
    (folder / "E.pub").write_bytes(key.public.to_bytes())
    table, step = pl.randomiser_table(key), BLOCK * _layout(rows).per_row(sum(SIZES[0]))
    with open(folder / "E.randomisers", "wb") as out:
        for r0 in range(0, count, step):
            made = pl.randomisers(table, stream, r0, min(step, count - r0))
            out.write(pl.ciphertexts_to_bytes(key.public, made))
    return _usage(start)


def _stored(path: Path, public: pl.PublicKey) -> pp.Randomisers:
    """E's randomisers from the setup's file, read when asked."""
    size = public.ciphertext_bytes

    def read(start: int, length: int) -> list:
        with open(path, "rb") as f:
            f.seek(start * size)
            return pl.ciphertexts_from_bytes(public, f.read(length * size))

    return read


def role_encrypt(folder: Path, rows: int) -> dict:
    """E: its rows, block by block, each block a file renamed into place when whole."""
    start = time.monotonic()
    key, _, _ = _encrypter(rows)
    layout, width, cols = _layout(rows), sum(SIZES[0]), _columns(0, rows)
    rand = _stored(folder / "E.randomisers", key.public)
    sent = 0
    for r0 in range(0, rows, BLOCK):
        raw = pp.encrypted_rows(key.public, rand, layout, cols[r0 : r0 + BLOCK], width, r0)
        part = folder / f"rows-{r0}.part"
        part.write_bytes(raw)
        part.rename(folder / f"rows-{r0}.bin")
        sent += len(raw)
    return _usage(start, sent_bytes=sent)


def role_aggregate(folder: Path, rows: int) -> dict:
    """G: each of E's blocks as it lands, then the masked reply and its shares."""
    start = time.monotonic()
    public = pl.PublicKey.from_bytes((folder / "E.pub").read_bytes())
    layout, cols = _layout(rows), _columns(1, rows)

    def received():
        for r0 in range(0, rows, BLOCK):
            path = folder / f"rows-{r0}.bin"
            for _ in range(WAIT_S * 10):
                if path.exists():
                    break
                time.sleep(0.1)
            else:
                raise TimeoutError(f"no block {r0} from E in {WAIT_S} s")
            yield r0, min(rows, r0 + BLOCK), path.read_bytes()

    stream = pp.stream_key(SECRETS["G"], pp.MASKS, "bench", "A->B")
    reply, share = pp.masked_reply(public, pl.randomiser_table(public), layout, received(), cols,
                                   sum(SIZES[0]), SIZES[1], stream)  # fmt: skip
    (folder / "reply.bin").write_bytes(reply)
    np.save(folder / "G.share.npy", share)
    return _usage(start, sent_bytes=len(reply))


def role_decrypt(folder: Path, rows: int) -> dict:
    """E: its shares of the reply."""
    start = time.monotonic()
    key, _, _ = _encrypter(rows)
    reply = (folder / "reply.bin").read_bytes()
    share = pp.encrypter_shares(key, _layout(rows), reply, (sum(SIZES[0]), sum(SIZES[1])))
    np.save(folder / "E.share.npy", share)
    return _usage(start)


ROLES = {"setup": role_setup, "encrypt": role_encrypt, "aggregate": role_aggregate,
         "decrypt": role_decrypt}  # fmt: skip


def _start(role: str, folder: Path, rows: int) -> subprocess.Popen:
    args = [sys.executable, __file__, "--role", role, "--folder", str(folder), "--rows", str(rows)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=4 * WAIT_S)
    if proc.returncode:
        raise SystemExit(f"a role failed ({proc.args[3]}): exit {proc.returncode}")
    return json.loads(out.strip().splitlines()[-1])


def run(rows: int) -> dict:
    """One pair's product at ``rows`` rows: each step's usage and the check."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        setup = _finish(_start("setup", folder, rows))
        start = time.monotonic()
        encrypt, aggregate = _start("encrypt", folder, rows), _start("aggregate", folder, rows)
        steps = {"setup": setup, "encrypt": _finish(encrypt), "aggregate": _finish(aggregate)}
        steps["decrypt"] = _finish(_start("decrypt", folder, rows))
        online_wall = time.monotonic() - start
        total = np.load(folder / "E.share.npy") + np.load(folder / "G.share.npy")
    a, b = _columns(0, rows), _columns(1, rows)
    want = np.zeros((sum(SIZES[1]), sum(SIZES[0])), np.uint64)
    for i in range(a.shape[1]):
        for j in range(b.shape[1]):
            np.add.at(want, (b[:, j], a[:, i]), 1)
    if not np.array_equal(total, want):
        raise SystemExit(f"the shares at {rows:,} rows do not sum to the cross counts")
    return {"rows": rows, "steps": steps, "online_wall_s": online_wall, "checked": True}


def markdown(head: dict, rows: list[dict]) -> str:
    profile = rows[0]["dealer"]
    lines = [
        "# The dealer-free product run end to end, one pair, each role its own process",
        "",
        f"`{head['command']}` at {head['commit']}; {head['machine']}; load average "
        f"{rows[0]['load_before']} before, {rows[-1]['load_after']} after. One pair of Adult's "
        "split (A: 8 columns, 98 values, encrypts; B: 7 columns, 89, aggregates), the first "
        "round's product only, 2048-bit key, kappa 40; E encrypts and G aggregates at once, "
        "through block files in a shared folder. The shares were checked against the cross "
        "counts (`benchmarks/bench_paillier_run.py`).",
        "",
        "| rows | E randomisers CPU s (made ahead) | E encrypt CPU s | G aggregate CPU s | "
        "E decrypt CPU s | online wall s | peak MB (E, G) | E to G | G to E |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s = r["steps"]
        peak_e = max(s["setup"]["peak_mb"], s["encrypt"]["peak_mb"], s["decrypt"]["peak_mb"])
        lines.append(
            f"| {r['rows']:,} | {s['setup']['cpu_s']:.1f} | {s['encrypt']['cpu_s']:.1f} | "
            f"{s['aggregate']['cpu_s']:.1f} | {s['decrypt']['cpu_s']:.1f} | "
            f"{r['online_wall_s']:.1f} | {peak_e:.0f}, "
            f"{s['aggregate']['peak_mb']:.0f} | {s['encrypt']['sent_bytes'] / 1e9:.2f} GB | "
            f"{s['aggregate']['sent_bytes'] / 1e6:.2f} MB |"
        )
    lines += [
        "",
        f"The dealer run at 1M rows (`profile_run.json`, {profile['commit']}): party CPU "
        f"A {profile['cpu_s'][0]:.2f} s, B {profile['cpu_s'][1]:.2f} s, peak "
        f"{profile['peak_mb'][0]:.0f} MB, {profile['bytes'] / 1e9:.2f} GB between the parties "
        "(both ways). A CPU figure above includes its process's start-up (imports, about 1 s).",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1 << 16])
    ap.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    ap.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args(argv)
    if args.role:
        print(json.dumps(ROLES[args.role](args.folder, args.rows[0])))
        return 0
    profile = json.loads((ROOT / "benchmarks/results/profile_run.json").read_text())
    parties = [x for x in profile["rows"] if x["role"] in ("A", "B")]
    dealer = {"commit": profile["commit"], "cpu_s": [x["cpu_s"] for x in parties],
              "peak_mb": [x["max_rss_mb"] for x in parties],
              "bytes": (1 << 20) * sum(map(sum, SIZES)) * 3}  # fmt: skip
    out = []
    for rows in args.rows:
        before = load_average()
        out.append({**run(rows), "dealer": dealer, "load_before": before,
                    "load_after": load_average()})  # fmt: skip
    write_results(args.json, args.md, run_head(__file__, argv), out, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
