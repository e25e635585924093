"""Issue 33, item 10: do a party's step times reveal its record count n beyond max_rows?

The bundled Adult table (its 15 columns over 2 parties, A of 8 and B of 7, as in the run the
issue reports; ``--parties 3``: bench_secure_cli's 3 parties of 5; every party's CSV in its own
row order) at several n (a fixed sample of n of its 45,222 rows), one config (method secure,
max_rows 65,536) for every n. Each run is the select pipeline's party
commands, each its own process, as bench_secure_cli runs them: party features, party
release, server select, party groups, party measure, with fresh state folders (the keys,
the group secret, the config and the deals are made once). The runs alternate between the
n (n1, n2, n3, n1, ...), so a drift of the machine's load falls on every n alike.

Reported, per party and step, the median over ``--repeat`` runs of the command's phases
(``read``: the party's table opened, ``<step>``: the step, ``write``: its messages written;
their sum is the party's time between the step's inputs and its outputs, what the server
sees as the gap between the messages) and of its wall time (with Python's start); then, per
step, the largest minus the smallest n's time and the least-squares slope in seconds per
1,000 records; and the shape of the server's request per n (its marginals, those of 3 or
more attributes, the binned ones, their cells: ``groups`` and ``measure`` work on them).
``--profile`` runs party A's features at the smallest and the largest n again under cProfile
and lists the functions whose own time grows most between the two.

    python benchmarks/bench_timing_channel.py --repeat 3 --profile \
        --json benchmarks/results/bench_timing_channel.json \
        --md benchmarks/results/bench_timing_channel.md
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_secure_cli  # noqa: E402
from _common import command_line, git_commit, machine, write_json  # noqa: E402
from bench_secure_cli import party_command, relay, stepper  # noqa: E402

from vertimrf import load_dataset  # noqa: E402
from vertimrf.domain import DomainSpec  # noqa: E402

STEPS = ("features", "release", "groups", "measure")
MAX_ROWS = 65_536
ROWS = (1_000, 8_000, 45_222)
# --parties: Adult's 15 columns over 2 parties (the run) or 3 (bench_secure_cli's)
SPLITS = {2: {"A": range(0, 8), "B": range(8, 15)}, 3: bench_secure_cli.PARTIES}


def names() -> list[str]:
    """The parties of this benchmark (``--parties``)."""
    return list(bench_secure_cli.PARTIES)


def make_data(root: Path, rows: Sequence[int], seed: int) -> None:
    """``data/<n>/<party>.csv`` for each n (record ID and the party's columns, its own row
    order) and the spec (Adult's columns named c0..c14, as bench_secure_cli's parties)."""
    df, spec = load_dataset("adult")  # columns of codes 0 .. size - 1
    df.columns = [f"c{j}" for j in range(len(spec.names))]
    sizes = {f"c{j}": len(col.categories or ()) for j, col in enumerate(spec.columns)}
    DomainSpec.from_dict(sizes).to_json(root / "spec.json")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(df))
    for n in rows:
        folder = root / "data" / str(n)
        folder.mkdir(parents=True)
        sample = df.iloc[np.sort(order[:n])].assign(id=np.arange(n))
        for name, cols in bench_secure_cli.PARTIES.items():
            frame = sample[[f"c{j}" for j in cols] + ["id"]]
            frame.iloc[rng.permutation(n)].to_csv(folder / f"{name}.csv", index=False)


def setup(root: Path, max_rows: int, step: Callable) -> None:
    """Every role's keys (the public keys relayed to the others), the group secret (A shares,
    the others open), the config and the deals: one run's, used by every run."""
    parties = names()
    for q in [*parties, "server"]:
        folder = "S" if q == "server" else q
        step(folder, "keys", ["keys", "--name", q, "--out-dir", folder])
    for q in parties:
        for other in [*parties, "S"]:
            if other != q:
                relay(root / q / f"{q}.pub", root / other)
    peers = [f"A/{q}.pub" for q in parties[1:]]
    step("A", "secret share", ["secret", "share", "--keys", "A/A.key", "--to", *peers,
                               "--out-dir", "A"])  # fmt: skip
    for q in parties[1:]:
        relay(root / "A" / f"secret-A-to-{q}.sealed", root / q)
        step(q, "secret open", ["secret", "open", f"{q}/secret-A-to-{q}.sealed", "--keys",
                                f"{q}/{q}.key", "--from", f"{q}/A.pub", "--out",
                                f"{q}/{q}.secret"])  # fmt: skip
    split = [f"--party={q}={','.join(f'c{j}' for j in c)}"
             for q, c in bench_secure_cli.PARTIES.items()]  # fmt: skip
    step("S", "config", ["config", "--spec", "spec.json", *split, "--epsilon", "1.0", "--delta",
                         "1e-6", "--method", "secure", "--max-rows", str(max_rows), "--out",
                         "config.json"])  # fmt: skip
    step("S", "server deal", ["server", "deal", "--config", "config.json", "--keys",
                              *[f"S/{q}.pub" for q in parties], "--out-dir", "S",
                              "--server-key", "S/server.key"])  # fmt: skip
    for q in parties:
        relay(root / "S" / f"{q}.deal", root / q)


