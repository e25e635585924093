"""What a run tells its operator: `vertimrf status` (any role's key, the server's included)
names whom the run waits on and for which step, and a finished run's outputs; the report of
a networked run (HTTPS or folders) times every step and counts every party's bytes, and the
server prints the paths it wrote. The schedule these derive from matches the messages each
method's parties may upload."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.folder_roles import THREE
from tests.https_roles import (
    finish_ok,
    held,
    pinned_files,
    pinned_session,
    put,
    start_party,
    start_server,
    wait_for,
)
from tests.runs import SEED, correlated_table, two_party_config, vertimrf_process
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.schedule import observed_seconds, sent_bytes, waiting_on
from vertimrf.protocol.schedule import Message, schedule

# The steps the select pipeline's report times, the server's and the parties'.
STEPS = ("commit", "deal", "features", "release", "select", "groups", "measure", "fit", "sample")


@pytest.mark.parametrize(
    "fields",
    [{}, {"secure_pipeline": "paper"}, {"method": "fo"}, {"method": "fm", "allow_non_dp": True}],
    ids=["select", "paper", "fo", "fm"],
)
def test_the_schedule_sends_every_message_a_party_may_upload(fields):
    """The parties' messages in the schedule are exactly those the service lets them
    upload, each once; the schedule ends with the server's synthesize, which sends nothing."""
    _, spec = correlated_table(20)
    cfg = two_party_config(spec, **fields)
    phases = schedule(cfg).phases()
    sent = [m for p in phases for m in p.messages if m.sender != "server"]
    assert len(sent) == len(set(sent))
    assert {(m.sender, m.receiver, m.kind) for m in sent} == set(schedule(cfg).uploads())
    last = (phases[-1].step, phases[-1].roles, phases[-1].messages)
    assert last == ("synthesize", ("server",), ())


def test_the_run_waits_on_the_first_step_not_sent_and_the_roles_yet_to_send():
    """A's features blob to B is missing: the run waits on A's features, though B has gone on
    to its release; once every message is held, on the server's synthesize."""
    _, spec = correlated_table(20)
    phases = schedule(two_party_config(spec)).phases()
    every = {m for p in phases for m in p.messages}
    assert waiting_on(phases, set()) == ("commit", ["A", "B"])
    sent = {m for p in phases[:2] for m in p.messages} | {
        Message("B", "A", "features"),
        Message("B", "server", "release"),
    }
    assert waiting_on(phases, sent) == ("features", ["A"])
    assert waiting_on(phases, every - {Message("server", "B", "select-deal")}) == (
        "select",
        ["server"],
    )
    assert waiting_on(phases, every) == ("synthesize", ["server"])


def test_observed_seconds_time_the_parties_steps_from_the_messages_arrival():
    _, spec = correlated_table(20)
    cfg = two_party_config(spec, method="fo")
    count, local_a, local_b = schedule(cfg).messages()
    arrived = {count: 10.0, local_a: 11.0, local_b: 14.0}
    # local: the count party's count (first arrival to last: 0 s), then the locals (4 s)
    assert observed_seconds(schedule(cfg).phases(), arrived) == {"local": 4.0}
    assert sent_bytes(cfg, {count: 5, local_a: 7, local_b: 3}) == {"A": 12, "B": 3}


def _status(tmp_path: Path, url: str, keys: str) -> str:
    status = subprocess.run(
        [sys.executable, "-m", "vertimrf", "status", "--server", url,
         "--config", "config.json", "--keys", keys],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    return status.stdout


@pytest.mark.slow
@pytest.mark.service
def test_status_with_the_server_key_names_the_party_the_run_waits_on(tmp_path):
    """C never starts: once A's and B's commitments are held, `status` with the server's
    key (and with A's) says the run waits on C's commit. The server's key opens the status
    only: an upload or a download with it is refused."""
    df, spec = correlated_table(60)
    cfg = pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, timeout=120)
    parties = [start_party(tmp_path, n, url) for n in ("A", "B")]
    try:
        commits = {("A", "server", "commit"), ("B", "server", "commit")}
        wait_for(lambda: commits <= {r[:3] for r in held(tmp_path)}, server, "the commits")
        for keys in ("server.key", "A.key"):
            out = _status(tmp_path, url, keys)
            assert "running, waiting on C: commit" in out.splitlines()[0], out
        # the server's key reads the status, and nothing else: it uploads and reads no message
        operator = pinned_session(cfg, KeyPair.load(tmp_path / "server.key"))
        run = cfg.config_hash()
        assert put(operator, url, run, "server/A/deal", b"PK\x03\x04").status_code == 403
        read = operator.get(f"{url}/v1/runs/{run}/messages/A/server/commit")
        assert read.status_code == 403
    finally:
        for proc in [server, *parties]:
            proc.kill()


