"""Operating a run: a party says what it waits for and stops at once on a URL
that cannot work; a failed run stops every party with the server's reason; SIGTERM and
SIGINT stop the server in every state within 5 s; one server per state folder; a party
cut off mid-upload is one log line. Every role is its own process on 127.0.0.1."""

from __future__ import annotations

import http.server
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from tests.folder_roles import THREE
from tests.https_roles import (
    StderrLines,
    c_never_joins,
    free_port,
    held,
    pinned_files,
    start_party,
    start_server,
    wait_for,
)
from tests.runs import correlated_table, vertimrf_process
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.plan import run_plan
from vertimrf.service.tls import client_context

STOP_WITHIN = 5.0


def _kill_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait(timeout=60)


@pytest.mark.service
def test_a_party_started_before_the_server_says_it_waits_then_runs(tmp_path):
    """The three parties start 10 s before the server (docs/service.md: up to about 15 s
    before it; a party gives up after 20 s of refused connections): each says at once (0 s
    into its wait, where B and C said it 5 s in, their first wait being for the deal) that
    it waits for the server, the connection refused, and goes on waiting; the run then
    completes. The waits are on the lines (at most 120 s: a party starts slowly on a loaded
    machine)."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    url = f"https://127.0.0.1:{free_port()}"
    start = time.monotonic()
    parties = {n: StderrLines(start_party(tmp_path, n, url), start) for n in THREE}
    server = None
    try:
        said = f"waiting for the server at {url} (not reachable yet: connection refused, 0 s)"
        first = max(lines.first(said, 120) for lines in parties.values())
        time.sleep(max(0.0, 10.0 - (time.monotonic() - start)))
        for lines in parties.values():
            assert lines.proc.poll() is None
        listen = url.removeprefix("https://")
        server, _ = start_server(
            tmp_path, "--out", "synth.csv", "--exit-when-done", "--listen", listen
        )
        for name, lines in parties.items():
            out = lines.finish()
            assert lines.proc.returncode == 0, (name, out[-5:])
        assert server.wait(timeout=600) == 0
    finally:
        _kill_all([p.proc for p in parties.values()] + ([server] if server else []))
    assert (tmp_path / "synth.csv").exists()
    print(f"every party's first waiting line within {first:.1f} s of its start")


class _PlainHttp(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_: object) -> None:
        pass


@pytest.mark.service
@pytest.mark.parametrize("how", ["no scheme", "http", "https to plain http", "refused"])
def test_a_url_that_cannot_work_is_one_line_within_30_s(tmp_path, how):
    """No scheme, http://, https:// to a port that speaks plain HTTP, and a port where
    nothing listens (refused): the party stops with one line (exit 2) within 30 s of its
    first request (of its start when it makes none; it starts slowly on a loaded machine),
    where it waited an hour in silence."""
    df, spec = correlated_table(40)
    pinned_files(tmp_path, df, spec)
    plain = http.server.HTTPServer(("127.0.0.1", 0), _PlainHttp)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    port = plain.server_address[1] if how != "refused" else free_port()
    url = {"no scheme": "127.0.0.1:{}", "http": "http://127.0.0.1:{}"}.get(
        how, "https://127.0.0.1:{}"
    )
    start = time.monotonic()
    party = StderrLines(start_party(tmp_path, "A", url.format(port)), start)
    try:
        err = party.finish(180)
        took = time.monotonic() - start
    finally:
        party.proc.kill()
        plain.shutdown()
        plain.server_close()
    assert party.proc.returncode == 2, err
    waits = [at for at, line in party.lines if line.startswith("vertimrf A: waiting")]
    lines = [line for line in err if not line.startswith("vertimrf A: waiting")]
    assert len(lines) == 1 and lines[0].startswith("vertimrf: error: "), err
    want = {"no scheme": "https://HOST:PORT", "http": "HTTPS only", "refused": "refused"}
    assert want.get(how, "no TLS") in lines[0]
    took -= waits[0] if waits else 0.0  # the first request's failure is said at once
    assert took < 30.0, took
    print(f"{how}: one line {took:.1f} s after its first request (or its start)")


@pytest.mark.service
def test_a_party_that_never_joins_stops_the_others_with_the_servers_reason(tmp_path):
    """C never runs: once A's and B's commitments are held, the server is served again on
    its state folder with a 2 s --party-timeout and fails the run: A and B, waiting for
    their deal with a 300 s --timeout, stop at once with the server's reason in one line
    (they waited on until their own time-out). The test waits on events (the commitments
    held, the exits), never on the server's time-out racing the parties' start."""
    server, _, listen, parties = c_never_joins(tmp_path)
    try:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=120) == 128 + signal.SIGTERM
        server, _ = start_server(tmp_path, "--exit-when-done", *listen, timeout=2)
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
                "vertimrf: error: the run has failed at the server: the server, step deal: "
                "party C sent no message within 2 s (never joined)."
            ), perr
    finally:
        _kill_all([server, *parties])
    assert "Traceback" not in err
    print(f"parties stopped {max(stopped):.1f} s after the server")


@pytest.mark.service
def test_a_party_with_a_wrong_secret_fails_the_run_and_the_server_names_it(tmp_path):
    """B's group secret is not the others': the first party to find out stops with a
    one-line error and tells the server, which fails the run naming that party; every other
    party stops, on its own finding or with the server's reason; the server exits 2."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    (tmp_path / "wrong.hex").write_text(os.urandom(32).hex())
    server, url = start_server(tmp_path, "--exit-when-done")
    a = start_party(tmp_path, "A", url)
    parties = [vertimrf_process(
        tmp_path, "party", "run", "--server", url, "--config", "config.json",
        "--data", "B.csv", "--keys", "B.key", "--secret", "wrong.hex",
        "--state-dir", "state-B", "--id-column", "rid", "--timeout", "300",
    ), a, start_party(tmp_path, "C", url)]  # fmt: skip
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
    assert culprit in THREE, failed
    for line in errors:
        assert line.startswith("vertimrf: error: "), errors
        own = "different shared secrets" in line and "at the server" not in line
        assert own or line.startswith(
            f"vertimrf: error: the run has failed at the server: party {culprit} failed: "
        ), errors


