"""The network service: three parties and a server, each its own process on loopback,
over mutual TLS with the identities the config pins (a networked run writes simulate's
bytes: tests/driver/test_same_bytes.py). The service survives a party killed mid-upload
and a server killed mid-run, writing simulate's bytes; it reports a party that never joins;
it refuses strangers, impostors, replays, another run's messages, oversized and garbage
uploads."""

from __future__ import annotations

import hashlib
import json
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import requests

from tests.folder_roles import THREE
from tests.helpers import SECRET
from tests.https_roles import (
    A_AND_B_COMMITS,
    StderrLines,
    c_never_joins,
    count_message,
    finish_ok,
    free_port,
    held,
    kill,
    pinned_files,
    pinned_session,
    put,
    start_party,
    start_server,
    wait_for,
)
from tests.runs import SEED, correlated_table, same_as_simulate, vertimrf_process
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import KeyMaterialError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.service.client import STALL_ENV, _PinnedAdapter
from vertimrf.service.tls import client_context

pytestmark = pytest.mark.service  # every test here runs the HTTPS service

# ------------------------------------------------------------------ faults


def test_a_party_killed_mid_upload_resumes_and_releases_once(tmp_path):
    """Party A's first release stalls after half its body (test hook) and A is killed
    (SIGKILL) while the server holds the partial upload; restarted on its state folder, A
    resends the release it recorded: the service holds one select from A, with the digest
    A recorded before the kill, and the run writes simulate's bytes."""
    df, spec = correlated_table()
    cfg = pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, "--out", "synth.csv", "--exit-when-done")
    others = [start_party(tmp_path, n, url) for n in ("B", "C")]
    stalled = start_party(tmp_path, "A", url, env={STALL_ENV: "release"})
    partial = tmp_path / "server-state" / "messages" / ".partial"
    record = tmp_path / "state-A" / cfg.config_hash()[:16] / "steps.json"

    def mid_upload() -> bool:
        """A recorded its release, B's and C's selects are held (their uploads are done),
        and a partial upload has bytes: A's, stalled."""
        if not record.exists() or "release" not in json.loads(record.read_text())["steps"]:
            return False
        got = {row[:3] for row in held(tmp_path)}
        others_done = {(n, "server", "release") for n in ("B", "C")} <= got
        return others_done and any(p.stat().st_size > 0 for p in partial.iterdir())

    try:
        wait_for(mid_upload, stalled, "A's stalled upload")
        steps = json.loads(record.read_text())["steps"]
        kill(stalled)
        assert ("A", "server", "release") not in [row[:3] for row in held(tmp_path)]
        digest = steps["release"]["server.release"]
        finish_ok([server, *others, start_party(tmp_path, "A", url)])
    finally:
        for proc in [server, stalled, *others]:
            proc.kill()
    selects = [row for row in held(tmp_path) if row[:3] == ("A", "server", "release")]
    assert selects == [("A", "server", "release", digest)]
    assert not list(partial.iterdir())
    same_as_simulate(tmp_path / "synth.csv", df, cfg, seed=SEED, secret=SECRET)


def test_a_server_killed_mid_run_resumes_on_its_state_folder(tmp_path):
    """The server is killed (SIGKILL) once its select request is out and restarted on the
    same port and state folder; the parties retry meanwhile; the run finishes with
    simulate's bytes."""
    df, spec = correlated_table()
    cfg = pinned_files(tmp_path, df, spec)
    listen = ["--listen", f"127.0.0.1:{free_port()}"]
    server, url = start_server(tmp_path, "--out", "synth.csv", "--exit-when-done", *listen)
    parties = [start_party(tmp_path, n, url) for n in THREE]
    request = tmp_path / "server-state" / "messages" / "A" / "server.select"
    try:
        wait_for(request.exists, server, "the select request")
        kill(server)
        assert not (tmp_path / "synth.csv").exists()
        server, again = start_server(tmp_path, "--out", "synth.csv", "--exit-when-done", *listen)
        assert again == url
        finish_ok([server, *parties])
    finally:
        for proc in [server, *parties]:
            proc.kill()
    same_as_simulate(tmp_path / "synth.csv", df, cfg, seed=SEED, secret=SECRET)


