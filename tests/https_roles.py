"""Runs over HTTPS: each role's files with the config pinning every role's identity, the
server (``server run --listen``) and the parties (``party run --server``) as processes on
127.0.0.1, and what the service holds."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import requests

from tests.folder_roles import THREE
from tests.helpers import SECRET
from tests.runs import SEED, TWO_PARTIES, correlated_table, finish, reap, vertimrf_process
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.factory import from_preset
from vertimrf.service.client import _PinnedAdapter
from vertimrf.service.tls import client_context


class StderrLines:
    """A process's stderr, read line by line in a thread, each line with its time since
    ``start``."""

    def __init__(self, proc: subprocess.Popen, start: float) -> None:
        self.proc, self.start, self.lines = proc, start, []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self.proc.stderr:
                self.lines.append((time.monotonic() - self.start, line.rstrip("\n")))
        except (OSError, ValueError):  # the pipe closed as the process was reaped
            return

    def first(self, words: str, seconds: float) -> float:
        """Seconds from the start to the first line with ``words`` (waiting up to
        ``seconds`` from now); AssertionError if none comes."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if words in line:
                    return at
            time.sleep(0.05)
        raise AssertionError(f"no line with {words!r}: {self.lines}")

    def finish(self, seconds: float = 600) -> list[str]:
        """The process's exit and every line."""
        self.proc.wait(timeout=seconds)
        self._thread.join(30)
        reap(self.proc)
        return [line for _, line in self.lines]


def pinned_files(tmp_path: Path, df: pd.DataFrame, spec: DomainSpec, **fields) -> ProtocolConfig:
    """Key files of every role, the config pinning them (the parties of ``THREE``), the
    secret and each party's rows (shuffled, linked by ``rid``) in ``tmp_path``."""
    # partial record sets need max_rows above the dummies' reserve (about 900 rows here)
    rows = 512 if fields.get("record_sets", "equal") == "equal" else 4096
    base = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()),
        run_nonce="ef" * 16, **{"max_rows": rows, "record_sets": "equal", **fields},
    )  # fmt: skip
    publics = []
    for name in [*THREE, "server"]:
        KeyPair.generate(name).save(tmp_path / f"{name}.key")
        publics.append(KeyPair.load(tmp_path / f"{name}.key").public())
    cfg = base.with_identities(publics)
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    for n, cols in THREE.items():
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n) + 7)
        frame.to_csv(tmp_path / f"{n}.csv", index=False)
    return cfg


def own_dealer_files(
    tmp_path: Path, df: pd.DataFrame, spec: DomainSpec, **fields
) -> ProtocolConfig:
    """Key files of the parties of ``TWO_PARTIES``, the server and a dealer of its own, the
    config (dealer="own", ``fields``) pinning them, the secret and each party's rows
    (shuffled, linked by ``rid``) in ``tmp_path``."""
    base = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(TWO_PARTIES.items()),
        run_nonce="ab" * 16, dealer="own", **{"max_rows": 512, "record_sets": "equal", **fields},
    )  # fmt: skip
    for name in [*TWO_PARTIES, "server", "dealer"]:
        KeyPair.generate(name).save(tmp_path / f"{name}.key")
    publics = [KeyPair.load(p).public() for p in sorted(tmp_path.glob("*.key"))]
    cfg = base.with_identities(publics)
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    for n, cols in TWO_PARTIES.items():
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n) + 7)
        frame.to_csv(tmp_path / f"{n}.csv", index=False)
    return cfg


# Whether the running test is marked ``service`` (set for each test by tests/conftest.py):
# only such a test may start the service, so that ``-m "not service"`` starts none.
SERVICE_MARKED = False


def start_server(tmp_path: Path, *extra: str, timeout: float = 300) -> tuple[subprocess.Popen, str]:
    """The server process on an ephemeral port, and its URL once it listens."""
    assert SERVICE_MARKED, "a test that starts the HTTPS service must be marked service"
    port_file = tmp_path / "port"
    port_file.unlink(missing_ok=True)
    proc = vertimrf_process(
        tmp_path, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
        "--state-dir", "server-state", "--server-key", "server.key",
        "--party-timeout", str(timeout), "--port-file", "port", "--seed", str(SEED), *extra,
    )  # fmt: skip
    wait_for(port_file.exists, proc, "the server's listening", seconds=120)
    return proc, f"https://127.0.0.1:{port_file.read_text().strip()}"


def start_party(tmp_path: Path, name: str, url: str, env: dict | None = None) -> subprocess.Popen:
    """Party ``name``'s process, connecting out to the service at ``url``."""
    return vertimrf_process(
        tmp_path, "party", "run", "--server", url, "--config", "config.json",
        "--data", f"{name}.csv", "--keys", f"{name}.key", "--secret", "secret.hex",
        "--state-dir", f"state-{name}", "--id-column", "rid", "--timeout", "300",
        "--seed", str(SEED), env=env,
    )  # fmt: skip


def stop_server(server: subprocess.Popen) -> str:
    """SIGTERM the service (if it runs) and its stderr; no traceback in it."""
    try:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert "Traceback" not in err, err[-3000:]
    return err


def finish_ok(procs: list[subprocess.Popen], code: int = 0) -> None:
    """Wait for every process (bounded) and require exit ``code`` of each."""
    for got, _, err in finish(procs):
        assert got == code, err[-3000:]


def held(tmp_path: Path) -> list[tuple]:
    """The messages the service's log holds: (sender, receiver, kind, sha256)."""
    with sqlite3.connect(tmp_path / "server-state" / "messages.sqlite") as db:
        return db.execute("SELECT sender, receiver, kind, sha256 FROM messages").fetchall()


def wait_for(
    condition: Callable[[], bool], proc: subprocess.Popen, what: str, seconds: float = 300.0
) -> None:
    """Poll ``condition`` until it holds; fail if ``proc`` exits first or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc``, wait for its end and close its pipes."""
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    reap(proc)


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pinned_session(cfg: ProtocolConfig, keys: KeyPair) -> requests.Session:
    """A client session over mutual TLS with the identities ``cfg`` pins."""
    session = requests.Session()
    session.mount("https://", _PinnedAdapter(client_context(cfg, keys)))
    return session


def count_message(run: str, value: int) -> bytes:
    """A count message's bytes for run ``run``."""
    return json.dumps({"config_hash": run, "noisy_count": value}).encode()


def put(session, url, run, route, body: bytes, **headers) -> requests.Response:
    """Upload ``body`` as the message ``route`` of run ``run``, with its digest."""
    headers = {"X-Content-SHA256": hashlib.sha256(body).hexdigest(), **headers}
    return session.put(f"{url}/v1/runs/{run}/messages/{route}", data=body, headers=headers)


A_AND_B_COMMITS = {("A", "server", "commit"), ("B", "server", "commit")}


def c_never_joins(
    tmp_path: Path,
) -> tuple[subprocess.Popen, str, list[str], list[subprocess.Popen]]:
    """The service of a pinned run of 60 rows on a port it keeps, parties A and B started and
    C never; returned once A's and B's commitments are held (an event, not a time): the
    server, its URL, its ``--listen`` arguments (to serve the run again on that port) and
    A's and B's processes."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    listen = ["--listen", f"127.0.0.1:{free_port()}"]
    server, url = start_server(tmp_path, *listen)
    parties = [start_party(tmp_path, n, url) for n in ("A", "B")]
    try:
        wait_for(lambda: {r[:3] for r in held(tmp_path)} >= A_AND_B_COMMITS, server, "commits")
    except BaseException:
        for proc in [server, *parties]:
            reap(proc)
        raise
    return server, url, listen, parties
