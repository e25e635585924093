"""method="secure" with one process per role: the directory transport and loopback HTTPS.

Issue 22's benchmark. The table is bench_secure_cli's (1,000,000 rows x 15 columns over 3
parties by default, from a fixed seed), and so are the keys, the group secret and the config
(made by the same command-line steps). Then, in one run:

* today's baseline (``--baseline``, the default): bench_secure_cli's step commands, one
  after another, each its own process; the peak memory of a party's commands is the
  "no higher than today" mark. ``--baseline-tree DIR`` runs them on the package in DIR,
  a checkout of today's code (e.g. ``git worktree add --detach DIR <commit>``; run it once
  first so that its Numba kernels are compiled), and the results name its commit;
* ``--transport directory``: ``vertimrf server run`` and ``vertimrf party run`` with
  ``--inbox``/``--outbox``, the server and the three parties started together, each its
  own process, exchanging files through a shared mail folder (every role's outbox; its
  inbox the subfolder of its name);
* ``--transport https``: the same roles over loopback HTTPS, ``vertimrf server run
  --listen 127.0.0.1:PORT --exit-when-done`` (a free port) and three ``vertimrf party run
  --server URL``, all four started together (a party retries until the server listens),
  on a copy of the config with every role's key and TLS certificate pinned
  (``with_identities``); ``both`` runs the two, directory first.

Reported: the wall time of the whole run and of every process, every process's peak RSS
(GNU time's maximum resident set size, so the benchmark's own memory is not counted), and
the bytes each role sends, by message kind (HTTPS: the messages the service holds). The
targets of issue 22 are checked at the end: HTTPS time <= 1.25x directory time, the HTTPS
server's peak <= 1 GB, each party's peak no higher than today's. Both transports' runs use
one seed (``--run-seed``), so they do the same computation and write the same synthetic CSV
(checked): the time between them is the transport's, not a different fit (an unseeded
run's fit takes from 3.6 to 7.2 s on this table, by how many iterations its noisy
marginals need). ``--repeat N`` runs each transport N times, alternately, and reports the
median run of each.
``--quick`` is a smoke run on a small table (seconds, not minutes).

    python benchmarks/bench_service.py --transport both --json OUT.json --md OUT.md
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import git_commit, table_head, write_json  # noqa: E402
from bench_secure_cli import (  # noqa: E402
    PARTIES,
    PARTY_STEPS,
    SERVER_STEPS,
    TIME,
    message_bytes,
    run_folder,
    secure_steps,
    setup,
    stepper,
)

from vertimrf.io import atomic_write_text  # noqa: E402
from vertimrf.protocol import load_config
from vertimrf.protocol.channels import PublicKey  # noqa: E402

SERVER = "server"  # the server's role name in the driver's messages
QUICK_ROWS, QUICK_MAX_ROWS = 3_000, 4_096
TIMEOUT = 3600  # seconds a role waits for one message
SERVER_MEMORY_TARGET_MB = 1024
NETWORK_TIME_TARGET = 1.25  # network time over directory time
PINNED = "config-pinned.json"  # the config with every role's identity pinned


def driver_commands(root: Path, seed: int) -> dict[str, list[str]]:
    """Each role's arguments to ``vertimrf`` over folders, run in ``root`` on the keys,
    secret and config that :func:`bench_secure_cli.setup` made; one mail folder for all."""
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", str(TIMEOUT),
              "--seed", str(seed)]  # fmt: skip
    names = list(PARTIES)
    roles = {
        SERVER: ["server", "run", *common, "--inbox", f"mail/{SERVER}",
                 "--keys", *[f"S/{n}.pub" for n in names], "--server-key", "S/server.key",
                 "--state-dir", "driver/server", "--out", "driver/synth.csv",
                 "--report", "driver/report.json", "--quiet"],
    }  # fmt: skip
    for n in names:
        roles[n] = [
            "party", "run", *common, "--inbox", f"mail/{n}", "--name", n,
            "--data", f"{n}/{n}.csv", "--secret", f"{n}/{n}.secret", "--keys", f"{n}/{n}.key",
            "--peers", *[f"{n}/{q}.pub" for q in names if q != n],
            "--state-dir", f"driver/{n}", "--quiet",
        ]  # fmt: skip
    return roles


def _start(root: Path, logs: Path, role: str, module: str, args: list[str]) -> subprocess.Popen:
    """One role's process in ``root`` under GNU time, its output in ``logs/<role>.*``."""
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / f"{role}.out", "wb") as out, open(logs / f"{role}.err", "wb") as err:
        return subprocess.Popen(
            [TIME, "-f", "%M", "-o", str(logs / f"{role}.rss"), sys.executable, "-m", module,
             *args],
            cwd=root, stdout=out, stderr=err,
        )  # fmt: skip