def phases(text: str) -> dict[str, float]:
    """``read 0.52 s, features 2.10 s, write 0.01 s`` as a dict of seconds."""
    out = {}
    for part in text.split(", "):
        name, _, rest = part.rpartition(" ")[0].rpartition(" ")
        out[name] = float(rest)
    return out


def one_run(root: Path, n: int, tag: str) -> list[dict]:
    """The party commands (and server select) of one run at ``n`` rows, in ``runs/<tag>``:
    one record per command (role, step, n, wall, phases)."""
    log: list[dict] = []
    step = stepper(root, log)
    run = Path("runs") / tag
    mail = run / "mail"
    (root / mail).mkdir(parents=True)

    def party(name: str, extra: Sequence[str]) -> list[str]:
        data = ["--data", f"data/{n}/{name}.csv", "--state-dir", str(run / f"{name}-state")]
        return party_command(name, [*data, *extra])

    round2 = {q: ["--request", str(mail / "request.json"), "--select-deal",
                  str(mail / f"{q}.select-deal")] for q in names()}  # fmt: skip
    for q in names():
        step(q, "features", ["party", "features", *party(q, ["--out-dir", str(mail)])])
    for q in names():
        step(
            q,
            "release",
            [
                "party",
                "release",
                *party(q, ["--blobs", str(mail), "--out", str(mail / f"{q}.select.vmrf")]),
            ],
        )
    step("S", "select", ["server", "select", "--config", "config.json", "--releases",
                         *[str(mail / f"{q}.select.vmrf") for q in names()],
                         "--out", str(mail / "request.json"),
                         "--keys", *[f"S/{q}.pub" for q in names()], "--select-deals", str(mail),
                         "--state-dir", str(run / "server-state"),
                         "--server-key", "S/server.key", "--quiet"])  # fmt: skip
    for q in names():
        step(q, "groups", ["party", "groups", *party(q, [*round2[q], "--out-dir", str(mail)])])
    for q in names():
        step(
            q,
            "measure",
            [
                "party",
                "measure",
                *party(q, [*round2[q], "--blobs", str(mail), "--out", str(mail / f"{q}.m.vmrf")]),
            ],
        )
    request = json.loads((root / mail / "request.json").read_text())
    shutil.rmtree(root / run)  # the next run starts afresh
    return [
        {"role": r["role"], "step": r["step"], "n": n, "wall": r["wall"],
         "phases": phases(r["phases"]) if r["role"] != "S" else {},
         **request_shape(request)}
        for r in log
    ]  # fmt: skip


