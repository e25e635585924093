"""A message of another run (another config, or another attempt at this run: its config
hash differs) is refused before it is stored, with one line naming its run beside this
one, so that the run goes on when the right message arrives. The service held such a
commit and answered 201; the party's right commit was then refused with 409, and the run
was stuck. Each service is its own process on 127.0.0.1."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

from tests.folder_roles import THREE
from tests.https_roles import (
    count_message,
    finish_ok,
    held,
    pinned_files,
    pinned_session,
    put,
    start_party,
    start_server,
)
from tests.runs import correlated_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.secure.commit import commit_bytes
from vertimrf.protocol.secure.release import SecureRelease
from vertimrf.protocol.secure.tokens import tokens_head

pytestmark = pytest.mark.service  # every test here runs the HTTPS service

OTHER = "0123456789abcdef" * 4  # another run's config hash


def _release(run: str) -> bytes:
    buf = io.BytesIO()
    SecureRelease("A", "select", run, "0" * 64, {}, {}, seeded=False).save(buf)
    return buf.getvalue()


def _tokens(run: str) -> bytes:
    return tokens_head(run, "A") + bytes(128)  # a head, and words the service does not read


# Each kind whose bytes name their run: the config it is uploaded in, its route, and its
# bytes for a run. A sealed blob names none the service can read (its receiver checks it).
KINDS = {
    "local-count": ({"method": "fo"}, "A/B/local-count", lambda run: count_message(run, 41)),
    "commit": ({}, "A/server/commit", lambda run: commit_bytes(run, "A", bytes(32))),
    "tokens": ({"record_sets": "partial"}, "A/server/tokens", _tokens),
    "release": ({}, "A/server/release", _release),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_message_of_another_run_is_refused_unstored_then_this_runs_is_stored(serve, kind):
    """A's message naming another run's config hash is a one-line 409 naming both runs;
    nothing is held, no file is left; A's message of this run is then stored (201)."""
    fields, route, body = KINDS[kind]
    tmp_path, url, cfg = serve(**fields)
    run = cfg.config_hash()
    a = pinned_session(cfg, KeyPair.load(tmp_path / "A.key"))
    stale = put(a, url, run, route, body(OTHER))
    assert stale.status_code == 409, stale.text
    error = stale.json()["error"]
    assert "\n" not in error and OTHER[:16] in error and run[:16] in error, error
    assert not [r for r in held(tmp_path) if r[0] == "A"]
    store = tmp_path / "server-state" / "messages"
    assert not [*store.rglob("A.*"), *(store / ".partial").iterdir()]
    assert put(a, url, run, route, body(run)).status_code == 201
    assert [r[:3] for r in held(tmp_path) if r[0] == "A"] == [tuple(route.split("/"))]


def test_a_commit_of_another_attempt_is_refused_and_the_run_then_finishes(tmp_path):
    """A's commit made for another attempt at this run (the same settings, a fresh run
    nonce) is uploaded before A starts: it is refused and not held; A, B and C then run,
    A's own commit is held, and the run finishes."""
    df, spec = correlated_table(60)
    cfg = pinned_files(tmp_path, df, spec)
    earlier = cfg.new_run().config_hash()
    server, url = start_server(tmp_path, "--out", "synth.csv", "--exit-when-done")
    parties = []
    try:
        a = pinned_session(cfg, KeyPair.load(tmp_path / "A.key"))
        stale = commit_bytes(earlier, "A", os.urandom(32))
        refused = put(a, url, cfg.config_hash(), "A/server/commit", stale)
        assert refused.status_code == 409 and earlier[:16] in refused.json()["error"]
        assert held(tmp_path) == []
        parties = [start_party(tmp_path, n, url) for n in THREE]
        finish_ok([server, *parties])
    finally:
        for proc in [server, *parties]:
            proc.kill()
    commits = [r for r in held(tmp_path) if r[:3] == ("A", "server", "commit")]
    assert len(commits) == 1 and commits[0][3] != hashlib.sha256(stale).hexdigest()
    assert (tmp_path / "synth.csv").exists()
