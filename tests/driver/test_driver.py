"""The driver: every role a state machine over its steps, run over a transport. The
directory transport writes whole messages and never replaces one with other bytes; a party
resumed from its state folder spends nothing new (a run over every transport writes
simulate's bytes: test_same_bytes.py)."""

from __future__ import annotations

import contextlib
import stat
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers import SECRET
from tests.runs import (
    SEED,
    TWO_PARTIES,
    correlated_table,
    role_env,
    same_as_simulate,
    two_party_config,
)
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import (
    DirectoryTransport,
    InProcessTransport,
    Message,
    MissingMessageError,
    PartyDriver,
    local_run,
    run_in_process,
)
from vertimrf.errors import ConfigError, MessageError, RunChangedError
from vertimrf.party.roles import Party
from vertimrf.party.secure import SecureParty

DEAL = Message("server", "A", "deal")


# ------------------------------------------------------------------ transports


@pytest.mark.parametrize("kind", ["in-process", "directory"])
def test_a_message_is_sent_once_and_never_replaced_by_other_bytes(tmp_path, kind):
    transport = (
        InProcessTransport()
        if kind == "in-process"
        else DirectoryTransport(tmp_path / "A", tmp_path)
    )
    with pytest.raises(MissingMessageError, match="deal from server to A"):
        transport.receive(DEAL)
    transport.send(DEAL, b"sealed deal")
    transport.send(DEAL, bytearray(b"sealed deal"))  # a re-run sends the same bytes: fine
    with pytest.raises(MessageError, match="already sent with other bytes"):
        transport.send(DEAL, b"another deal")
    assert transport.receive(DEAL) == b"sealed deal"
    if kind == "directory":
        assert (tmp_path / "A" / "server.deal").read_bytes() == b"sealed deal"
        assert [p.name for p in (tmp_path / "A").iterdir()] == ["server.deal"]  # no temp file


def test_the_directory_transport_waits_a_bounded_time_and_bounds_a_message(tmp_path):
    transport = DirectoryTransport(tmp_path / "A", tmp_path, timeout=0.3, max_bytes=4)
    start = time.monotonic()
    with pytest.raises(MissingMessageError, match=r"did not arrive within 0.3 s"):
        transport.receive(DEAL)
    assert 0.3 <= time.monotonic() - start < 2.0
    transport.send(DEAL, b"12345")
    with pytest.raises(MessageError, match="5 bytes is more than the 4"):
        transport.receive(DEAL)
    with pytest.raises(ConfigError, match="cannot name a message"):
        Message("server", "../A", "deal")
    with pytest.raises(ConfigError, match="timeout"):
        DirectoryTransport(tmp_path, tmp_path, timeout=-1)


