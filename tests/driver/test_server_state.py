"""The server's run state (SQLite beside the state folder): a restarted server resends the
steps it recorded instead of running them again, and continues; a state of another run is
refused; a step is recorded whole or not at all. A server process killed after its deal and
again after its select request, and restarted on the same state folder, writes simulate's
synthetic CSV and report."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.folder_roles import role_files
from tests.helpers import SECRET
from tests.runs import (
    SEED,
    TWO_PARTIES,
    correlated_table,
    reap,
    same_as_simulate,
    two_party_config,
    vertimrf_process,
)
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import DirectoryTransport, Message, ServerDriver, local_run, run_in_process
from vertimrf.driver.server_state import FILE_NAME, ServerState
from vertimrf.driver.transport import Stored, file_sha256
from vertimrf.errors import MessageError
from vertimrf.server.secure import SecureServer

HASH = "ab" * 32
DEAL = Message("server", "A", "deal")
SELECT = Message("A", "server", "release")


# ------------------------------------------------------------------ the database


def test_a_large_message_sent_is_kept_as_a_file_and_checked_when_resent(tmp_path):
    """A Stored message (a slot map) is copied to a file beside the database, not into it;
    it is resent from that file, and a kept copy altered since is refused with one line."""
    source = tmp_path / "map"
    source.write_bytes(b"slots" * 1000)
    slots = Message("server", "A", "deal-slots")
    state = ServerState(tmp_path / "state", HASH, ["A", "B"])
    stored = Stored(source, file_sha256(source), source.stat().st_size)
    state.record("deal", {}, {DEAL: b"sealed", slots: stored})
    source.unlink()  # the server's temporary copy is gone: the state's own is read
    sent = state.sent("deal")
    assert sent[DEAL] == b"sealed" and sent[slots].read() == b"slots" * 1000
    assert sent[slots].sha256 == stored.sha256 and sent[slots].size == 5000
    sent[slots].path.write_bytes(b"other")
    with pytest.raises(MessageError, match="altered or lost") as caught:
        state.sent("deal")
    assert "\n" not in str(caught.value)


def test_a_step_is_recorded_whole_or_not_at_all(tmp_path):
    """A write that fails mid-step (here a trigger aborts the second message's row) leaves
    the steps before it, and nothing of the failed one."""
    state = ServerState(tmp_path, HASH, ["A", "B"])
    state.record("deal", {}, {DEAL: b"sealed"})
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        db.execute(
            "CREATE TRIGGER fail BEFORE INSERT ON messages WHEN NEW.kind = 'select' "
            "BEGIN SELECT RAISE(ABORT, 'disk gone'); END"
        )
    request = Message("server", "A", "select")
    with pytest.raises(sqlite3.IntegrityError, match="disk gone"):
        state.record("select", {SELECT: b"first"}, {request: b"req"}, secure_state=b"s")
    state.close()
    again = ServerState(tmp_path, HASH, ["A", "B"])
    assert again.steps == ["deal"]
    assert again.sent("deal") == {DEAL: b"sealed"}
    assert again.secure_state("select") is None


def test_a_state_of_another_run_is_refused(tmp_path):
    ServerState(tmp_path, HASH, ["A", "B"]).close()
    ServerState(tmp_path, HASH, ["A", "B"]).close()  # the same run: fine
    for config_hash, parties in [("cd" * 32, ["A", "B"]), (HASH, ["A", "C"])]:
        with pytest.raises(MessageError, match="another run's") as info:
            ServerState(tmp_path, config_hash, parties)
        assert "\n" not in str(info.value)


def test_an_altered_kept_message_is_refused(tmp_path):
    state = ServerState(tmp_path, HASH, ["A", "B"])
    state.record("deal", {}, {DEAL: b"sealed"})
    state.close()
    with sqlite3.connect(tmp_path / FILE_NAME) as db:
        db.execute("UPDATE messages SET data = ?", (b"forged",))
    with pytest.raises(MessageError, match="was altered"):
        ServerState(tmp_path, HASH, ["A", "B"]).sent("deal")


# ------------------------------------------------------------------ resending


@pytest.mark.parametrize("pipeline", ["select", "paper"])
def test_a_restarted_server_resends_its_steps_and_does_not_recompute(
    tmp_path, monkeypatch, pipeline
):
    """The server stops before fit; a new server on the same state folder resends the
    recorded deal (and request) (deal and select are never called again: counted), loads
    the select state, fits, and samples simulate's table."""
    df, spec = correlated_table()
    cfg = two_party_config(spec, secure_pipeline=pipeline)
    frame = df.assign(id=np.arange(len(df)))
    data = {n: frame[["id", *cols]] for n, cols in TWO_PARTIES.items()}
    keys = {n: KeyPair.generate(n) for n in TWO_PARTIES}
    public = {n: k.public() for n, k in keys.items()}
    mail, state = tmp_path / "mail", tmp_path / "state"
    run = local_run(data, cfg, SECRET, seed=SEED, message_dir=mail, keys=keys)
    server_key = KeyPair.generate("server")

    def server() -> ServerDriver:
        transport = DirectoryTransport(mail / "server", mail)
        return ServerDriver(
            cfg, transport, public_keys=public, keypair=server_key, seed=SEED, state_dir=state
        )

    first = server()
    run_in_process([first, *run.parties], before="synthesize")
    steps = ["deal", "select"] if pipeline == "select" else ["deal"]
    assert first.done == steps
    calls = {"deal": 0, "select": 0}
    for name in calls:
        original = getattr(SecureServer, name)

        def counted(self, *args, _name=name, _original=original):
            calls[_name] += 1
            return _original(self, *args)

        monkeypatch.setattr(SecureServer, name, counted)
    again = server()
    run_in_process([again])
    assert calls == {"deal": 0, "select": 0}
    assert again.done == [*steps, "synthesize"]
    assert again.sent_bytes == first.sent_bytes > 0  # the recorded bytes, resent
    model = again.fitted()
    _, report = same_as_simulate(
        model.sample().to_csv(index=False).encode(), df, cfg, seed=SEED, secret=SECRET
    )
    assert model.report.ledger.to_records() == report.ledger.to_records()


# ------------------------------------------------------------------ killed and restarted


def _wait_for(path: Path, proc: subprocess.Popen, seconds: float = 300.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


def _same_report(got: dict, want: dict) -> None:
    """The reports agree but for the timings and the byte counts (the in-process run counts
    what each party sent; a server process counts nothing it did not see)."""
    for key in ("seconds", "message_bytes"):
        got.pop(key), want.pop(key)
    assert got == want


@pytest.mark.slow  # in process: test_a_restarted_server_resends_its_steps_and_does_not_recompute
def test_a_server_killed_after_its_deal_and_after_its_request_resumes_the_run(tmp_path):
    """Each role its own process over the directory transport. The server runs alone and is
    killed (SIGKILL) once its deal is out; restarted with the parties, it is killed again
    once its select request is out (before it can fit: it still waits for the
    re-measurements); restarted once more on the same state folder, it finishes: simulate's
    synthetic CSV and report, byte for byte and release for release."""
    df, spec = correlated_table()
    cfg = two_party_config(spec)
    server, parties = role_files(tmp_path, df, cfg)
    server += ["--state-dir", "server-state", "--report", "report.json"]

    def start(args: list[str]) -> subprocess.Popen:
        return vertimrf_process(tmp_path, *args)

    procs = [start(server), *map(start, parties)]
    try:
        _wait_for(tmp_path / "mail" / "A" / "server.deal", procs[0])
        procs[0].send_signal(signal.SIGKILL)
        assert procs[0].wait(timeout=60) == -signal.SIGKILL
        reap(procs[0])
        procs[0] = start(server)
        _wait_for(tmp_path / "mail" / "A" / "server.select", procs[0])
        procs[0].send_signal(signal.SIGKILL)
        assert procs[0].wait(timeout=60) == -signal.SIGKILL
        reap(procs[0])
        assert not (tmp_path / "synth.csv").exists()  # killed mid-run
        procs[0] = start(server)
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-2000:]
    finally:
        for proc in procs:
            reap(proc)
    _, report = same_as_simulate(tmp_path / "synth.csv", df, cfg, seed=SEED, secret=SECRET)
    _same_report(json.loads((tmp_path / "report.json").read_text()), report.to_dict())


def test_a_server_process_refuses_a_state_of_another_run(tmp_path):
    """The state folder of one run given to a server of another config: one line, exit 2."""
    df, spec = correlated_table(50)
    ServerState(tmp_path / "server-state", HASH, list(TWO_PARTIES)).close()
    two_party_config(spec, method="fo").save(tmp_path / "config.json")
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", "server", "run", "--config", "config.json",
         "--inbox", "mail/server", "--outbox", "mail", "--timeout", "1", "--out", "synth.csv",
         "--state-dir", "server-state"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "this server state is another run's" in lines[0]
