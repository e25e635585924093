"""method="secure" with one process per role: the directory transport, later loopback HTTPS.

Issue 22's benchmark. The table is bench_secure_cli's (1,000,000 rows x 15 columns over 3
parties by default, from a fixed seed), and so are the keys, the group secret and the config
(made by the same command-line steps). Then, in one run:

* today's baseline (``--baseline``, the default): bench_secure_cli's step commands, one
  after another, each its own process; the peak memory of a party's commands is the
  "no higher than today" mark;
* ``--transport directory``: ``python -m vertimrf.driver party|server``, the server and the
  three parties started together, each its own process, exchanging files through a shared
  mail folder (every role's outbox; its inbox the subfolder of its name);
* ``--transport https``: the same roles over loopback HTTPS (``party run --server URL``,
  ``server run --listen``), once ``vertimrf.service`` exists; ``both`` runs the two.

Reported: the wall time of the whole run and of every process, every process's peak RSS
(GNU time's maximum resident set size, so the benchmark's own memory is not counted), and
the bytes each role sends, by message kind. The runs are unseeded, as a real run would be.
``--quick`` is a smoke run on a small table (seconds, not minutes).

    python benchmarks/bench_service.py --transport directory --json OUT.json --md OUT.md
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, write_json  # noqa: E402
from bench_secure_cli import (  # noqa: E402
    PARTIES,
    PARTY_STEPS,
    SERVER_STEPS,
    TIME,
    make_data,
    message_bytes,
    secure_steps,
    setup,
    stepper,
)

from vertimrf.io import atomic_write_text  # noqa: E402

SERVER = "server"  # the server's role name in the driver's messages
QUICK_ROWS, QUICK_MAX_ROWS = 3_000, 4_096
TIMEOUT = 3600  # seconds a role waits for one message
SERVER_MEMORY_TARGET_MB = 1024


def https_available() -> bool:
    """Whether the HTTPS service (``vertimrf.service``) is installed."""
    return importlib.util.find_spec("vertimrf.service") is not None


def driver_commands(root: Path) -> dict[str, list[str]]:
    """Each role's arguments to ``python -m vertimrf.driver``, run in ``root`` on the keys,
    secret and config that :func:`bench_secure_cli.setup` made; one mail folder for all."""
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", str(TIMEOUT)]
    names = list(PARTIES)
    roles = {
        SERVER: ["server", *common, "--inbox", f"mail/{SERVER}",
                 "--keys", *[f"S/{n}.pub" for n in names], "--server-key", "S/server.key",
                 "--state", "driver/server", "--out", "driver/synth.csv",
                 "--report", "driver/report.json"],
    }  # fmt: skip
    for n in names:
        roles[n] = [
            "party", *common, "--inbox", f"mail/{n}", "--name", n, "--data", f"{n}/{n}.csv",
            "--secret", f"{n}/{n}.secret", "--keys", f"{n}/{n}.key",
            "--peers", *[f"{n}/{q}.pub" for q in names if q != n], "--state", f"driver/{n}",
        ]  # fmt: skip
    return roles


def run_together(root: Path, commands: dict[str, list[str]]) -> dict:
    """Start every role's process at once (each under GNU time) and wait for all: the
    whole run's wall time and each process's wall time and peak RSS. A failed role stops
    the others and raises with its error output."""
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    procs: dict[str, subprocess.Popen] = {}
    ended: dict[str, float] = {}
    start = time.perf_counter()
    try:
        for role, args in commands.items():
            with open(logs / f"{role}.out", "wb") as out, open(logs / f"{role}.err", "wb") as err:
                procs[role] = subprocess.Popen(
                    [TIME, "-f", "%M", "-o", str(logs / f"{role}.rss"), sys.executable, "-m",
                     "vertimrf.driver", *args],
                    cwd=root, stdout=out, stderr=err,
                )  # fmt: skip
        while len(ended) < len(procs):
            for role, proc in procs.items():
                if role not in ended and proc.poll() is not None:
                    ended[role] = time.perf_counter() - start
                    if proc.returncode != 0:
                        error = (logs / f"{role}.err").read_text()[-3000:]
                        raise RuntimeError(f"the {role} process failed:\n{error}")
            time.sleep(0.05)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    wall = time.perf_counter() - start
    roles = {
        role: {
            "wall": ended[role],
            "max_rss_mb": int((logs / f"{role}.rss").read_text().split()[-1]) / 1024,
        }
        for role in commands
    }
    return {"wall": wall, "roles": roles}


def sent_bytes(mail: Path) -> dict[str, dict[str, int]]:
    """Bytes each role sent through the mail folder, by message kind (a message is
    ``mail/<receiver>/<sender>.<kind>``)."""
    out: dict[str, dict[str, int]] = {}
    for path in sorted(mail.glob("*/*")):
        sender, _, kind = path.name.partition(".")
        by_kind = out.setdefault(sender, {})
        by_kind[kind] = by_kind.get(kind, 0) + path.stat().st_size
    return {role: out[role] for role in [*PARTIES, SERVER] if role in out}


def directory_run(root: Path) -> dict:
    """The four roles over the directory transport, started together."""
    (root / "driver").mkdir()
    res = run_together(root, driver_commands(root))
    res["bytes"] = sent_bytes(root / "mail")
    with open(root / "driver" / "synth.csv", "rb") as fh:
        res["synthetic_rows"] = sum(1 for _ in fh) - 1
    return res


def baseline_summary(log: list[dict], root: Path) -> dict:
    """Today's figures from bench_secure_cli's commands: each role's peak RSS over its
    protocol commands and the sum of their wall times, and the bytes each party sends."""
    roles = {}
    for role, steps in [*[(n, PARTY_STEPS) for n in PARTIES], ("S", SERVER_STEPS)]:
        mine = [r for r in log if r["role"] == role and r["step"] in steps]
        roles[SERVER if role == "S" else role] = {
            "wall": sum(r["wall"] for r in mine),
            "max_rss_mb": max(r["max_rss_mb"] for r in mine),
        }
    return {
        "roles": roles,
        "wall": sum(r["wall"] for r in log if r["step"] in (*PARTY_STEPS, *SERVER_STEPS)),
        "bytes": message_bytes(root),
        "server_bytes": {  # the relay sends the one request to every party
            "deal": sum((root / "S" / f"{n}.deal").stat().st_size for n in PARTIES),
            "request": len(PARTIES) * (root / "S" / "request.json").stat().st_size,
        },
        "commands": [{k: v for k, v in r.items() if k != "stdout"} for r in log],
    }


def one_run(args: argparse.Namespace) -> dict:
    """Data, keys, secret and config; the baseline; each transport's run; in a fresh folder."""
    base = Path(args.workdir or tempfile.gettempdir())
    with contextlib.ExitStack() as stack:
        if args.keep:
            root = Path(tempfile.mkdtemp(prefix="bench_service.", dir=base))
            print(f"the run's folder (kept): {root}")
        else:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=base)))
        start = time.perf_counter()
        make_data(root, args.rows, args.seed)
        print(f"data: {args.rows:,} rows in {time.perf_counter() - start:.1f} s", flush=True)
        res: dict = {"load_average": {"start": os.getloadavg()[0]}}
        log: list[dict] = []
        step = stepper(root, log)
        setup(root, None, args.max_rows, step)
        if args.baseline:
            secure_steps(root, step)
            res["baseline"] = baseline_summary(log, root)
            res["load_average"]["after baseline"] = os.getloadavg()[0]
        if args.transport in ("directory", "both"):
            res["directory"] = directory_run(root)
            res["load_average"]["after directory"] = os.getloadavg()[0]
            print(f"directory: {res['directory']['wall']:.1f} s", flush=True)
    return res


