"""One secure run as a deployment runs it: ``vertimrf server run`` and one ``vertimrf party
run`` per party, each its own OS process, started at once and exchanging messages through
inbox and outbox folders; each process's wall and CPU seconds, peak memory and bytes sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vertimrf.errors import RunFailedError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from vertimrf.protocol import ProtocolConfig

SERVER = "server"
ID_COLUMN = "id"
POLL_SECONDS = 0.05  # how often the processes are checked for an exit
# A small Python process starts each command and waits for it (wait4) to measure it: a child
# forked from the report's process would count the report's own memory in its peak RSS
# (Linux keeps the larger of the RSS before and after exec). It writes the command's wall
# seconds, CPU seconds and peak RSS to the JSON file argv[1] and exits with its exit code.
LAUNCHER = """
import json, os, sys, time
start = time.perf_counter()
pid = os.posix_spawn(sys.executable, [sys.executable, *sys.argv[2:]], os.environ)
_, status, ru = os.wait4(pid, 0)
usage = {"seconds": time.perf_counter() - start, "cpu_seconds": ru.ru_utime + ru.ru_stime,
         "peak_bytes": ru.ru_maxrss * 1024}
with open(sys.argv[1], "w") as fh:
    json.dump(usage, fh)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class ProcessCost:
    """What one role's process cost: wall and CPU seconds, peak RSS and the bytes of the
    message files it wrote."""

    seconds: float
    cpu_seconds: float
    peak_bytes: int
    sent_bytes: int


def run_roles(
    folder: Path,
    df: pd.DataFrame,
    config: ProtocolConfig,
    rng: np.random.Generator,
    *,
    seed: int,
    timeout: float,
) -> dict[str, ProcessCost]:
    """Run ``config`` (method secure) on ``df`` in ``folder`` (empty or new), the columns of
    each party its own CSV (an ID column, the rows in an order drawn from ``rng``); every
    role a process, all waited for at most ``timeout`` seconds. The cost of each party and
    of :data:`SERVER`."""
    names = [p.name for p in config.parties]
    folder.mkdir(parents=True, exist_ok=True)
    _write_files(folder, df, config, rng)
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", str(timeout),
              "--seed", str(seed), "--quiet"]  # fmt: skip
    commands = {
        SERVER: ["server", "run", *common, "--inbox", f"mail/{SERVER}", "--keys-dir", "keys",
                 "--server-key", f"{SERVER}.key", "--state-dir", f"state/{SERVER}",
                 "--out", "synth.csv"],
        **{
            n: ["party", "run", *common, "--inbox", f"mail/{n}", "--name", n, "--data",
                f"{n}.csv", "--id-column", ID_COLUMN, "--secret", "secret.hex", "--keys",
                f"{n}.key", "--peers", *[f"keys/{q}.pub" for q in names if q != n],
                "--state-dir", f"state/{n}"]
            for n in names
        },
    }  # fmt: skip
    return {
        role: ProcessCost(**usage, sent_bytes=_sent_bytes(folder / "mail", role))
        for role, usage in _run_all(folder, commands, timeout).items()
    }


def _write_files(
    folder: Path, df: pd.DataFrame, config: ProtocolConfig, rng: np.random.Generator
) -> None:
    """The config, the group secret, every role's key pair (public keys in keys/) and each
    party's CSV."""
    from vertimrf.crypto.keys import KeyPair
    from vertimrf.party.keys import new_shared_secret

    config.save(folder / "config.json")
    (folder / "secret.hex").write_text(new_shared_secret().hex() + "\n")
    (folder / "keys").mkdir(exist_ok=True)
    KeyPair.generate(SERVER).save(folder / f"{SERVER}.key")
    for party in config.parties:
        pair = KeyPair.generate(party.name)
        pair.save(folder / f"{party.name}.key")
        pair.public().save(folder / "keys" / f"{party.name}.pub")
        frame = df[list(party.columns)].assign(**{ID_COLUMN: range(len(df))})
        frame.iloc[rng.permutation(len(df))].to_csv(folder / f"{party.name}.csv", index=False)


def _run_all(
    folder: Path, commands: Mapping[str, list[str]], timeout: float
) -> dict[str, dict[str, Any]]:
    """Start every command (``python -m vertimrf ...``) at once in ``folder``, each through
    :data:`LAUNCHER`; each one's wall seconds, CPU seconds and peak RSS in bytes, as the
    launcher wrote them. Any failure or the time-out stops every process started here and
    raises RunFailedError."""
    procs: dict[str, subprocess.Popen] = {}
    try:
        for role, args in commands.items():
            log = open(folder / f"{role}.log", "wb")  # noqa: SIM115 (the child holds it)
            with log:
                procs[role] = subprocess.Popen(
                    [sys.executable, "-S", "-c", LAUNCHER, f"{role}.usage.json", "-m",
                     "vertimrf", *args],
                    cwd=folder, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            codes = {r: p.poll() for r, p in procs.items()}
            failed = [r for r, c in codes.items() if c not in (None, 0)]
            if failed:
                tail = (folder / f"{failed[0]}.log").read_text(errors="replace")[-2000:]
                raise RunFailedError(f"{failed[0]} failed (exit {codes[failed[0]]}):\n{tail}")
            if all(c == 0 for c in codes.values()):
                break
            if time.monotonic() > deadline:
                late = sorted(r for r, c in codes.items() if c is None)
                raise RunFailedError(
                    f"the roles {late} did not finish within {timeout:g} s; give a longer "
                    "time-out or fewer rows."
                )
            time.sleep(POLL_SECONDS)
    finally:
        for proc in procs.values():
            if proc.poll() is None:  # the launcher leads its group: its command goes too
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return {role: json.loads((folder / f"{role}.usage.json").read_text()) for role in procs}


def _sent_bytes(mail: Path, role: str) -> int:
    """The bytes of the message files ``role`` wrote (``mail/RECEIVER/ROLE.KIND``)."""
    return sum(p.stat().st_size for p in mail.glob(f"*/{role}.*") if not p.name.endswith(".part"))