def _signal_stops(server: StderrLines, sig: signal.Signals) -> tuple[float, str]:
    """Send ``sig`` to the server: the seconds it took to exit, and its stderr."""
    start = time.monotonic()
    server.proc.send_signal(sig)
    try:
        server.proc.wait(timeout=60)
    finally:
        server.proc.kill()
    return time.monotonic() - start, "\n".join(server.finish())


@pytest.mark.service
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("state", ["waiting", "running", "failed"])
def test_a_signal_stops_server_run_exit_when_done_in_every_state(tmp_path, state, sig):
    """`server run --exit-when-done` (the walkthrough's form): waiting for the parties,
    running (A and B sent their commitments and long-poll for the deal), or after a failed
    run (its --party-timeout passed) while it tells the parties: SIGTERM or SIGINT stops
    it within 5 s, exit 143 or 130, with one line; the state folder serves again."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    server, url = start_server(
        tmp_path, "--exit-when-done", timeout=3 if state == "failed" else 300
    )
    lines = StderrLines(server, time.monotonic())
    parties = []
    try:
        if state == "running":
            parties = [start_party(tmp_path, n, url) for n in ("A", "B")]
            commits = {("A", "server", "commit"), ("B", "server", "commit")}
            wait_for(lambda: commits <= {r[:3] for r in held(tmp_path)}, server, "the commits")
            time.sleep(1.0)  # the long-polls for the deal are in
        elif state == "failed":
            lines.first("the run failed: the server, step deal: party A, B, C sent no message", 120)
        else:
            time.sleep(1.0)
        took, err = _signal_stops(lines, sig)
    finally:
        _kill_all([server, *parties])
    assert took < STOP_WITHIN, took
    assert server.returncode == 128 + sig, err
    assert err.strip().splitlines()[-1] == (
        f"vertimrf server: stopped by {sig.name}; the state folder keeps the run: serve it "
        "again to resume."
    ), err
    assert "Traceback" not in err
    again, _ = start_server(tmp_path)  # the state folder is free, and serves the run again
    took_again, err_again = _signal_stops(StderrLines(again, time.monotonic()), signal.SIGTERM)
    assert again.returncode == 143 and took_again < STOP_WITHIN, err_again
    print(f"{state} {sig.name}: stopped in {took:.2f} s")


@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.slow)]
)
def test_a_signal_stops_server_run_over_folders(tmp_path, sig):
    """`server run --inbox --outbox` waiting for the parties' messages: it says what it
    waits for, and SIGTERM or SIGINT stops it within 5 s, exit 143 or 130, with one line."""
    df, spec = correlated_table(40)
    pinned_files(tmp_path, df, spec)
    start = time.monotonic()
    server = vertimrf_process(
        tmp_path, "server", "run", "--config", "config.json", "--inbox", "mail/server",
        "--outbox", "mail", "--server-key", "server.key", "--out", "synth.csv",
        "--state-dir", "server-state", "--quiet",
    )  # fmt: skip
    lines = StderrLines(server, start)
    try:
        first = lines.first("vertimrf server: waiting for the commit from A to server in", 60)
        took, text = _signal_stops(lines, sig)
    finally:
        _kill_all([server])
    err = text.splitlines()
    assert took < STOP_WITHIN, took
    assert server.returncode == 128 + sig, err
    assert err[-1] == (
        f"vertimrf server: stopped by {sig.name}; the state folder keeps the run: run it "
        "again to resume."
    ), err
    print(f"folders {sig.name}: first waiting line after {first:.1f} s, stopped in {took:.2f} s")


@pytest.mark.service
def test_a_second_server_on_a_locked_state_folder_is_refused(tmp_path):
    """A second `server run` on a served --state-dir is one line naming the first's PID
    (exit 2); once the first is killed (SIGKILL: its stale lock left behind), the next
    server takes the lock over with one line."""
    df, spec = correlated_table(40)
    pinned_files(tmp_path, df, spec)
    first, _ = start_server(tmp_path)
    try:
        second = vertimrf_process(
            tmp_path, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
            "--state-dir", "server-state", "--server-key", "server.key",
        )  # fmt: skip
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2, err
        assert err.strip().splitlines() == [
            f"vertimrf: error: server-state is in use by another server (PID {first.pid}, see "
            "server-state/server.lock): stop it, or give another --state-dir."
        ], err
        first.kill()
        first.wait(timeout=60)
        third, _ = start_server(tmp_path)
        took, err = _signal_stops(StderrLines(third, time.monotonic()), signal.SIGTERM)
    finally:
        _kill_all([first])
    assert third.returncode == 143, err
    taken = [line for line in err.splitlines() if "stale lock" in line]
    assert taken == [
        f"vertimrf server: took over the stale lock of PID {first.pid}, which no longer runs "
        "(server-state/server.lock)"
    ], err


@pytest.mark.service
def test_a_party_cut_off_mid_upload_is_one_log_line_in_the_log_file(tmp_path):
    """A's upload of a blob stops after half its body and its connection closes (a party
    killed mid-upload): the server's log, in --log-file, has one line for it, with its
    time, and no traceback (it had a 20-line aiohttp traceback)."""
    df, spec = correlated_table(40)
    cfg = pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, "--log-file", "server.log")
    lines = StderrLines(server, time.monotonic())
    host, port = url.removeprefix("https://").split(":")
    planned = run_plan(cfg).blob_bytes["A"]
    head = (
        f"PUT /v1/runs/{cfg.config_hash()}/messages/A/B/features HTTP/1.1\r\nHost: {host}\r\n"
        f"Content-Length: {planned}\r\nX-Content-SHA256: {'0' * 64}\r\n\r\n"
    ).encode()
    context = client_context(cfg, KeyPair.load(tmp_path / "A.key"))
    try:
        with context.wrap_socket(
            socket.create_connection((host, int(port)), timeout=30), server_hostname=host
        ) as tls:
            tls.sendall(head + bytes(planned // 2))
            time.sleep(0.5)
        log = tmp_path / "server.log"
        wait_for(lambda: "dropped" in log.read_text(), server, "the dropped upload's line", 60)
        _, err = _signal_stops(lines, signal.SIGTERM)
    finally:
        _kill_all([server])
    text = log.read_text()
    assert "Traceback" not in text + err, text + err
    dropped = [line for line in text.splitlines() if "dropped" in line]
    assert len(dropped) == 1 and re.fullmatch(
        r"\d{4}-\d\d-\d\d [\d:,]+ INFO dropped the features from A to B: its connection closed "
        rf"after [\d,]+ of {planned:,} bytes",
        dropped[0],
    ), text
    assert err == "", err  # the log went to the file


def test_a_failed_run_over_folders_stops_every_party_with_the_servers_reason(tmp_path):
    """Over folders, C never starts: the server fails the run after its 5 s --timeout and
    says so in each party's inbox (`server.failure`); A and B, waiting with a 300 s
    --timeout, stop at once with the server's reason in one line (exit 2)."""
    df, spec = correlated_table(40)
    pinned_files(tmp_path, df, spec)
    common = ["--config", "config.json", "--outbox", "mail", "--quiet"]
    server = vertimrf_process(
        tmp_path, "server", "run", *common, "--inbox", "mail/server", "--server-key",
        "server.key", "--out", "synth.csv", "--state-dir", "server-state", "--timeout", "5",
    )  # fmt: skip

    def party(n: str) -> list[str]:
        return ["party", "run", *common, "--inbox", f"mail/{n}", "--name", n, "--data",
                f"{n}.csv", "--id-column", "rid", "--secret", "secret.hex", "--keys",
                f"{n}.key", "--state-dir", f"state-{n}", "--timeout", "300"]  # fmt: skip

    parties = [vertimrf_process(tmp_path, *party(n)) for n in ("A", "B")]
    start = time.monotonic()
    try:
        _, server_err = server.communicate(timeout=120)
        errs = [p.communicate(timeout=60)[1] for p in parties]
        took = time.monotonic() - start
    finally:
        _kill_all([server, *parties])
    assert server.returncode == 2, server_err
    reason = server_err.strip().splitlines()[-1].removeprefix("vertimrf: error: ")
    assert "C" in reason, reason
    for proc, err in zip(parties, errs, strict=True):
        lines = [line for line in err.splitlines() if ": waiting for " not in line]
        assert proc.returncode == 2 and len(lines) == 1, err
        assert lines[0] == f"vertimrf: error: the run has failed at the server: {reason}"
    assert took < 120.0
    print(f"folders: the parties stopped {took:.1f} s after start")