def _mb(x: float) -> str:
    return f"{x:,.0f}"


def markdown(head: dict, res: dict) -> str:
    """The results as Markdown."""
    lines = [
        '# method="secure", one process per role (`bench_service.py`)',
        "",
        f"{head['rows']:,} rows x 15 columns over 3 parties (bench_secure_cli's table), "
        f"max_rows {head['max_rows']:,}, epsilon 1, delta 1e-6, the preset's feature width, "
        "unseeded.",
        "",
        f"Machine: {head['machine']}, `nproc` = {head['nproc']}, "
        f"{head['memory_gb']:.0f} GB RAM. {head['note']}",
        "",
        "1-minute load average: "
        + ", ".join(f"{v:.2f} {k}" for k, v in res["load_average"].items())
        + " (above 2 means processes waited for a core).",
    ]
    roles = [*PARTIES, SERVER]
    runs = [(k, res[k]) for k in ("baseline", "directory") if k in res]
    if runs:
        lines += [
            "",
            "| role | " + " | ".join(f"{k}: wall (s) | {k}: peak RSS (MB)" for k, _ in runs) + " |",
            "|---|" + "---:|---:|" * len(runs),
        ]
        for role in roles:
            cells = [f"{r['roles'][role]['wall']:.1f} | {_mb(r['roles'][role]['max_rss_mb'])}"
                     for _, r in runs]  # fmt: skip
            lines.append(f"| {role} | " + " | ".join(cells) + " |")
        lines.append("| whole run | " + " | ".join(f"{r['wall']:.1f} | " for _, r in runs) + " |")
        lines += [
            "",
            "Baseline: the sum of a role's step commands (features, release, measure; deal, "
            "select, synthesize), run one after another, and the largest peak RSS among them. "
            "Directory: each role one process for the whole run, all four started together; "
            "a role's wall time is from the start to its exit (it includes waiting for the "
            "others), the whole run's until the last exit.",
        ]
    if "directory" in res:
        d = res["directory"]
        lines += ["", "| role sends (directory) | kind: bytes | total (B) |", "|---|---|---:|"]
        for role, kinds in d["bytes"].items():
            text = ", ".join(f"{k}: {v:,}" for k, v in kinds.items())
            lines.append(f"| {role} | {text} | {sum(kinds.values()):,} |")
        lines += ["", f"The directory run wrote {d['synthetic_rows']:,} synthetic rows."]
    if "baseline" in res:
        lines += ["", "| party sends (baseline) | blobs (B) | select (B) | measure (B) |",
                  "|---|---:|---:|---:|"]  # fmt: skip
        for n, b in res["baseline"]["bytes"].items():
            lines.append(f"| {n} | {b['blobs']:,} | {b['select']:,} | {b['measure']:,} |")
        sb = res["baseline"]["server_bytes"]
        lines.append(
            f"\nThe server sends {sb['deal']:,} B of deals, {sb['request']:,} B of requests."
        )
    lines += ["", "## Targets", ""]
    if "directory" in res and "baseline" in res:
        for n in PARTIES:
            now = res["directory"]["roles"][n]["max_rss_mb"]
            today = res["baseline"]["roles"][n]["max_rss_mb"]
            met = "yes" if now <= today else f"**no, {now / today:.2f}x**"
            lines.append(
                f"- Party {n} peak memory, directory {_mb(now)} MB vs today {_mb(today)} MB: {met}."
            )
    if "directory" in res:
        server = res["directory"]["roles"][SERVER]["max_rss_mb"]
        lines.append(
            f"- Server peak memory, directory transport: {_mb(server)} MB "
            f"(the <= {SERVER_MEMORY_TARGET_MB} MB target is the HTTPS server's)."
        )
    lines.append("- Network time <= 1.25x directory time: not measured yet (no HTTPS run).")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--transport", choices=("directory", "https", "both"),
                        default="directory", help="the run(s) besides the baseline")  # fmt: skip
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--max-rows", type=int, default=1 << 20, help="the public max_rows")
    quick = f"a smoke run: {QUICK_ROWS:,} rows, max_rows {QUICK_MAX_ROWS:,}"
    parser.add_argument("--quick", action="store_true", help=quick)
    parser.add_argument("--baseline", action=argparse.BooleanOptionalAction, default=True,
                        help="run today's step commands first (default: yes)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument("--workdir", default=None, help="folder for the run (default: a temp)")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder")
    parser.add_argument("--note", default="", help="a sentence on the machine's other load")
    parser.add_argument("--json", default=None, help="also write the figures as JSON")
    parser.add_argument("--md", default=None, help="write the results as Markdown")
    args = parser.parse_args()
    if args.transport in ("https", "both"):
        where = "this script" if https_available() else "this installation (no vertimrf.service)"
        parser.error(f"the HTTPS transport is not available yet in {where}; use --transport "
                     "directory.")  # fmt: skip
    if args.quick:
        args.rows, args.max_rows = QUICK_ROWS, QUICK_MAX_ROWS
    head = {
        "rows": args.rows,
        "max_rows": args.max_rows,
        "machine": machine(),
        "nproc": os.cpu_count(),
        "memory_gb": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 1e9,
        "note": args.note,
        "transport": args.transport,
    }
    print(head, flush=True)
    res = one_run(args)
    write_json(args.json, {**head, **res})
    if args.md:
        atomic_write_text(args.md, markdown(head, res))


if __name__ == "__main__":
    main()
