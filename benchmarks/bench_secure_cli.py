"""method="secure" through the command-line roles, each command its own process.

1,000,000 rows x 15 columns over 3 parties (5 columns each; domain sizes 2 to 10, every
column a noisy function of one latent code, so the columns are correlated), made from a
fixed seed. The run is the one the commands document: keys, secret share / open, config
(--method secure --max-rows 1048576), party commit, server deal, party features / release
for each party, server select, party groups / measure and server synthesize (``--pipeline
paper``: party local, commit, server deal, party features / release and server synthesize).
The server's relaying is a hard link (no copy). Commands run one after another, so no two
compete for the cores.

Reported: the wall time and peak memory (max RSS, measured by GNU time) of every command;
each party's total over its step commands (target <= 60 s) and the server's over deal,
select and synthesize (target <= 90 s); the bytes each party sends (feature blobs and its
two releases). The protocol runs unseeded (noise from the cryptographic sampler), as a real
run would. ``--feature-width W`` (repeatable; ``default`` is the preset's) runs once per
width; ``--profile`` runs the slowest party command of each run again under cProfile (with a
copy of the party's state folder, its step record without that step) and reports where its
time goes. Numba compiles the kernels on their first use in an installation and caches them
(``__pycache__``): the first run after an install or a kernel edit includes that one-time
compilation (about a minute, mostly in ``server synthesize``), so repeat ``--feature-width``
to see the warm numbers too.

    python benchmarks/bench_secure_cli.py --feature-width default --feature-width default \
        --profile --md OUT.md
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table_head, write_json  # noqa: E402

from vertimrf.datasets.overlap import split_records  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402
from vertimrf.io import atomic_write_text  # noqa: E402
from vertimrf.protocol import (
    load_config,
)
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.widths import feature_width  # noqa: E402

PARTIES = {"A": range(0, 5), "B": range(5, 10), "C": range(10, 15)}
SIZES = (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 8, 6, 4, 3, 2)
TIME = "/usr/bin/time"  # GNU time: a child forked from here would count this process's memory
PARTY_TARGET, SERVER_TARGET = 60.0, 90.0
PARTY_STEPS = ("party local", "party commit", "party tokens", "party features", "party release",
               "party groups", "party measure")  # fmt: skip
SERVER_STEPS = ("server admit", "server deal", "server select", "server synthesize")


def make_data(folder: Path, rows: int, seed: int, overlap: float = 1.0) -> None:
    """Each party's CSV (record ID and its 5 columns, its own row order) and the spec; with
    ``overlap`` below 1 each party holds only some records, a fraction ``overlap`` of each
    party's shared by every party (:func:`~vertimrf.datasets.overlap.split_records`)."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 10, rows)
    columns = {}
    for j, size in enumerate(SIZES):
        keep = rng.random(rows) < 0.6 - 0.02 * j  # correlation with the latent code
        columns[f"c{j}"] = np.where(keep, (latent + j) % size, rng.integers(0, size, rows))
    df = pd.DataFrame(columns).astype(np.uint8)
    DomainSpec.from_dict({f"c{j}": s for j, s in enumerate(SIZES)}).to_json(folder / "spec.json")
    held = split_records(rows, list(PARTIES), overlap, rng) if overlap < 1 else {}
    for name, cols in PARTIES.items():
        (folder / name).mkdir()
        frame = df[[f"c{j}" for j in cols]].assign(id=np.arange(rows))
        rows_of = held[name] if held else rng.permutation(rows)
        frame.iloc[rows_of].to_csv(folder / name / f"{name}.csv", index=False)


