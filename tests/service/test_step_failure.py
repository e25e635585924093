"""A party that fails at a step (A's features once raised an IndexError while B, C and the
server waited an hour) tells the server, which fails the run naming the party
and the step; the other parties and the server stop within 10 s of the failure, each with
one line naming them. Every role is its own process, over folders and over HTTPS on
127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.folder_roles import THREE
from tests.https_roles import pinned_files, start_party, start_server
from tests.runs import correlated_table, role_env, started, vertimrf_process

WITHIN = 10.0  # seconds from the failing party's exit to every other role's
# Every role's options over folders, with a 300 s wait for each message.
FOLDERS = ["--config", "config.json", "--outbox", "mail", "--timeout", "300", "--quiet"]
# A's `vertimrf` with its features step broken as it once was, as its own process.
BROKEN = """
import sys
from vertimrf.party.roles import Party
def features(self, *args, **kwargs):
    raise IndexError("index 1048448 is out of bounds for axis 0 with size 1048446")
Party.features = features
from vertimrf.cli.app import main
sys.exit(main(sys.argv[1:]))
"""
REASON = "step features: unexpected IndexError: index 1048448 is out of bounds"


def broken_party(tmp_path: Path, *args: str, code: str = BROKEN) -> subprocess.Popen:
    """``vertimrf ARGS`` with Party.features raising that IndexError (or ``code``'s
    break)."""
    return started([sys.executable, "-c", code, *args], tmp_path, role_env(tmp_path))


def exits(procs: dict[str, subprocess.Popen], seconds: float = 300) -> dict[str, float]:
    """The time each process exits (polled; every one killed after ``seconds``)."""
    ended: dict[str, float] = {}
    deadline = time.monotonic() + seconds
    try:
        while len(ended) < len(procs) and time.monotonic() < deadline:
            for name, proc in procs.items():
                if name not in ended and proc.poll() is not None:
                    ended[name] = time.monotonic()
            time.sleep(0.05)
    finally:
        for proc in procs.values():
            proc.kill()
    assert len(ended) == len(procs), f"still running after {seconds} s: {set(procs) - set(ended)}"
    return ended


def last_lines(procs: dict[str, subprocess.Popen]) -> dict[str, str]:
    """Each process's last line on stderr that is not a notice of a wait; exit 2 each."""
    out = {}
    for name, proc in procs.items():
        err = proc.communicate(timeout=60)[1]
        assert proc.returncode == 2, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        lines = [x for x in err.strip().splitlines() if ": waiting for " not in x]
        out[name] = lines[-1]
    return out


def assert_within(ended: dict[str, float]) -> None:
    """Every role stopped within WITHIN seconds of A's exit."""
    late = {n: round(t - ended["A"], 1) for n, t in ended.items() if t - ended["A"] > WITHIN}
    assert not late, f"seconds after A's failure: {late}"
    print(f"stopped {max(t - ended['A'] for t in ended.values()):.1f} s after A's failure")


def test_a_party_failing_at_a_step_stops_every_role_over_folders(tmp_path):
    """A's features step raises: A exits with one line naming itself and the step and
    writes ``mail/server/A.failure``; the server (waiting for the releases, --timeout 300)
    fails the run naming A and its step and relays A's failure to B and C, who stop with
    the same line, all within 10 s."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)

    procs = {
        "server": vertimrf_process(tmp_path, *_server_args()),
        "A": broken_party(tmp_path, *_party_args("A")),
        **{n: vertimrf_process(tmp_path, *_party_args(n)) for n in THREE if n != "A"},
    }  # fmt: skip
    ended = exits(procs)
    lines = last_lines(procs)
    assert lines["A"].startswith(f"vertimrf: error: A, {REASON}"), lines
    for role in ("server", "B", "C"):
        assert lines[role].startswith(
            f"vertimrf: error: the run has failed at party A: {REASON}"
        ), lines
    assert_within(ended)
    assert not (tmp_path / "synth.csv").exists()


@pytest.mark.service
def test_a_party_failing_at_a_step_stops_every_role_over_https(tmp_path):
    """Over HTTPS, A's features step raises: A tells the service, which fails the run
    naming A and its step (its log, its status); B and C, long-polling for A's blobs with
    a 300 s --timeout, and the service (--exit-when-done) stop within 10 s, each with one
    line naming A and the step."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, "--exit-when-done")
    procs = {
        "server": server,
        "A": broken_party(
            tmp_path, "party", "run", "--server", url, "--config", "config.json", "--data",
            "A.csv", "--keys", "A.key", "--secret", "secret.hex", "--state-dir", "state-A",
            "--id-column", "rid", "--timeout", "300", "--quiet",
        ),
        **{n: start_party(tmp_path, n, url) for n in THREE if n != "A"},
    }  # fmt: skip
    ended = exits(procs)
    lines = last_lines(procs)
    assert lines["A"].startswith(f"vertimrf: error: A, {REASON}"), lines
    assert lines["server"].startswith(
        f"vertimrf server: the run failed: party A failed: {REASON}"
    ), lines
    for role in ("B", "C"):
        assert lines[role].startswith(
            f"vertimrf: error: the run has failed at the server: party A failed: {REASON}"
        ), lines
    assert_within(ended)