def request_shape(request: dict) -> dict[str, int]:
    """The request's marginals: how many, how many of 3 or more attributes (they need the
    round-2 groups), how many binned, and their cells at full domain."""
    sizes = [len(c.categories or ()) for c in load_dataset("adult")[1].columns]
    marginals = request["marginals"]
    return {
        "request_marginals": len(marginals),
        "request_wide": sum(len(m) > 2 for m in marginals),
        "request_binned": len(request["bins"]),
        "request_cells": sum(int(np.prod([sizes[a] for a in m])) for m in marginals),
    }


def slope(ns: Sequence[int], seconds: Sequence[float]) -> float:
    """The least-squares slope of ``seconds`` over ``ns``, in seconds per 1,000 records."""
    return float(np.polyfit(np.asarray(ns) / 1000, seconds, 1)[0])


def summarize(records: list[dict], rows: Sequence[int]) -> list[dict]:
    """Per party and step: the median of each phase, of their sum and of the wall time per n;
    the largest minus the smallest n's, and the slope per 1,000 records."""
    out = []
    for name in names():
        for step in STEPS:
            runs = {n: [r for r in records if (r["role"], r["step"], r["n"]) == (name, step, n)]
                    for n in rows}  # fmt: skip
            keys = list(runs[rows[0]][0]["phases"])
            med: dict[str, dict[int, float]] = {}
            for key in [*keys, "work", "wall"]:
                med[key] = {}
                for n in rows:
                    values = [
                        sum(r["phases"].values()) if key == "work"
                        else r["wall"] if key == "wall" else r["phases"][key]
                        for r in runs[n]
                    ]  # fmt: skip
                    med[key][n] = statistics.median(values)
            out.append({
                "party": name, "step": step, "median": med,
                "difference": {k: v[rows[-1]] - v[rows[0]] for k, v in med.items()},
                "slope_per_1000": {k: slope(rows, [v[n] for n in rows]) for k, v in med.items()},
            })  # fmt: skip
    return out


def profile(root: Path, rows: Sequence[int], top: int) -> dict:
    """Party A's features at the smallest and the largest n under cProfile (fresh state):
    the functions whose own time grows most from one to the other."""
    own: dict[int, dict[str, float]] = {}
    for n in (rows[0], rows[-1]):
        state, out, stats = (root / "profile" / f"{n}-{k}" for k in ("state", "out", "prof"))
        args = party_command("A", ["--data", f"data/{n}/A.csv", "--state-dir", str(state),
                                   "--out-dir", str(out)])  # fmt: skip
        subprocess.run(
            [sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "vertimrf", "party",
             "features", *args], cwd=root, check=True, capture_output=True,
        )  # fmt: skip
        table = pstats.Stats(str(stats), stream=io.StringIO()).stats  # type: ignore[attr-defined]
        own[n] = {}
        for (path, line, func), (_, _, tottime, _, _) in table.items():
            short = path.rpartition("site-packages/")[2].rpartition("vertimrf/")
            where = f"vertimrf/{short[2]}" if short[1] else Path(path).name
            own[n][f"{where}:{line}({func})"] = tottime
    small, large = own[rows[0]], own[rows[-1]]
    growth = {f: large.get(f, 0.0) - small.get(f, 0.0) for f in {*small, *large}}
    worst = sorted(growth, key=growth.get, reverse=True)[:top]  # type: ignore[arg-type]
    return {
        "rows": [rows[0], rows[-1]],
        "total": [sum(small.values()), sum(large.values())],
        "growth": [
            {
                "function": f,
                "small": small.get(f, 0.0),
                "large": large.get(f, 0.0),
                "growth": growth[f],
            }
            for f in worst
        ],  # fmt: skip
    }


