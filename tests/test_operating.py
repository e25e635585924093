"""Operating a run (issue 34): a party says what it waits for and stops at once on a URL
that cannot work; a failed run stops every party with the server's reason; SIGTERM and
SIGINT stop the server in every state within 5 s; one server per state folder; a party
cut off mid-upload is one log line. Every role is its own process on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.test_driver import _table
from tests.test_service import PARTIES, _free_port, _party, _pinned, _server, _service

STOP_WITHIN = 5.0


class _Lines:
    """A process's stderr, read line by line in a thread, each line with its time since
    ``start``."""

    def __init__(self, proc: subprocess.Popen, start: float) -> None:
        self.proc, self.start, self.lines = proc, start, []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append((time.monotonic() - self.start, line.rstrip("\n")))

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
        return [line for _, line in self.lines]


def _kill_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait(timeout=60)


def test_a_party_started_before_the_server_says_it_waits_then_runs(tmp_path):
    """The three parties start 20 s before the server: each says within 10 s that it waits
    for the server (the connection refused), and the run then completes."""
    df, spec = _table(60)
    _pinned(tmp_path, df, spec)
    url = f"https://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    parties = {n: _Lines(_party(tmp_path, n, url), start) for n in PARTIES}
    server = None
    try:
        first = parties["A"].first(f"waiting for the server at {url}", 15)
        assert first < 10.0, first
        assert "connection refused" in parties["A"].lines[-1][1]
        time.sleep(max(0.0, 20.0 - (time.monotonic() - start)))
        for lines in parties.values():
            assert lines.proc.poll() is None
        listen = url.removeprefix("https://")
        server, _ = _server(tmp_path, "--out", "synth.csv", "--exit-when-done", "--listen", listen)
        for name, lines in parties.items():
            out = lines.finish()
            assert lines.proc.returncode == 0, (name, out[-5:])
        assert server.wait(timeout=600) == 0
    finally:
        _kill_all([p.proc for p in parties.values()] + ([server] if server else []))
    assert (tmp_path / "synth.csv").exists()
    print(f"first waiting line after {first:.1f} s")


class _PlainHttp(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


@pytest.mark.parametrize("how", ["no scheme", "http", "https to plain http"])
def test_a_url_that_cannot_work_is_one_line_within_30_s(tmp_path, how):
    """No scheme, http://, and https:// to a port that speaks plain HTTP: the party stops
    with one line (exit 2) within 30 s, where it waited an hour in silence."""
    df, spec = _table(40)
    _pinned(tmp_path, df, spec)
    plain = http.server.HTTPServer(("127.0.0.1", 0), _PlainHttp)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    port = plain.server_address[1]
    url = {"no scheme": "127.0.0.1:{}", "http": "http://127.0.0.1:{}"}.get(
        how, "https://127.0.0.1:{}"
    )
    start = time.monotonic()
    party = _party(tmp_path, "A", url.format(port))
    try:
        _, err = party.communicate(timeout=60)
        took = time.monotonic() - start
    finally:
        party.kill()
        plain.shutdown()
    assert party.returncode == 2, err
    lines = [line for line in err.splitlines() if not line.startswith("vertimrf A: waiting")]
    assert len(lines) == 1 and lines[0].startswith("vertimrf: error: "), err
    assert {"no scheme": "https://HOST:PORT", "http": "HTTPS only"}.get(how, "no TLS") in lines[0]
    assert took < 30.0, took
    print(f"{how}: one line after {took:.1f} s")


def _status(tmp_path: Path, url: str) -> str:
    done = subprocess.run(
        [*_service(tmp_path).args[:3], "status", "--server", url, "--config", "config.json",
         "--keys", "A.key"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_party_that_never_joins_stops_the_others_with_the_servers_reason(tmp_path):
    """C never runs and the server fails the run after its 6 s --party-timeout: A and B,
    waiting for their deal with a 300 s --timeout, stop at once with the server's reason in
    one line (they waited on until their own time-out)."""
    df, spec = _table(60)
    _pinned(tmp_path, df, spec)
    server, url = _server(tmp_path, "--exit-when-done", timeout=6)
    parties = [_party(tmp_path, n, url) for n in ("A", "B")]
    try:
        _, err = server.communicate(timeout=300)
        failed_at = time.monotonic()
        assert server.returncode == 2, err
        stopped = []
        for party in parties:
            _, perr = party.communicate(timeout=120)
            stopped.append(time.monotonic() - failed_at)
            assert party.returncode == 2, perr
            last = perr.strip().splitlines()[-1]
            assert last == (
                "vertimrf: error: the run has failed at the server: party C sent no message "
                "within 6 s (never joined)."
            ), perr
    finally:
        _kill_all([server, *parties])
    assert "Traceback" not in err
    print(f"parties stopped {max(stopped):.1f} s after the server")


def test_a_party_with_a_wrong_secret_fails_the_run_and_the_server_names_it(tmp_path):
    """B's group secret is not the others': the first party to find out stops with a
    one-line error and tells the server, which fails the run naming that party; every other
    party stops, on its own finding or with the server's reason; the server exits 2."""
    df, spec = _table(60)
    _pinned(tmp_path, df, spec)
    (tmp_path / "wrong.hex").write_text(os.urandom(32).hex())
    server, url = _server(tmp_path, "--exit-when-done")
    a = _party(tmp_path, "A", url)
    parties = [_service(
        tmp_path, "party", "run", "--server", url, "--config", "config.json",
        "--data", "B.csv", "--keys", "B.key", "--secret", "wrong.hex",
        "--state-dir", "state-B", "--id-column", "rid", "--timeout", "300",
    ), a, _party(tmp_path, "C", url)]  # fmt: skip
    try:
        errors = []
        for party in parties:
            _, perr = party.communicate(timeout=300)
            assert party.returncode == 2, perr
            errors.append(perr.strip().splitlines()[-1])
        _, err = server.communicate(timeout=120)
        assert server.returncode == 2, err
    finally:
        _kill_all([server, *parties])
    failed = err.strip().splitlines()[-1]
    assert failed.startswith("vertimrf server: the run failed: party "), err
    culprit = failed.split()[6]
    assert culprit in PARTIES, failed
    for line in errors:
        assert line.startswith("vertimrf: error: "), errors
        own = "different shared secrets" in line and "at the server" not in line
        assert own or line.startswith(
            f"vertimrf: error: the run has failed at the server: party {culprit} failed: "
        ), errors