def test_a_party_that_never_joins_is_reported_and_the_others_go_no_further(tmp_path):
    """C never runs: once A's and B's commitments are held, `status` shows C has sent
    nothing; the server, served again on its state folder with a 2 s --party-timeout, fails
    the run naming C in its log; A and B sent their data commitments and nothing more (the
    deal needs every party's commitment). Each wait is on an event (the commitments held,
    the status printed, the server's log line) with a generous bound; the one time-out that
    fires is the server's, after every other party has joined."""
    server, url, listen, parties = c_never_joins(tmp_path)
    try:
        status = subprocess.run(
            [sys.executable, "-m", "vertimrf", "status", "--server", url,
             "--config", "config.json", "--keys", "A.key"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert status.returncode == 0, status.stderr
        assert "running" in status.stdout and "C: 0 messages, 0 bytes" in status.stdout
        server.send_signal(signal.SIGTERM)
        _, err = server.communicate(timeout=120)
        assert server.returncode == 128 + signal.SIGTERM, err
        server, _ = start_server(tmp_path, *listen, timeout=2)
        lines = StderrLines(server, time.monotonic())
        lines.first(
            "the run failed: the server, step deal: party C sent no message within 2 s "
            "(never joined).",
            300,
        )
        server.send_signal(signal.SIGTERM)
        assert lines.finish(120)[-1].endswith("serve it again to resume.")
    finally:
        for proc in [server, *parties]:
            proc.kill()
    assert {r[:3] for r in held(tmp_path)} == A_AND_B_COMMITS
    assert not (tmp_path / "server-state" / "synthetic.csv").exists()


# ------------------------------------------------------------------ refusals


def test_an_out_of_another_suffix_is_refused_before_the_service_starts(tmp_path):
    """--out picks CSV or Parquet by its suffix; any other is one line, exit 2, and nothing
    starts (no state folder, no file)."""
    df, spec = correlated_table(40)
    pinned_files(tmp_path, df, spec)
    proc = vertimrf_process(
        tmp_path, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
        "--state-dir", "server-state", "--server-key", "server.key", "--out", "synth.txt",
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 2 and len(err.strip().splitlines()) == 1, err
    assert ".parquet" in err and not (tmp_path / "server-state").exists()
    assert not (tmp_path / "server-state").exists() and not (tmp_path / "synth.txt").exists()


@pytest.fixture
def fo_service(serve):
    """A service of a method-fo run (A counts for B and C), its URL and config."""
    return serve(method="fo")


def test_strangers_impostors_replays_and_other_runs_are_refused(fo_service):
    tmp_path, url, cfg = fo_service
    run = cfg.config_hash()
    a = pinned_session(cfg, KeyPair.load(tmp_path / "A.key"))
    b = pinned_session(cfg, KeyPair.load(tmp_path / "B.key"))
    count = count_message(run, 41)
    assert put(b, url, run, "A/B/local-count", count).status_code == 403  # B posing as A
    assert put(a, url, run, "A/B/local-count", count).status_code == 201
    assert put(a, url, run, "A/B/local-count", count).status_code == 200  # the same bytes: resent
    replay = put(a, url, run, "A/B/local-count", count_message(run, 40))
    assert replay.status_code == 409 and "other bytes" in replay.json()["error"]
    assert (
        put(a, url, run, "A/C/local-count", count_message("0" * 64, 41)).status_code == 409
    )  # other run
    assert put(a, url, "0" * 64, "A/C/local-count", count).status_code == 404
    assert put(a, url, run, "A/server/deal", count).status_code == 400  # never A's
    assert put(a, url, run, "A/C/..", count).status_code in (400, 404)
    assert a.get(f"{url}/v1/runs/{run}/messages/A/B/local-count").status_code == 403  # B's mail
    got = b.get(f"{url}/v1/runs/{run}/messages/A/B/local-count", params={"wait": "1"})
    assert got.status_code == 200 and got.content == count
    assert got.headers["X-Content-SHA256"] == hashlib.sha256(count).hexdigest()
    assert b.get(f"{url}/v1/runs/{run}/messages/A/C/local-count").status_code == 403
    stranger = KeyPair.generate("A")  # A's name, a key the config does not pin
    with pytest.raises(KeyMaterialError, match="not the one this config pins"):
        client_context(cfg, stranger)
    forged = _stranger_session(cfg, stranger)
    with pytest.raises(requests.exceptions.ConnectionError):
        forged.put(f"{url}/v1/runs/{run}/messages/A/C/local-count", data=count)
    assert [r[:3] for r in held(tmp_path)] == [("A", "B", "local-count")]


def _stranger_session(cfg: ProtocolConfig, stranger: KeyPair) -> requests.Session:
    """A client that trusts the server's pinned certificate but presents its own."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cadata=cfg.identities["server"].certificate)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "k").write_text(stranger.tls_key)
        (Path(tmp) / "c").write_text(stranger.tls_certificate)
        context.load_cert_chain(Path(tmp) / "c", Path(tmp) / "k")
    session = requests.Session()
    session.mount("https://", _PinnedAdapter(context))
    return session


def _raw(cfg: ProtocolConfig, keys: KeyPair, url: str, head: bytes, body: bytes = b"") -> str:
    """Send raw request bytes over mutual TLS; the response's status line and body."""
    host, port = url.removeprefix("https://").split(":")
    context = client_context(cfg, keys)
    sock = socket.create_connection((host, int(port)), timeout=30)
    with context.wrap_socket(sock, server_hostname=host) as tls:
        tls.sendall(head + body)
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"}"):
            chunk = tls.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.decode()


def test_oversized_and_garbage_uploads_are_refused_before_they_are_buffered(fo_service):
    """A 10 GB Content-Length is refused (413) with no body sent at all: the limit is
    checked before any read; a body without a length is refused (411); a garbage body is
    refused after its first chunk; the store holds nothing."""
    tmp_path, url, cfg = fo_service
    run = cfg.config_hash()
    keys = KeyPair.load(tmp_path / "A.key")
    path = f"/v1/runs/{run}/messages/A/B/local-count"
    digest = "0" * 64
    head = (
        f"PUT {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {10**10}\r\n"
        f"X-Content-SHA256: {digest}\r\n\r\n"
    ).encode()
    answer = _raw(cfg, keys, url, head)
    assert answer.startswith("HTTP/1.1 413") and "1,024 a local-count may hold" in answer
    a = pinned_session(cfg, keys)
    streamed = a.put(
        f"{url}{path}", data=iter([b"{}"]), headers={"X-Content-SHA256": digest}
    )  # a generator body goes chunked: no length
    assert streamed.status_code == 411
    garbage = put(a, url, run, "A/B/local-count", b"garbage" * 100)
    assert garbage.status_code == 400 and "not a local-count message" in garbage.json()["error"]
    assert put(a, url, run, "A/B/local-count", b"{not json}").status_code == 400
    assert held(tmp_path) == []
    store = tmp_path / "server-state" / "messages"
    assert [p for p in store.rglob("*") if p.is_file()] == []