def test_a_stuck_in_process_run_names_the_missing_message():
    """A party whose server never deals cannot move: the runner says which message is
    missing instead of looping."""
    df, spec = correlated_table(50)
    cfg = two_party_config(spec)
    keys = {n: KeyPair.generate(n) for n in TWO_PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    party = Party(
        "A", frame[["id", *TWO_PARTIES["A"]]], cfg, SECRET, keypair=keys["A"],
        peers={"B": keys["B"].public()}, seed=SEED,
    )  # fmt: skip
    with pytest.raises(MessageError, match="cannot go on: the deal from server to A"):
        run_in_process([PartyDriver(party, InProcessTransport())])


# ------------------------------------------------------------------ resuming


def _drivers(frame, cfg, keys, state, message_dir=None):
    data = {n: frame[["id", *cols]] for n, cols in TWO_PARTIES.items()}
    run = local_run(
        data, cfg, SECRET, seed=SEED, message_dir=message_dir, state_dir=state, keys=keys
    )
    return run.server, {d.name: d for d in run.parties}


@pytest.mark.parametrize("pipeline", ["select", "paper"])
def test_a_party_resumed_from_its_state_writes_the_same_bytes_and_releases_nothing_new(
    tmp_path, monkeypatch, pipeline
):
    """Parties stop after their first secure release; new party objects on the same state
    folders resend the recorded messages (the transport refuses other bytes), never release
    again, finish the run, and the synthetic table is simulate's, byte for byte."""
    df, spec = correlated_table()
    cfg = two_party_config(spec, secure_pipeline=pipeline)
    keys = {n: KeyPair.generate(n) for n in TWO_PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    mail = tmp_path / "mail"
    server, parties = _drivers(frame, cfg, keys, tmp_path / "state", mail)
    first = "release"
    while any(first not in d.done for d in parties.values()):
        for role in [server, *parties.values()]:
            step = role.next_step()
            if step is not None and step.name != "synthesize":
                with contextlib.suppress(MissingMessageError):
                    role.execute(step, role.gather(step))
    sent = {p.relative_to(mail): p.read_bytes() for p in mail.rglob("*") if p.is_file()}

    def refuse(*args, **kwargs):
        raise AssertionError("a resumed party released again")

    monkeypatch.setattr(SecureParty, "release", refuse)
    monkeypatch.setattr(SecureParty, "features", refuse)
    _, again = _drivers(frame, cfg, keys, tmp_path / "state", mail)
    run_in_process([server, *again.values()])
    for path, data in sent.items():
        assert (mail / path).read_bytes() == data
    folder = next(p for p in (tmp_path / "state" / "A").iterdir() if p.is_dir())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # the party's private state
    assert all(d.done == parties[n].done + [s.name for s in d.steps()][len(parties[n].done) :]
               for n, d in again.items())  # fmt: skip
    synth = server.fitted().sample().to_csv(index=False).encode()
    monkeypatch.undo()  # simulate's parties release
    same_as_simulate(synth, df, cfg, seed=SEED, secret=SECRET)


def test_a_state_folder_of_another_data_set_is_refused(tmp_path):
    df, spec = correlated_table(60)
    cfg = two_party_config(spec)
    keys = {n: KeyPair.generate(n) for n in TWO_PARTIES}
    frame = df.assign(id=np.arange(len(df)))
    server, parties = _drivers(frame, cfg, keys, tmp_path)
    run_in_process([server, *parties.values()])
    other = frame.assign(c0=(frame["c0"] + 1) % 6)
    with pytest.raises(RunChangedError, match="a corrected table needs a new config"):
        _drivers(other, cfg, keys, tmp_path)


# ------------------------------------------------------------------ separate processes


def test_a_server_whose_parties_never_join_stops_after_its_timeout(tmp_path):
    """No party runs: the server process waits its bounded time for the first message,
    then exits with one line naming the missing message, and writes nothing."""
    df, spec = correlated_table(50)
    two_party_config(spec, method="fo").save(tmp_path / "config.json")
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", "server", "run", "--config", "config.json",
         "--inbox", "mail/server", "--outbox", "mail", "--timeout", "1", "--out", "synth.csv"],
        cwd=tmp_path, env=role_env(tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "the local from A to server did not arrive within 1 s" in lines[0]
    assert time.monotonic() - start < 60 and not (tmp_path / "synth.csv").exists()


def test_run_step_runs_one_named_step_or_names_the_steps(tmp_path):
    """``run_step`` runs the step it names and no other (the server's deal, on the parties'
    commitments: one deal out to each party, nothing else); a step the method lacks is one
    error naming the steps."""
    df, spec = correlated_table(50)
    cfg = two_party_config(spec)
    run = local_run(
        {n: df[c].assign(id=np.arange(len(df))) for n, c in TWO_PARTIES.items()}, cfg, SECRET
    )
    server, transport = run.server, run.server.transport
    with pytest.raises(MissingMessageError, match="commit from A to server"):
        server.run_step("deal")  # no commitment yet
    for party in run.parties:
        party.run_step("commit")
        assert party.done == ["commit"]
    server.run_step("deal")
    assert server.done == ["deal"]
    assert all(transport.receive(Message("server", n, "deal")) for n in TWO_PARTIES)
    with pytest.raises(MissingMessageError):
        transport.receive(Message("server", "A", "select"))
    with pytest.raises(ConfigError, match=r"no step 'measure'.*\['deal', 'select', 'synthesize'\]"):
        server.run_step("measure")
