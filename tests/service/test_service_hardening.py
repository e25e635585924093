"""The service holds up: a bad ``wait`` or an over-long name is a one-line 400; a feature
blob of another length, or a container of another kind or party, is refused before it is
stored (the right upload then succeeds); a client stalled in its TLS handshake or its
request's head is dropped within the read time-out; SIGTERM or SIGINT stops the service
within 5 s with long-polls open. Each service is its own process on 127.0.0.1."""

from __future__ import annotations

import io
import os
import signal
import socket
import threading
import time

import pytest
import requests

from tests.https_roles import held, pinned_files, pinned_session, put, start_server, stop_server
from tests.runs import correlated_table
from vertimrf.container import write_container
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.message import KIND as LOCAL_CONTAINER
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.service.tls import client_context

pytestmark = pytest.mark.service  # every test here runs the HTTPS service

READ_TIMEOUT = 2.0  # the services' --read-timeout here


@pytest.fixture
def service(serve):
    """A service of a secure run (the default) with a 2 s read time-out: its folder, URL
    and config."""
    return serve("--read-timeout", str(READ_TIMEOUT))


def _keys(tmp_path, name: str) -> KeyPair:
    return KeyPair.load(tmp_path / f"{name}.key")


def _one_line_400(response: requests.Response, words: str) -> None:
    assert response.status_code == 400, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert words in error and "\n" not in error, error


def test_a_wait_that_is_not_a_number_of_seconds_from_0_is_refused(service):
    """wait=nan kept the long-poll polling for ever; nan, inf, -1 and a word are 400."""
    tmp_path, url, cfg = service
    b = pinned_session(cfg, _keys(tmp_path, "B"))
    route = f"{url}/v1/runs/{cfg.config_hash()}/messages/A/B/features"
    for wait in ("nan", "inf", "-inf", "-1", "soon"):
        _one_line_400(b.get(route, params={"wait": wait}, timeout=10), "number of seconds")
    assert b.get(route, params={"wait": "0.1"}, timeout=10).status_code == 204


def test_over_long_names_are_refused_with_a_400(service):
    """A 5,000-character kind read as a file name was a 500 with a traceback; every role
    and kind in the path is at most 100 characters (a path over aiohttp's 8,190-byte line
    is its own 400)."""
    tmp_path, url, cfg = service
    run = cfg.config_hash()
    a, b = (pinned_session(cfg, _keys(tmp_path, n)) for n in "AB")
    long = "k" * 5000
    base = f"{url}/v1/runs/{run}/messages"
    for session, route in [
        (b, f"A/B/{long}"),
        (b, f"{long}/B/features"),
        (a, f"A/{long}/features"),
    ]:
        _one_line_400(session.get(f"{base}/{route}", timeout=10), "over 100 characters")
    _one_line_400(put(a, url, run, f"A/B/{long}", b"x"), "over 100 characters")
    _one_line_400(put(a, url, run, f"{long}/B/features", b"x"), "over 100 characters")
    huge = b.get(f"{base}/A/B/{'k' * 9000}", timeout=10)
    assert huge.status_code == 400 and "Traceback" not in huge.text
    assert {row[2] for row in held(tmp_path)} <= {"deal"}  # the server's own, no upload


def test_a_blob_of_another_length_is_refused_and_the_right_one_is_then_stored(service):
    """A 100-byte round-1 blob was stored, and the right one then got 409 (the run was
    stuck); a blob of any length but its plan's is refused before a byte is stored."""
    tmp_path, url, cfg = service
    run = cfg.config_hash()
    a = pinned_session(cfg, _keys(tmp_path, "A"))
    planned = run_plan(cfg).blob_bytes["A"]
    _one_line_400(put(a, url, run, "A/B/features", os.urandom(100)), f"exactly {planned:,}")
    assert put(a, url, run, "A/B/features", os.urandom(planned + 1)).status_code == 413
    assert not [r for r in held(tmp_path) if r[2] == "features"]
    assert not list((tmp_path / "server-state" / "messages" / ".partial").iterdir())
    right = os.urandom(planned)
    assert put(a, url, run, "A/B/features", right).status_code == 201
    assert put(a, url, run, "A/B/features", right).status_code == 200  # a resend


def _release(party: str, run: str) -> bytes:
    buf = io.BytesIO()
    SecureRelease(party, "select", run, "0" * 64, {}, {}, seeded=False).save(buf)
    return buf.getvalue()