def _check(logs: Path, role: str, proc: subprocess.Popen) -> bool:
    """Whether ``role``'s process has ended; RuntimeError with its error output if it failed."""
    if proc.poll() is None:
        return False
    if proc.returncode != 0:
        error = (logs / f"{role}.err").read_text()[-3000:]
        raise RuntimeError(f"the {role} process failed:\n{error}")
    return True


def run_together(
    root: Path,
    name: str,
    module: str,
    commands: dict[str, list[str]],
    then: Callable[[], dict[str, list[str]]] | None = None,
) -> dict:
    """Start every role's ``python -m module`` process in ``commands`` at once (each under
    GNU time, its output in ``logs/<name>/``), then those ``then()`` names once it returns
    (it may wait, e.g. for the server's port), and wait for all: the whole run's wall time
    and each process's wall time and peak RSS. A failed role stops the others and raises
    with its error output."""
    logs = root / "logs" / name
    procs: dict[str, subprocess.Popen] = {}
    ended: dict[str, float] = {}
    start = time.perf_counter()
    try:
        for role, args in commands.items():
            procs[role] = _start(root, logs, role, module, args)
        if then is not None:
            for role, args in then().items():
                procs[role] = _start(root, logs, role, module, args)
        while len(ended) < len(procs):
            for role, proc in procs.items():
                if role not in ended and _check(logs, role, proc):
                    ended[role] = time.perf_counter() - start
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
        for role in procs
    }
    return {"wall": wall, "roles": roles}


def sent_bytes(mail: Path) -> dict[str, dict[str, int]]:
    """Bytes each role sent through the mail folder, by message kind (a message is
    ``mail/<receiver>/<sender>.<kind>``)."""
    out: dict[str, dict[str, int]] = {}
    for path in sorted(mail.glob("*/*")):
        if path.parent.name.startswith("."):  # the service's uploads in progress
            continue
        sender, _, kind = path.name.partition(".")
        by_kind = out.setdefault(sender, {})
        by_kind[kind] = by_kind.get(kind, 0) + path.stat().st_size
    return {role: out[role] for role in [*PARTIES, SERVER] if role in out}


def synthetic(path: Path) -> dict:
    """The synthetic CSV's rows and SHA-256."""
    data = path.read_bytes()
    return {"synthetic_rows": data.count(b"\n") - 1, "sha256": hashlib.sha256(data).hexdigest()}


def directory_run(root: Path, seed: int, name: str = "directory") -> dict:
    """The four roles over the directory transport, started together (in fresh folders)."""
    for folder in ("driver", "mail"):
        shutil.rmtree(root / folder, ignore_errors=True)
    (root / "driver").mkdir()
    res = run_together(root, name, "vertimrf", driver_commands(root, seed))
    res["bytes"] = sent_bytes(root / "mail")
    return {**res, **synthetic(root / "driver" / "synth.csv")}


def pin_identities(root: Path) -> None:
    """``config-pinned.json``: the run's config with every role's public key (each with its
    TLS certificate, from ``vertimrf keys``) pinned, as the service requires. The server's
    folder holds every party's public key (relayed in :func:`bench_secure_cli.setup`)."""
    keys = [PublicKey.load(root / "S" / f"{n}.pub") for n in [*PARTIES, SERVER]]
    load_config(root / "config.json").with_identities(keys).save(root / PINNED)


def https_commands(
    root: Path, seed: int, port: int
) -> tuple[list[str], Callable[[str], dict[str, list[str]]]]:
    """The server's arguments to ``vertimrf server run --listen 127.0.0.1:PORT``, and each
    party's, given the server's URL."""
    server = [
        "server", "run", "--config", PINNED, "--listen", f"127.0.0.1:{port}", "--state-dir",
        "https/server", "--server-key", "S/server.key", "--timeout", str(TIMEOUT),
        "--out", "https/synth.csv", "--report", "https/report.json", "--exit-when-done",
        "--seed", str(seed),
    ]  # fmt: skip

    def parties(url: str) -> dict[str, list[str]]:
        return {
            n: ["party", "run", "--server", url, "--config", PINNED, "--data", f"{n}/{n}.csv",
                "--keys", f"{n}/{n}.key", "--secret", f"{n}/{n}.secret", "--state-dir",
                f"https/{n}", "--timeout", str(TIMEOUT), "--seed", str(seed)]
            for n in PARTIES
        }  # fmt: skip

    return server, parties