@pytest.mark.slow
@pytest.mark.service
def test_a_finished_https_run_shows_done_its_paths_and_a_full_report(tmp_path):
    """A whole run over HTTPS, the server left serving: `status` with the server's key says
    `done` and names the table's path; the server's stdout names the paths it wrote; the
    report times every step and counts the bytes each party sent, as the store holds them."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    server, url = start_server(tmp_path, "--out", "synth.csv", "--report", "report.json")
    try:
        finish_ok([start_party(tmp_path, n, url) for n in THREE])
        wait_for((tmp_path / "synth.csv").exists, server, "the synthetic table", 120)
        for _ in range(20):  # the table is copied just before the run says done
            out = _status(tmp_path, url, "server.key").splitlines()[0]
            if "running" not in out:
                break
        assert ": done; the synthetic table is in " in out, out
        assert str(tmp_path / "synth.csv") in out and str(tmp_path / "report.json") in out
        server.send_signal(signal.SIGTERM)
        stdout, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert f"the synthetic table is in {tmp_path / 'server-state' / 'synthetic.csv'}" in stdout
    assert str(tmp_path / "synth.csv") in stdout and str(tmp_path / "report.json") in stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(STEPS) <= set(report["seconds"]), report["seconds"]
    assert all(v >= 0 for v in report["seconds"].values())
    assert report["seconds"]["fit"] > 0 and report["seconds"]["sample"] > 0
    sent = {n: 0 for n in THREE}
    for sender, *_, size in _rows(tmp_path):
        sent[sender] = sent.get(sender, 0) + size
    assert report["message_bytes"] == {n: sent[n] for n in THREE}
    assert all(report["message_bytes"][n] > 1000 for n in THREE)


def _rows(tmp_path: Path) -> list[tuple]:
    """The store's messages: (sender, receiver, kind, bytes)."""
    import sqlite3

    with sqlite3.connect(tmp_path / "server-state" / "messages.sqlite") as db:
        return db.execute("SELECT sender, receiver, kind, bytes FROM messages").fetchall()


@pytest.mark.slow
def test_a_folders_run_reports_every_step_and_every_partys_bytes(tmp_path):
    """`server run --inbox/--outbox` over shared folders: the report times every step and
    counts each party's bytes (every message it wrote to the folders); the server prints the
    paths of the table and the report."""
    df, spec = correlated_table(60)
    pinned_files(tmp_path, df, spec)
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED), "--quiet"]  # fmt: skip
    server = vertimrf_process(
        tmp_path, "server", "run", *common, "--inbox", "mail/server", "--server-key",
        "server.key", "--out", "synth.csv", "--report", "report.json", "--state-dir", "s",
    )  # fmt: skip
    party_args = ["--data", "{n}.csv", "--id-column", "rid", "--secret", "secret.hex",
                  "--keys", "{n}.key", "--state-dir", "state-{n}",
                  "--inbox", "mail/{n}"]  # fmt: skip
    parties = [
        vertimrf_process(
            tmp_path, "party", "run", *common, "--name", n, *(a.format(n=n) for a in party_args)
        )  # fmt: skip
        for n in THREE
    ]
    try:
        finish_ok(parties)
        stdout, err = server.communicate(timeout=300)
        assert server.returncode == 0, err[-3000:]
    finally:
        server.kill()
    assert "synthetic rows to synth.csv and the report to report.json" in stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert set(STEPS) <= set(report["seconds"]), report["seconds"]
    mail = tmp_path / "mail"
    sent = {n: sum(f.stat().st_size for f in mail.glob(f"*/{n}.*")) for n in THREE}
    assert report["message_bytes"] == sent and all(v > 1000 for v in sent.values())
