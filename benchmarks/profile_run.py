"""A default run at 1M rows, each role its own process, profiled: CPU seconds per phase for
party A, party B and the server.

The run is the documented one over folders (docs/own-data.md): keys, the group secret, the
config (the bundled Adult with its real columns and categories, 8 columns at A and 7 at B,
epsilon 1.6, delta 1e-6, max_rows 2^20, the secure method's defaults: partial record sets),
then ``server run`` and two ``party run`` at once. Each party holds every record of a table
of ``--rows`` rows drawn with replacement from Adult (a fixed seed), in its own order.

Each role's CPU seconds (user + system, from ``wait4``) are split over its phases by a py-spy
sample of its main thread (``--rate`` a second, not pausing it): a sample goes to the phase of
the innermost frame a rule of :data:`PHASES` names, and a phase gets the role's CPU in
proportion to its samples. The kernels run on one thread (``NUMBA_NUM_THREADS=1``), so that
the main thread's samples cover all the CPU; the load and the cores are stated.

    python benchmarks/profile_run.py --json benchmarks/results/profile_run.json \
        --md benchmarks/results/profile_run.md
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_average, peak_rss_kb, run_head, write_results  # noqa: E402

A = "age,workclass,fnlwgt,education,education_num,marital_status,occupation,relationship"
B = "race,sex,capital_gain,capital_loss,hours_per_week,native_country,income"
ROLES = ("A", "B", "server")
# Each product backend's config options (product "paillier" runs with split noise).
PRODUCTS = {"dealer": [], "paillier": ["--product", "paillier", "--cross-noise", "split"]}
# (phase, what a frame's text must match): a sample goes to the first rule that names its
# innermost frame (then the next frame out, and so on); rules are tried in this order.
PHASES = (
    ("start-up: imports, Numba cache", r"_find_and_load|numba/core/(dispatcher|caching)"),
    ("encode codes", r"party/records/(table_input|frame|memory|file_table|source)\.py"),
    ("tokens", r"party/records/tokens\.py|protocol/secure/tokens\.py"),
    ("slots: part files, sorts, layout",
     r"party/records/(slot_file|slot_table|part_files|layout|aligned|kept_aligned)\.py"),
    ("AES-CTR masks", r"crypto/prg\.py|protocol/masks\.py"),
    ("one-hot X - U", r"mask_features"),
    ("product", r"product/dealer\.py|kernels/secure\.py"),
    ("Paillier", r"crypto/paillier|product/paillier|party/secure/paillier\.py"),
    ("pack / unpack", r"protocol/secure/(features|wire)\.py"),
    ("AES-GCM, SHA-256", r"crypto/(aead|kdf|keys)\.py|sha256|hashlib"),
    ("sample and write", r"mrf/sampling\.py|synth/(table_file|csv_rows)\.py|kernels/sample"),
    ("fit", r"vertimrf/mrf/|kernels/bp\.py|synth/engine/|server/secure/(fit|union_fit)\.py"),
    ("selection", r"server/secure/(selection|oracle)\.py"),
    ("noise, releases, ledger", r"vertimrf/privacy/|party/secure/release\.py"),
    ("server's record sets", r"server/(slots|secure/record_sets|secure/dealer)\.py"),
    ("messages and transport", r"vertimrf/(driver|container|codec|io)"),
)  # fmt: skip


def _make_data(folder: Path, rows: int, seed: int) -> None:
    from vertimrf.datasets import load_dataset

    df, _ = load_dataset("adult_labeled")
    rng = np.random.default_rng(seed)
    table = df.iloc[rng.integers(0, len(df), rows)].reset_index(drop=True)
    table.insert(0, "id", np.arange(rows))
    for name, cols in (("A", A), ("B", B)):
        part = table[["id", *cols.split(",")]].iloc[rng.permutation(rows)]
        part.to_csv(folder / f"{name}.csv", index=False)


def _vertimrf(root: Path, *args: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", *args], cwd=root, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(f"vertimrf {' '.join(args)} failed:\n{proc.stderr[-2000:]}")


def _setup(root: Path, epsilon: float, max_rows: int, product: str) -> None:
    for name in ("A", "B"):
        _vertimrf(root, "keys", "--name", name, "--out-dir", name)
    _vertimrf(root, "keys", "--name", "server", "--out-dir", "S")
    _vertimrf(root, "secret", "share", "--keys", "A/A.key", "--to", "B/B.pub", "--out-dir", "A")
    _vertimrf(root, "secret", "open", "A/secret-A-to-B.sealed", "--keys", "B/B.key",
              "--from", "A/A.pub", "--out", "B/B.secret")  # fmt: skip
    _vertimrf(root, "config", "--dataset", "adult_labeled", "--party", f"A={A}",
              "--party", f"B={B}", "--epsilon", str(epsilon), "--delta", "1e-6",
              "--max-rows", str(max_rows), "--pin", "A/A.pub", "B/B.pub", "S/server.pub",
              "--out", "config.json", *PRODUCTS[product])  # fmt: skip


def _commands() -> dict[str, list[str]]:
    base = [sys.executable, "-m", "vertimrf"]
    out = {"server": [*base, "server", "run", "--config", "config.json", "--server-key",
                      "S/server.key", "--state-dir", "S/state", "--inbox", "mail/server",
                      "--outbox", "mail", "--out", "synth.csv", "--quiet"]}  # fmt: skip
    for name in ("A", "B"):
        out[name] = [*base, "party", "run", "--config", "config.json", "--data",
                     f"{name}.csv", "--keys", f"{name}/{name}.key", "--secret",
                     f"{name}/{name}.secret", "--state-dir", f"{name}/state", "--inbox",
                     f"mail/{name}", "--outbox", "mail", "--quiet"]  # fmt: skip
    return out


def _run(root: Path, spy: str, rate: int) -> dict[str, dict]:
    """Every role at once, each sampled by py-spy: its CPU seconds and its samples."""
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    roles, spies, logs = {}, [], {}
    for role, command in _commands().items():
        logs[role] = open(root / f"{role}.log", "w")  # noqa: SIM115 (closed below)
        roles[role] = subprocess.Popen(command, cwd=root, env=env, stdout=logs[role],
                                       stderr=subprocess.STDOUT)  # fmt: skip
        spies.append(subprocess.Popen(
            [spy, "record", "--pid", str(roles[role].pid), "--format", "raw", "--rate",
             str(rate), "--nonblocking", "-o", str(root / f"{role}.spy")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        ))  # fmt: skip
    out: dict[str, dict] = {}
    peaks = _HighWater({role: proc.pid for role, proc in roles.items()})
    try:
        for role, proc in roles.items():
            _, status, usage = os.wait4(proc.pid, 0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                raise RuntimeError(f"{role} failed: {(root / f'{role}.log').read_text()[-2000:]}")
            out[role] = {"cpu_s": usage.ru_utime + usage.ru_stime,
                         "max_rss_mb": peaks.stop(role) / 1024}  # fmt: skip
        for proc in spies:
            proc.wait(timeout=120)
    finally:
        for proc in [*roles.values(), *spies]:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for fh in logs.values():
            fh.close()
    for role in out:
        out[role]["samples"] = _samples(root / f"{role}.spy")
    return out


class _HighWater:
    """Each role's peak resident memory (kB): its ``VmHWM`` in /proc, read every
    ``every`` seconds until it exits. ``wait4``'s ``ru_maxrss`` is not used: the kernel
    folds the forking parent's resident set into it at exec, so every role would show the
    profiler's own (574 MB at 1M rows). A peak in the last ``every`` seconds of a role may
    be missed."""

    def __init__(self, pids: dict[str, int], every: float = 0.2) -> None:
        self.pids, self.every, self.peak = dict(pids), every, dict.fromkeys(pids, 0)
        self._done: set[str] = set()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while len(self._done) < len(self.pids):
            for role, pid in self.pids.items():
                if role not in self._done:
                    self.peak[role] = max(self.peak[role], peak_rss_kb(pid))
            time.sleep(self.every)

    def stop(self, role: str) -> int:
        """The role's peak (kB), its process reaped: polling it ends."""
        self._done.add(role)
        return self.peak[role]


