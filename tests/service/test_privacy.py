"""What the service shows and keeps of the messages it relays: `/v1/status` shows a role the
SHA-256 only of the messages it sent or receives (it showed every role every digest, so a
peer could test a guess of another party's message); every file of its store is its
owner's alone (mode 0600; uploads were 0644). The service is its own process on
127.0.0.1."""

from __future__ import annotations

import os
import stat
import time

import pytest

from tests.folder_roles import THREE
from tests.https_roles import held, pinned_session, put
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.secure.commit import commit_bytes

pytestmark = pytest.mark.service  # every test here runs the HTTPS service


@pytest.fixture
def dealt(serve):
    """A service of a secure run once each party uploaded a commit and the server wrote
    each its deal (waited for, at most 300 s): its folder, URL and config."""
    tmp_path, url, cfg = serve()
    run = cfg.config_hash()
    for name in THREE:
        session = pinned_session(cfg, KeyPair.load(tmp_path / f"{name}.key"))
        commit = commit_bytes(run, name, os.urandom(32))
        assert put(session, url, run, f"{name}/server/commit", commit).status_code == 201
    deadline = time.monotonic() + 300
    while len([r for r in held(tmp_path) if r[2] == "deal"]) < len(THREE):
        assert time.monotonic() < deadline, f"no deal for every party: {held(tmp_path)}"
        time.sleep(0.1)
    return tmp_path, url, cfg


def test_status_shows_a_role_the_digests_of_its_own_messages_only(dealt):
    """Each party (and the server's operator) reads the status: a message it sent or
    receives shows its digest; any other only its sender, kind and bytes, and its digest
    is nowhere in the answer."""
    tmp_path, url, cfg = dealt
    rows = held(tmp_path)
    assert len(rows) == 2 * len(THREE)  # each party's commit and deal
    for role in [*THREE, "server"]:
        session = pinned_session(cfg, KeyPair.load(tmp_path / f"{role}.key"))
        answer = session.get(f"{url}/v1/status", timeout=30)
        assert answer.status_code == 200, answer.text
        shown = answer.json()["messages"]
        own = {(s, r, k, d) for s, r, k, d in rows if role in (s, r)}
        assert {(m["sender"], m["receiver"], m["kind"], m["sha256"]) for m in shown if
                "sha256" in m} == own  # fmt: skip
        others = [m for m in shown if "sha256" not in m]
        assert all(set(m) == {"sender", "kind", "bytes"} for m in others), others
        assert len(others) == len(rows) - len(own)
        for *_, digest in set(rows) - own:
            assert digest not in answer.text, (role, digest)


def test_every_file_of_the_store_is_private(dealt):
    """The uploaded commits, the server's deals and the message log are mode 0600."""
    tmp_path, _, _ = dealt
    folder = tmp_path / "server-state"
    files = [folder / "messages.sqlite", *(p for p in (folder / "messages").rglob("*")
                                           if p.is_file())]  # fmt: skip
    assert len(files) > 2 * len(THREE)
    modes = {str(p.relative_to(folder)): oct(stat.S_IMODE(p.stat().st_mode)) for p in files}
    assert set(modes.values()) == {"0o600"}, modes