def markdown(result: dict) -> str:
    rows = result["rows"]
    lines = [
        "# A party's step times against its record count n (issue 33, item 10)",
        "",
        f"Commit {result['commit']}; {result['machine']}; max_rows {result['max_rows']:,}; "
        f"median of {result['repeat']} runs per n; command: `{result['command']}`.",
        "",
        "`work` is read + step + write, the party's time between a step's inputs and its "
        "outputs; `wall` adds the process's start.",
        "",
        "| party | step | phase | "
        + " | ".join(f"n = {n:,}" for n in rows)
        + f" | {rows[-1]:,} - {rows[0]:,} | s per 1,000 records |",
        "|---|---|---|" + "---:|" * (len(rows) + 2),
    ]
    for s in result["steps"]:
        for key, by_n in s["median"].items():
            cells = " | ".join(f"{by_n[n]:.2f}" for n in rows)
            lines.append(
                f"| {s['party']} | {s['step']} | {key} | {cells} | "
                f"{s['difference'][key]:+.2f} | {s['slope_per_1000'][key]:+.4f} |"
            )
    lines += [
        "",
        "The server's request (what `groups` and `measure` work on, chosen from the noisy "
        "first releases), median per n:",
        "",
        "| request | " + " | ".join(f"n = {n:,}" for n in rows) + " |",
        "|---|" + "---:|" * len(rows),
    ]
    for key, by_n in result["request"].items():
        lines.append(f"| {key} | " + " | ".join(f"{by_n[n]:,.0f}" for n in rows) + " |")
    if "profile" in result:
        p = result["profile"]
        lines += [
            "",
            f"## Where A's features time grows (cProfile, own time, n = {p['rows'][0]:,} "
            f"against n = {p['rows'][1]:,}; totals {p['total'][0]:.2f} s and "
            f"{p['total'][1]:.2f} s, profiler overhead included)",
            "",
            "| function | small n (s) | large n (s) | growth (s) |",
            "|---|---:|---:|---:|",
        ]
        for g in p["growth"]:
            lines.append(
                f"| `{g['function']}` | {g['small']:.3f} | {g['large']:.3f} | {g['growth']:+.3f} |"
            )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, nargs="+", default=list(ROWS), help="the n to time")
    ap.add_argument("--repeat", type=int, default=3, help="runs per n (the median is reported)")
    ap.add_argument("--max-rows", type=int, default=MAX_ROWS)
    ap.add_argument("--parties", type=int, choices=sorted(SPLITS), default=2)
    ap.add_argument("--profile", action="store_true", help="also profile A's features")
    ap.add_argument("--top", type=int, default=15, help="functions listed by --profile")
    ap.add_argument("--seed", type=int, default=0, help="seeds the sample and the row orders")
    ap.add_argument("--json", default=None)
    ap.add_argument("--md", default=None)
    args = ap.parse_args()
    rows = sorted(args.rows)
    bench_secure_cli.PARTIES = SPLITS[args.parties]  # setup and party_command read it
    with tempfile.TemporaryDirectory(prefix="vmrf-timing-") as tmp:
        root = Path(tmp)
        log: list[dict] = []
        make_data(root, rows, args.seed)
        setup(root, args.max_rows, stepper(root, log))
        records: list[dict] = []
        start = time.perf_counter()
        for k in range(args.repeat):
            for n in rows:
                print(f"run {k + 1} of {args.repeat}, n = {n:,}", flush=True)
                records += one_run(root, n, f"{n}-{k}")
        result = {
            "commit": git_commit(Path(__file__).parent),
            "machine": machine(),
            "command": command_line("benchmarks/bench_timing_channel.py", sys.argv[1:]),
            "rows": rows,
            "max_rows": args.max_rows,
            "parties": {q: [f"c{j}" for j in c] for q, c in bench_secure_cli.PARTIES.items()},
            "repeat": args.repeat,
            "seconds": time.perf_counter() - start,
            "steps": summarize(records, rows),
            "request": {
                key.removeprefix("request_"): {
                    n: statistics.median(r[key] for r in records if r["n"] == n) for n in rows
                }
                for key in ("request_marginals", "request_wide", "request_binned", "request_cells")
            },
            "records": records,
        }
        if args.profile:
            result["profile"] = profile(root, rows, args.top)
    text = markdown(result)
    print(text)
    write_json(args.json, result)
    if args.md:
        Path(args.md).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