# The server's `vertimrf` with its select step refusing the releases, as its own process.
BROKEN_SERVER = """
import sys
from vertimrf.errors import MessageError
from vertimrf.server.roles import Server
def select(self, *args, **kwargs):
    raise MessageError("the releases do not match the plan")
Server.select = select
from vertimrf.cli.app import main
sys.exit(main(sys.argv[1:]))
"""
SERVER_REASON = "the server, step select: the releases do not match the plan"


@pytest.mark.service
def test_the_server_failing_at_a_step_names_it_to_every_role_over_https(tmp_path):
    """Over HTTPS, the server's select step refuses (an error vertimrf raises on purpose):
    the service fails the run naming the server and its step, and every party (long-polling
    with a 300 s --timeout) stops with one line naming them."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    port_file = tmp_path / "port"
    server = broken_party(
        tmp_path, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
        "--state-dir", "server-state", "--server-key", "server.key", "--party-timeout", "300",
        "--port-file", "port", "--exit-when-done", "--quiet", code=BROKEN_SERVER,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not port_file.exists() and time.monotonic() < deadline and server.poll() is None:
        time.sleep(0.05)
    assert port_file.exists(), server.communicate(timeout=60)[1][-3000:]
    url = f"https://127.0.0.1:{port_file.read_text().strip()}"
    procs = {"server": server, **{n: start_party(tmp_path, n, url) for n in THREE}}
    exits(procs)
    lines = last_lines(procs)
    assert lines["server"].startswith(f"vertimrf server: the run failed: {SERVER_REASON}"), lines
    for role in THREE:
        assert lines[role].startswith(
            f"vertimrf: error: the run has failed at the server: {SERVER_REASON}"
        ), lines


# The server's fit, replaced by a marker file and a long sleep, as its own process.
SLOW_FIT = """
import sys, time
from pathlib import Path
from vertimrf.server.secure import SecureServer
def fit(self, releases):
    Path("fitting").touch()
    time.sleep(300)
SecureServer.fit = fit
from vertimrf.cli.app import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_signal_during_the_servers_fit_stops_it_with_one_line_not_a_bug(tmp_path):
    """SIGTERM while the server fits (the corpus stopped modeldata::ames this way): exit 143
    and the one line of a stop, with the state folder kept; not "unexpected _Stopped ... a
    bug in vertimrf", which a step body's catch-all made of it."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    server = broken_party(tmp_path, *_server_args(), code=SLOW_FIT)
    parties = [vertimrf_process(tmp_path, *_party_args(n)) for n in THREE]
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "fitting").exists() and time.monotonic() < deadline:
            assert server.poll() is None, server.communicate()[1][-3000:]
            time.sleep(0.1)
        assert (tmp_path / "fitting").exists(), "the server never reached its fit"
        server.terminate()
        err = server.communicate(timeout=60)[1]
    finally:
        for proc in (server, *parties):
            proc.kill()
    assert server.returncode == 143, err[-3000:]
    assert "Traceback" not in err and "bug" not in err, err[-3000:]
    assert err.strip().splitlines()[-1] == (
        "vertimrf server: stopped by SIGTERM; the state folder keeps the run: run it again to "
        "resume."
    ), err[-3000:]


def _server_args() -> list[str]:
    """``server run`` over folders."""
    return ["server", "run", *FOLDERS, "--inbox", "mail/server", "--server-key", "server.key",
            "--out", "synth.csv", "--state-dir", "server-state"]  # fmt: skip


def _party_args(n: str) -> list[str]:
    """``party run`` of party ``n`` over folders."""
    return ["party", "run", *FOLDERS, "--inbox", f"mail/{n}", "--name", n, "--data",
            f"{n}.csv", "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
            "--state-dir", f"state-{n}"]  # fmt: skip