def run(args: list[str], cwd: Path, python: list[str] | None = None) -> dict:
    """One command as a child process: its wall time, peak RSS and the phase timings it
    prints (raises on error)."""
    with tempfile.NamedTemporaryFile("r") as rss:
        start = time.perf_counter()
        proc = subprocess.run(
            [TIME, "-f", "%M", "-o", rss.name, *(python or [sys.executable]), "-m", "vertimrf",
             *args],
            cwd=cwd, capture_output=True, text=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"vertimrf {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
        max_rss_kb = int(rss.read().split()[-1])
    last = proc.stdout.strip().rpartition("\n")[2]
    return {
        "args": args,
        "wall": wall,
        "max_rss_mb": max_rss_kb / 1024,
        "phases": last.rpartition("; ")[2] if args[0] in ("party", "server") else "",
        "stdout": proc.stdout,
    }


def relay(src: Path, dst_folder: Path) -> None:
    """The server passes a file on (a hard link: the bytes are not copied)."""
    dst = dst_folder / src.name
    if dst.exists():
        dst.unlink()
    os.link(src, dst)


def party_command(name: str, extra: Sequence[str] = (), deal: bool = True) -> list[str]:
    """A party command's options (``deal``: with its deal); ``extra`` come last (a later
    --data replaces the CSV)."""
    peers = [f"{name}/{q}.pub" for q in PARTIES if q != name]
    return [
        "--config", "config.json", "--name", name, "--data", f"{name}/{name}.csv",
        "--secret", f"{name}/{name}.secret", "--keys", f"{name}/{name}.key",
        "--peers", *peers, *(["--deal", f"{name}/{name}.deal"] if deal else []),
        "--state-dir", f"{name}/state", "--quiet", *extra,
    ]  # fmt: skip


def stepper(
    root: Path, log: list[dict], python: list[str] | None = None
) -> Callable[[str, str, list[str]], None]:
    """``step(role, name, args)``: run one command in ``root`` (with ``python``, see
    :func:`run`), append its record (role, step, wall, RSS, ...) to ``log`` and print a
    line."""

    def step(role: str, name: str, args: list[str]) -> None:
        out = {"role": role, "step": name, **run(args, root, python)}
        log.append(out)
        print(f"{role:>6} {name:<18} {out['wall']:7.2f} s {out['max_rss_mb']:8.0f} MB", flush=True)

    return step


def setup(
    root: Path, width: int | None, max_rows: int, step: Callable, config: Sequence[str] = ()
) -> None:
    """The commands before the protocol: every role's keys (public keys relayed to every
    other role), the group secret (A shares, B and C open) and the config (with the further
    options ``config``)."""
    names = list(PARTIES)
    for n in names:
        step(n, "keys", ["keys", "--name", n, "--out-dir", n])
    step("S", "keys", ["keys", "--name", "server", "--out-dir", "S"])
    for n in names:
        for other in [*names, "S"]:
            if other != n:
                relay(root / n / f"{n}.pub", root / other)
    step("A", "secret share", ["secret", "share", "--keys", "A/A.key", "--to", "A/B.pub",
                               "A/C.pub", "--out-dir", "A"])  # fmt: skip
    for q in names[1:]:
        relay(root / "A" / f"secret-A-to-{q}.sealed", root / q)
        step(q, "secret open", ["secret", "open", f"{q}/secret-A-to-{q}.sealed", "--keys",
                                f"{q}/{q}.key", "--from", f"{q}/A.pub", "--out",
                                f"{q}/{q}.secret"])  # fmt: skip
    parties = [f"--party={n}={','.join(f'c{j}' for j in c)}" for n, c in PARTIES.items()]
    wide = [] if width is None else ["--feature-width", str(width)]
    step("S", "config", ["config", "--spec", "spec.json", *parties, "--epsilon", "1.0",
                         "--delta", "1e-6", "--method", "secure", "--max-rows", str(max_rows),
                         *wide, *config, "--out", "config.json"])  # fmt: skip


def protocol(
    root: Path,
    width: int | None,
    max_rows: int,
    pipeline: str = "select",
    config: Sequence[str] = (),
) -> list[dict]:
    """Every command of the run, in order; one record (role, step, wall, RSS, ...) each;
    ``config``: further options of ``vertimrf config``."""
    log: list[dict] = []
    step = stepper(root, log)
    setup(root, width, max_rows, step, ["--pipeline", pipeline, *config])
    (secure_steps if pipeline == "select" else paper_steps)(root, step)
    return log


def paper_steps(root: Path, step: Callable) -> None:
    """The paper pipeline's commands after :func:`setup`: party local (the count party A
    first, its noisy count relayed to B and C), commit, deal, features, release and
    synthesize on the local messages and the releases."""
    names = list(PARTIES)
    for n in names:
        count = [] if n == "A" else ["--count-from", f"{n}/count-A.vmrf"]
        step(n, "party local", ["party", "local", *party_command(n, count, False),
                                "--out", f"{n}/{n}.local.vmrf"])  # fmt: skip
        if n == "A":
            for q in names[1:]:
                relay(root / "A" / "A.local.vmrf", root / q)
                os.replace(root / q / "A.local.vmrf", root / q / "count-A.vmrf")
    deal_steps(root, step)
    for n in names:
        step(n, "party release", ["party", "release", *party_command(n), "--blobs", n,
                                  "--out", f"{n}/{n}.cross.vmrf"])  # fmt: skip
    step("S", "server synthesize", ["server", "synthesize", "--config", "config.json",
                                    *[f"{n}/{n}.local.vmrf" for n in names], "--releases",
                                    *[f"{n}/{n}.cross.vmrf" for n in names], "--out",
                                    "S/synth.csv", "--report", "S/report.json",
                                    "--server-key", "S/server.key", "--quiet"])  # fmt: skip


def deal_steps(
    root: Path, step: Callable, extra: Mapping[str, Sequence[str]] | None = None
) -> None:
    """Both pipelines' commit, deal and features commands, the files relayed between them;
    ``extra[name]``: further options of that party's commands."""
    names = list(PARTIES)
    more = extra or {}
    for n in names:
        step(n, "party commit", ["party", "commit", *party_command(n, more.get(n, ()), False),
                                 "--out", f"{n}/{n}.commit"])  # fmt: skip
        relay(root / n / f"{n}.commit", root / "S")
    commits = [f"S/{n}.commit" for n in names]
    tokens: list[str] = []
    if load_config(root / "config.json").record_sets == "partial":  # admit, then tokens
        pubs = [f"S/{n}.pub" for n in names]
        step("S", "server admit", ["server", "admit", "--config", "config.json", "--keys",
                                   *pubs, "--commits", *commits, "--out-dir", "S",
                                   "--server-key", "S/server.key"])  # fmt: skip
        for n in names:
            relay(root / "S" / f"{n}.admit", root / n)
            own = party_command(n, more.get(n, ()), False)
            step(n, "party tokens", ["party", "tokens", *own, "--admit", f"{n}/{n}.admit",
                                     "--out", f"{n}/{n}.tokens"])  # fmt: skip
            relay(root / n / f"{n}.tokens", root / "S")
        tokens = ["--tokens", *[f"S/{n}.tokens" for n in names], "--state", "S/server.state"]
    step("S", "server deal", ["server", "deal", "--config", "config.json", "--keys",
                              *[f"S/{n}.pub" for n in names], "--commits", *commits, *tokens,
                              "--out-dir", "S", "--server-key", "S/server.key"])  # fmt: skip
    for n in names:
        relay(root / "S" / f"{n}.deal", root / n)
        if tokens:  # partial record sets: the slot map, found beside the deal
            relay(root / "S" / f"{n}.deal-slots", root / n)
    for n in names:
        step(n, "party features", ["party", "features", *party_command(n, more.get(n, ())),
                                   "--out-dir", n])  # fmt: skip
    for n in names:
        for q in names:
            if q != n:
                relay(root / n / f"{n}-to-{q}.features", root / q)


def secure_steps(
    root: Path, step: Callable, extra: Mapping[str, Sequence[str]] | None = None
) -> None:
    """The protocol's commands after :func:`setup`: commit, deal, features, release, select,
    groups, measure and synthesize, the files relayed between them; ``extra[name]``: further
    options of that party's commands (``extra["S"]``: of server synthesize)."""
    names = list(PARTIES)
    more = extra or {}

    def party_options(n: str) -> list[str]:
        return party_command(n, more.get(n, ()))

    deal_steps(root, step, more)
    for n in names:
        step(n, "party release", ["party", "release", *party_options(n), "--blobs", n,
                                  "--out", f"{n}/{n}.select.vmrf"])  # fmt: skip
    step("S", "server select", ["server", "select", "--config", "config.json", "--releases",
                                *[f"{n}/{n}.select.vmrf" for n in names], "--out",
                                "S/request.json", "--keys", *[f"S/{n}.pub" for n in names],
                                "--select-deals", "S", "--state", "S/server.state",
                                "--server-key", "S/server.key", "--quiet"])  # fmt: skip
    round2 = {n: ["--request", f"{n}/request.json", "--select-deal", f"{n}/{n}.select-deal"]
              for n in names}  # fmt: skip
    for n in names:
        relay(root / "S" / "request.json", root / n)
        relay(root / "S" / f"{n}.select-deal", root / n)
        step(n, "party groups", ["party", "groups", *party_options(n), *round2[n],
                                 "--out-dir", n])  # fmt: skip
    for n in names:
        for q in names:
            if q != n:
                relay(root / n / f"{n}-to-{q}.groups", root / q)
    for n in names:
        step(n, "party measure", ["party", "measure", *party_options(n), *round2[n],
                                  "--blobs", n, "--out", f"{n}/{n}.measure.vmrf"])  # fmt: skip
    step("S", "server synthesize", ["server", "synthesize", "--config", "config.json",
                                    "--state", "S/server.state", "--releases",
                                    *[f"{n}/{n}.measure.vmrf" for n in names], "--out",
                                    "S/synth.csv", "--report", "S/report.json",
                                    "--server-key", "S/server.key", "--quiet",
                                    *more.get("S", ())])  # fmt: skip


def profile(root: Path, log: list[dict], top: int = 18) -> dict:
    """The slowest party command again under cProfile: the same inputs, its output and
    state redirected (a copy of the party's state folder whose record lacks that step), so
    the run's own files are untouched. Returns the command, the top functions by their own
    time, and vertimrf's functions by cumulative time."""
    slowest = max((r for r in log if r["step"] in PARTY_STEPS), key=lambda r: r["wall"])
    name, step = slowest["role"], slowest["step"].split()[1]
    state = root / "profile" / "state"
    shutil.copytree(root / name / "state", state)
    (record_path,) = state.glob("*/steps.json")
    record = json.loads(record_path.read_text())
    record["steps"].pop(step, None)
    record_path.write_text(json.dumps(record))
    args = list(slowest["args"])
    flag = "--out-dir" if "--out-dir" in args else "--out"
    args[args.index(flag) + 1] = f"profile/{Path(args[args.index(flag) + 1]).name}"
    stats_file = root / "profile" / "stats.prof"
    python = [sys.executable, "-m", "cProfile", "-o", str(stats_file)]
    again = run([*args, "--state-dir", str(state)], root, python)
    tables = []
    for order, restrict in (("tottime", ()), ("cumulative", (r"vertimrf/(?!__main__)",))):
        text = io.StringIO()
        pstats.Stats(str(stats_file), stream=text).sort_stats(order).print_stats(*restrict, top)
        body = text.getvalue()
        tables.append(body[body.index("ncalls") :].rstrip())
    return {
        "command": f"{name} {slowest['step']}",
        "wall": again["wall"],
        "by_self_time": tables[0],
        "vertimrf_cumulative": tables[1],
    }


def message_bytes(root: Path) -> dict[str, dict[str, int]]:
    """Bytes each party sends: its commitment, its tokens (partial record sets), its feature
    blobs of both rounds and its two releases."""
    out = {}
    for n in PARTIES:
        tokens = root / n / f"{n}.tokens"
        sent = {"commit": (root / n / f"{n}.commit").stat().st_size,
                "tokens": tokens.stat().st_size if tokens.exists() else 0}  # fmt: skip
        blobs = sum(p.stat().st_size for p in (root / n).glob(f"{n}-to-*.features"))
        groups = sum(p.stat().st_size for p in (root / n).glob(f"{n}-to-*.groups"))
        select = (root / n / f"{n}.select.vmrf").stat().st_size
        measure = (root / n / f"{n}.measure.vmrf").stat().st_size
        out[n] = {**sent, "blobs": blobs, "group_blobs": groups, "select": select,
                  "measure": measure}  # fmt: skip
    return out


@contextlib.contextmanager
def run_folder(args: argparse.Namespace, prefix: str) -> Iterator[Path]:
    """A fresh folder (kept with --keep, in --workdir if given) holding the benchmark's
    table (``make_data``)."""
    base = Path(args.workdir or tempfile.gettempdir())
    with contextlib.ExitStack() as stack:
        if args.keep:
            root = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
            print(f"the run's folder (kept): {root}")
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=base)))
        start = time.perf_counter()
        make_data(root, args.rows, args.seed, args.overlap)
        print(f"data: {args.rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
        yield root


def one_run(args: argparse.Namespace, width: int | None) -> dict:
    """Data, the whole protocol and (with --profile) the profile, in a fresh folder."""
    with run_folder(args, "bench_secure_cli.") as root:
        load = [os.getloadavg()[0]]
        sets = ["--record-sets", args.record_sets] if args.record_sets else []
        log = protocol(root, width, args.max_rows, args.pipeline, sets)
        load.append(os.getloadavg()[0])
        config = load_config(root / "config.json")
        plan = secure_plan(config)
        res = {
            "feature_width": getattr(config.options, "feature_width", None),
            "width_cap": feature_width(config) if args.pipeline == "select" else None,
            "preset_width": width is None,
            "widths": dict(zip(plan.names, plan.widths, strict=True)),
            "load_average": load,
            "commands": [{k: v for k, v in r.items() if k != "stdout"} for r in log],
            "party_totals": {
                n: sum(r["wall"] for r in log if r["role"] == n and r["step"] in PARTY_STEPS)
                for n in PARTIES
            },
            "server_total": sum(r["wall"] for r in log if r["step"] in SERVER_STEPS),
            "message_bytes": message_bytes(root) if args.pipeline == "select" else {},
            "report": log[-1]["stdout"].strip(),
            # the two mirror-descent fits stop at a target loss: their iterations (which vary
            # from run to run with the noise) drive the synthesize time
            "server_iterations": json.loads((root / "S" / "report.json").read_text()).get(
                "iterations"
            ),
        }
        if args.profile:
            res["profile"] = profile(root, log)
    return res


def _met(t: float, target: float) -> str:
    return "yes" if t <= target else f"**no, {t - target:.1f} s over ({t / target:.1f}x)**"


def markdown(head: dict, runs: list[dict]) -> str:
    """The results as Markdown: one section per feature width."""
    lines = [
        '# method="secure" through the command-line roles (`bench_secure_cli.py`)',
        "",
        f"{head['rows']:,} rows x {len(SIZES)} columns over 3 parties (5 columns each; domain "
        f"sizes {list(SIZES)}), max_rows {head['max_rows']:,}, epsilon 1, delta 1e-6, "
        "unseeded. Every command is its own process, one after another; the relay is a hard "
        "link.",
        "",
        f"Machine: {head['machine']}, `nproc` = {head['nproc']}, {head['memory_gb']:.0f} GB RAM.",
    ]
    for res in runs:
        load = res["load_average"]
        lines += [
            "",
            f"## feature width {res['feature_width']}"
            f"{' (the preset default)' if res['preset_width'] else ''}, cap "
            f"{res.get('width_cap', res['feature_width'])}: one-hot widths {res['widths']}",
            "",
            f"1-minute load average {load[0]:.2f} at the start, {load[1]:.2f} at the end (other "
            "work shares the 2 cores; above 1 means commands waited for a core).",
            "",
            "| role | command | wall (s) | peak RSS (MB) | the command's own phases |",
            "|---|---|---:|---:|---|",
        ]
        lines += [
            f"| {r['role']} | {r['step']} | {r['wall']:.2f} | {r['max_rss_mb']:,.0f} | "
            f"{r['phases']} |"
            for r in res["commands"]
        ]
        lines += ["", "| totals | wall (s) | target (s) | met |", "|---|---:|---:|---|"]
        for n, t in res["party_totals"].items():
            row = f"| party {n}: its step commands | {t:.1f} | {PARTY_TARGET:.0f} |"
            lines.append(f"{row} {_met(t, PARTY_TARGET)} |")
        t = res["server_total"]
        row = f"| server: deal + select + synthesize | {t:.1f} | {SERVER_TARGET:.0f} |"
        lines.append(f"{row} {_met(t, SERVER_TARGET)} |")
        if res.get("server_iterations") is not None:
            lines += ["", f"Server fit iterations (warm start, final): {res['server_iterations']}."]
        lines += [
            "",
            "| party sends | feature blobs (B) | first release (B) | re-measure (B) | total (B) |",
            "|---|---:|---:|---:|---:|",
        ]
        for n, b in res["message_bytes"].items():
            total = sum(b.values())
            lines.append(
                f"| {n} | {b['blobs']:,} | {b['select']:,} | {b['measure']:,} | {total:,} |"
            )
        if "profile" in res:
            p = res["profile"]
            lines += [
                "",
                f"Profile of the slowest party command, {p['command']}, run again under "
                f"cProfile ({p['wall']:.1f} s). Top functions by their own time:",
                "",
                "```",
                p["by_self_time"],
                "```",
                "",
                "vertimrf's functions by cumulative time:",
                "",
                "```",
                p["vertimrf_cumulative"],
                "```",
            ]
        lines += ["", "Report of the run:", "", "```", res["report"], "```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--max-rows", type=int, default=1 << 20, help="the public max_rows")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument(
        "--feature-width",
        type=lambda v: None if v == "default" else v if v == "auto" else int(v),
        action="append",
        help="a width, 'auto', or 'default' for the preset's ('auto' since the width cap by "
        "max_rows); repeat for one run each (default: default)",
    )
    parser.add_argument("--pipeline", choices=("select", "paper"), default="select")
    parser.add_argument(
        "--record-sets",
        choices=("equal", "partial"),
        default=None,
        help="the config's record sets (default: the method's)",
    )
    parser.add_argument(
        "--overlap",
        type=float,
        default=1.0,
        help="the share of each party's records that every party holds",
    )
    parser.add_argument("--profile", action="store_true", help="profile the slowest command")
    parser.add_argument("--workdir", default=None, help="folder for the runs (default: a temp)")
    parser.add_argument("--keep", action="store_true", help="keep each run's folder")
    parser.add_argument("--json", default=None, help="also write the figures as JSON")
    parser.add_argument("--md", default=None, help="write the results as Markdown")
    args = parser.parse_args()
    head = table_head(args.rows, args.max_rows)
    print(head, flush=True)
    runs = [one_run(args, w) for w in (args.feature_width or [None])]
    for res in runs:
        print(res["feature_width"], res["party_totals"], res["server_total"])
    write_json(args.json, {**head, "runs": runs})
    if args.md:
        atomic_write_text(args.md, markdown(head, runs))


if __name__ == "__main__":
    main()