def _samples(path: Path) -> Counter:
    """A py-spy raw file's samples by phase."""
    rules = [(phase, re.compile(pattern)) for phase, pattern in PHASES]
    counts: Counter = Counter()
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        frames = stack.split(";")[::-1]  # innermost first
        phase = next((p for frame in frames for p, rule in rules if rule.search(frame)), "other")
        counts[phase] += int(n)
    return counts


def markdown(head: dict, rows: list[dict]) -> str:
    per = 1_000_000 / head["rows"]
    lines = [
        f"# A default run at 1M rows, profiled by phase (product {head.get('product', 'dealer')})",
        "",
        f"`{head['command']}` at {head['commit']}; {head['machine']}; "
        f"load average {head['load_before']} before, {head['load_after']} after; kernels on "
        f"one thread; {head['rows']:,} rows, 2 parties (8 and 7 Adult columns), epsilon "
        f"{head['epsilon']}, partial record sets (every record at both); wall "
        f"{head['wall_s']:.0f} s with every role at once.",
        "",
        "CPU seconds per 1M rows (a role's user + system CPU, split over its phases by its "
        f"py-spy samples at {head['rate']} a second; see the script's doc).",
        "",
        "| phase | " + " | ".join(ROLES) + " |",
        "|---|" + "---:|" * len(ROLES),
    ]
    by_role = {r["role"]: r for r in rows}
    phases = [p for p, _ in PHASES] + ["other"]
    for phase in phases:
        cells = [by_role[r]["phases"].get(phase, 0.0) * per for r in ROLES]
        if any(c >= 0.005 for c in cells):
            lines.append(f"| {phase} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    lines.append(
        "| **total** | " + " | ".join(f"**{by_role[r]['cpu_s'] * per:.2f}**" for r in ROLES) + " |"
    )
    lines.append("")
    lines.append(
        "Peak memory (MB): "
        + ", ".join(f"{r} {by_role[r]['max_rss_mb']:,.0f}" for r in ROLES)
        + "; samples: "
        + ", ".join(f"{r} {by_role[r]['samples']:,}" for r in ROLES)
        + "; bytes sent (MB, the messages in the mail folder): "
        + ", ".join(f"{r} {by_role[r].get('sent_mb', 0.0):,.1f}" for r in ROLES)
        + "."
    )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--epsilon", type=float, default=1.6)
    ap.add_argument("--max-rows", type=int, default=1 << 20)
    ap.add_argument("--rate", type=int, default=50, help="py-spy samples a second")
    ap.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--product", choices=sorted(PRODUCTS), default="dealer")
    ap.add_argument("--json")
    ap.add_argument("--md")
    args = ap.parse_args(argv)
    head = {**run_head(__file__, argv), "rows": args.rows, "epsilon": args.epsilon,
            "rate": args.rate, "product": args.product}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="vertimrf-profile-") as tmp:
        root = Path(tmp)
        for folder in ("A", "B", "S", "mail"):
            (root / folder).mkdir()
        _make_data(root, args.rows, args.seed)
        _setup(root, args.epsilon, args.max_rows, args.product)
        head["load_before"] = load_average()
        start = time.perf_counter()
        measured = _run(root, args.py_spy, args.rate)
        head["wall_s"] = time.perf_counter() - start
        head["load_after"] = load_average()
        sent = {r: sum(p.stat().st_size for p in (root / "mail").glob(f"*/{r}.*")) for r in ROLES}
    rows = []
    for role in ROLES:
        m = measured[role]
        total = sum(m["samples"].values()) or 1
        phases = {p: m["cpu_s"] * n / total for p, n in m["samples"].items()}
        rows.append({"role": role, "cpu_s": m["cpu_s"], "max_rss_mb": m["max_rss_mb"],
                     "samples": total, "phases": phases, "sent_mb": sent[role] / 1e6})  # fmt: skip
    write_results(args.json, args.md, head, rows, markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