def _free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def https_run(root: Path, seed: int, name: str = "https") -> dict:
    """The server over loopback HTTPS and the three parties, all four started together as
    in the directory run (the parties retry until the server listens on its free port), in
    a fresh folder."""
    shutil.rmtree(root / "https", ignore_errors=True)
    (root / "https").mkdir()
    pin_identities(root)
    port = _free_port()
    server, parties = https_commands(root, seed, port)
    res = run_together(
        root, name, "vertimrf", {SERVER: server, **parties(f"https://127.0.0.1:{port}")}
    )
    res["bytes"] = sent_bytes(root / "https" / "server" / "messages")
    return {**res, **synthetic(root / "https" / "synth.csv")}


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
    with run_folder(args, "bench_service.") as root:
        res: dict = {"load_average": {"start": os.getloadavg()[0]}}
        log: list[dict] = []
        step = stepper(root, log)
        setup(root, None, args.max_rows, step)
        if args.baseline:
            tree = args.baseline_tree
            python = None if tree is None else ["env", f"PYTHONPATH={tree}", sys.executable]
            secure_steps(root, stepper(root, log, python))
            res["baseline"] = baseline_summary(log, root)
            res["load_average"]["after baseline"] = os.getloadavg()[0]
        kinds = [k for k in TRANSPORTS if args.transport in (k, "both")]
        runs: dict[str, list[dict]] = {k: [] for k in kinds}
        for i in range(args.repeat):
            for kind in kinds:
                run = RUNS[kind](root, args.run_seed, f"{kind}-{i + 1}")
                runs[kind].append(run)
                res["load_average"][f"after {kind} {i + 1}"] = os.getloadavg()[0]
                print(f"{kind} {i + 1}: {run['wall']:.1f} s", flush=True)
        for kind in kinds:
            res[kind] = median_run(runs[kind])
            res[kind]["walls"] = [r["wall"] for r in runs[kind]]
        digests = {r["sha256"] for kind in kinds for r in runs[kind]}
        if len(digests) != 1:
            raise RuntimeError("the runs wrote different synthetic CSVs with one seed.")
    return res


RUNS: dict[str, Callable[[Path, int, str], dict]] = {
    "directory": directory_run,
    "https": https_run,
}


def median_run(runs: list[dict]) -> dict:
    """The run of median whole-run wall time (the lower middle one of an even number)."""
    walls = [r["wall"] for r in runs]
    return dict(runs[walls.index(statistics.median_low(walls))])


def _mb(x: float) -> str:
    return f"{x:,.0f}"


TRANSPORTS = ("directory", "https")


def targets(res: dict) -> list[str]:
    """Issue 22's targets, one line each: party peaks against today's, the HTTPS server's
    peak, network time against directory time."""
    lines = []
    for kind in [t for t in TRANSPORTS if t in res and "baseline" in res]:
        for n in PARTIES:
            now = res[kind]["roles"][n]["max_rss_mb"]
            today = res["baseline"]["roles"][n]["max_rss_mb"]
            met = "yes" if now <= today else "**no**"
            lines.append(
                f"- Party {n} peak memory, {kind} {_mb(now)} MB vs today {_mb(today)} MB "
                f"({now / today:.2f}x): {met}."
            )
    if "https" in res:
        server = res["https"]["roles"][SERVER]["max_rss_mb"]
        met = "yes" if server <= SERVER_MEMORY_TARGET_MB else "**no**"
        lines.append(
            f"- HTTPS server peak memory {_mb(server)} MB <= {SERVER_MEMORY_TARGET_MB} MB: {met}."
        )
    if "https" in res and "directory" in res:
        ratio = res["https"]["wall"] / res["directory"]["wall"]
        met = "yes" if ratio <= NETWORK_TIME_TARGET else "**no**"
        lines.append(
            f"- Network time {res['https']['wall']:.1f} s / directory time "
            f"{res['directory']['wall']:.1f} s = {ratio:.2f} <= {NETWORK_TIME_TARGET}: {met}."
        )
    return lines