def test_a_container_of_another_kind_or_party_is_refused_before_it_is_stored(service):
    """B's release uploaded by A was stored as A's select; a container naming another
    party, of another container kind, or of another run, is refused and nothing is held;
    A's own release is then stored."""
    tmp_path, url, cfg = service
    run = cfg.config_hash()
    a = pinned_session(cfg, _keys(tmp_path, "A"))
    _one_line_400(put(a, url, run, "A/server/release", _release("B", run)), "not A's")
    local = io.BytesIO()
    write_container(local, LOCAL_CONTAINER, {"party": "A", "config_hash": run}, {})
    _one_line_400(put(a, url, run, "A/server/release", local.getvalue()), "not a release")
    assert put(a, url, run, "A/server/release", _release("A", "0" * 64)).status_code == 409
    assert not [r for r in held(tmp_path) if r[2] == "release"]
    assert not list((tmp_path / "server-state" / "messages" / ".partial").iterdir())
    assert put(a, url, run, "A/server/release", _release("A", run)).status_code == 201


def _dropped_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the service closes ``sock`` (inf if it is open after ``seconds``)."""
    start = time.monotonic()
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
    except TimeoutError:
        return float("inf")
    except OSError:  # a reset, or a TLS connection cut without its close_notify
        pass
    return time.monotonic() - start


def test_a_client_stalled_mid_header_or_mid_handshake_is_dropped(service):
    """A party that sends half a request's head, and a stranger that sends half a TLS
    hello, each then nothing: the service closes both within its read time-out (2 s here),
    where it held them for over a minute; a long-poll longer than the time-out is not cut."""
    tmp_path, url, cfg = service
    host, port = url.removeprefix("https://").split(":")
    limit = READ_TIMEOUT + 3.0
    context = client_context(cfg, _keys(tmp_path, "A"))
    with context.wrap_socket(socket.create_connection((host, int(port)), timeout=30),
                             server_hostname=host) as tls:  # fmt: skip
        tls.sendall(b"GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept:")
        assert _dropped_within(tls, 30) < limit
    with socket.create_connection((host, int(port)), timeout=30) as raw:
        raw.sendall(b"\x16\x03\x01\x02\x00\x01")  # the head of a TLS ClientHello
        assert _dropped_within(raw, 30) < limit
    b = pinned_session(cfg, _keys(tmp_path, "B"))  # a request in progress is never dropped:
    poll = b.get(f"{url}/v1/runs/{cfg.config_hash()}/messages/A/B/features", params={"wait": "4"})
    assert poll.status_code == 204  # a long-poll twice the read time-out is answered


def _long_poll(
    session: requests.Session, url: str, route: str, answers: list, ready: threading.Event
) -> None:
    """Connect to the service at ``url`` (a status request: the TLS handshake done, the
    connection kept), say so in ``ready``, then long-poll ``route`` on that connection; its
    answer into ``answers``."""
    try:
        session.get(f"{url}/v1/status", timeout=90).raise_for_status()
        ready.set()
        answers.append(session.get(f"{url}{route}", params={"wait": "60"}, timeout=90).status_code)
    except requests.ConnectionError as exc:
        answers.append(type(exc).__name__)


@pytest.mark.parametrize(
    ("sig", "extra"),
    [(signal.SIGTERM, ()), (signal.SIGTERM, ("--exit-when-done",)), (signal.SIGINT, ())],
)
def test_a_signal_stops_the_service_within_5_s_with_long_polls_open(tmp_path, sig, extra):
    """Two parties long-poll (wait=60) for blobs that never come; SIGTERM (or SIGINT) stops
    the service within 5 s, exit 128 + the signal (143, 130), with one line on the way out;
    the polls are answered 204. The signal comes once both are connected (at most 120 s: a
    TLS handshake is slow on a loaded machine) and 1.5 s more for their requests to be in."""
    df, spec = correlated_table(40)
    cfg = pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, *extra)
    run = cfg.config_hash()
    answers: list = []
    ready = [threading.Event() for _ in ("B", "C")]
    polls = [
        threading.Thread(
            target=_long_poll,
            args=(
                pinned_session(cfg, _keys(tmp_path, n)),
                url,
                f"/v1/runs/{run}/messages/A/{n}/features",
                answers,
                connected,
            ),
        )
        for n, connected in zip(("B", "C"), ready, strict=True)
    ]
    try:
        for poll in polls:
            poll.start()
        assert all(connected.wait(120) for connected in ready), answers
        time.sleep(1.5)  # the polls are in
        assert server.poll() is None and not answers
        start = time.monotonic()
        server.send_signal(sig)
        server.wait(timeout=30)
        took = time.monotonic() - start
    finally:
        err = stop_server(server)
        for poll in polls:
            poll.join(30)
    assert took < 5.0, took
    assert server.returncode == 128 + sig
    assert err.strip().splitlines()[-1] == (
        f"vertimrf server: stopped by {sig.name}; the state folder keeps the run: serve it "
        "again to resume."
    )
    assert answers == [204, 204]