def markdown(head: dict, res: dict) -> str:
    """The results as Markdown."""
    lines = [
        '# method="secure", one process per role (`bench_service.py`)',
        "",
        f"{head['rows']:,} rows x 15 columns over 3 parties (bench_secure_cli's table), "
        f"max_rows {head['max_rows']:,}, epsilon 1, delta 1e-6, the preset's feature width. "
        f"Both transports' runs use seed {head['run_seed']} (the baseline's step commands "
        "are unseeded) and wrote the same synthetic CSV, byte for byte; each transport ran "
        f"{head['repeat']} time(s), alternately, and the tables show its median run.",
        "",
        f"Machine: {head['machine']}, `nproc` = {head['nproc']}, "
        f"{head['memory_gb']:.0f} GB RAM. {head['note']}",
        "",
        "1-minute load average: "
        + ", ".join(f"{v:.2f} {k}" for k, v in res["load_average"].items())
        + " (above 2 means processes waited for a core).",
    ]
    for kind in [t for t in TRANSPORTS if t in res]:
        walls = ", ".join(f"{w:.1f}" for w in res[kind]["walls"])
        lines += ["", f"Whole-run wall times of the {kind} runs: {walls} s."]
    roles = [*PARTIES, SERVER]
    runs = [(k, res[k]) for k in ("baseline", *TRANSPORTS) if k in res]
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
            "Directory: each role one process for the whole run (`vertimrf party run` and "
            "`server run` with --inbox/--outbox), "
            "all four started together. HTTPS: `vertimrf server run --listen` on "
            "127.0.0.1 (mutual TLS, identities pinned in the config) and the three `party "
            "run --server` processes, all four started together. A role's wall time is from "
            "the run's start to its exit (it includes waiting for the others), the whole "
            "run's until the last exit. The baseline ran on the code of commit "
            f"{head['baseline_commit'] or head['commit']}; the transports on {head['commit']}.",
        ]
    for kind in [t for t in TRANSPORTS if t in res]:
        d = res[kind]
        lines += ["", f"| role sends ({kind}) | kind: bytes | total (B) |", "|---|---|---:|"]
        for role, kinds in d["bytes"].items():
            text = ", ".join(f"{k}: {v:,}" for k, v in kinds.items())
            lines.append(f"| {role} | {text} | {sum(kinds.values()):,} |")
        lines += ["", f"The {kind} run wrote {d['synthetic_rows']:,} synthetic rows."]
    if "baseline" in res:
        lines += ["", "| party sends (baseline) | blobs (B) | select (B) | measure (B) |",
                  "|---|---:|---:|---:|"]  # fmt: skip
        for n, b in res["baseline"]["bytes"].items():
            lines.append(f"| {n} | {b['blobs']:,} | {b['select']:,} | {b['measure']:,} |")
        sb = res["baseline"]["server_bytes"]
        lines.append(
            f"\nThe server sends {sb['deal']:,} B of deals, {sb['request']:,} B of requests."
        )
    return "\n".join([*lines, "", "## Targets (issue 22)", "", *targets(res)]) + "\n"


def _commit(folder: str | None) -> str | None:
    """The git commit checked out in ``folder`` (None without one)."""
    if folder is None:
        return None
    commit = git_commit(folder)
    return None if commit == "unknown" else commit


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
    parser.add_argument("--baseline-tree", default=None,
                        help="run the baseline's commands on the package in this folder (a "
                        "checkout of today's code; default: this code)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the data (not the run)")
    parser.add_argument("--run-seed", type=int, default=1, help="the transports' runs' seed")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each transport")
    parser.add_argument("--workdir", default=None, help="folder for the run (default: a temp)")
    parser.add_argument("--keep", action="store_true", help="keep the run's folder")
    parser.add_argument("--note", default="", help="a sentence on the machine's other load")
    parser.add_argument("--json", default=None, help="also write the figures as JSON")
    parser.add_argument("--md", default=None, help="write the results as Markdown")
    args = parser.parse_args()
    if args.quick:
        args.rows, args.max_rows = QUICK_ROWS, QUICK_MAX_ROWS
    head = {
        **table_head(args.rows, args.max_rows),
        "note": args.note,
        "transport": args.transport,
        "baseline_commit": _commit(args.baseline_tree),
        "commit": _commit(str(Path(__file__).resolve().parent)),
        "run_seed": args.run_seed,
        "repeat": args.repeat,
    }
    print(head, flush=True)
    res = one_run(args)
    write_json(args.json, {**head, **res})
    if args.md:
        atomic_write_text(args.md, markdown(head, res))


if __name__ == "__main__":
    main()
