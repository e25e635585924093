"""Partial record sets, a server restarted between its deal and its select (as the step
commands run it: each step a new process on the same state folder), on a request that
grows a pair (round 2): the round-2 deals, every party's re-measurement and the synthetic
table are the one-process run's, byte for byte, and the kept select state restores the
region counts with the slot assignment's digest. A kept deal state without the digest is
refused."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.folder_roles import THREE
from tests.helpers import SECRET
from tests.https_roles import pinned_files
from tests.runs import SEED, correlated_table
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import LocalRun, Message, ServerDriver, local_run, run_in_process
from vertimrf.driver.server_state import FILE_NAME
from vertimrf.errors import MessageError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.schedule import Kind
from vertimrf.protocol.seeds import SERVER
from vertimrf.server.secure import SecureServer


def _files(root: Path) -> ProtocolConfig:
    """The role files of three parties holding different subsets of 2000 correlated records
    at epsilon 8: the server's selection asks for (0, 1, 3), so A's group (0, 1) grows the
    pair A-B."""
    df, spec = correlated_table(2000)
    cfg = pinned_files(root, df, spec, record_sets="partial", max_rows=8192)
    return cfg.with_changes(epsilon=8.0)


def _run(root: Path, cfg: ProtocolConfig) -> LocalRun:
    """The run's drivers in one process on the files in ``root``."""
    held = np.random.default_rng(5).random((2000, len(THREE))) < 0.7
    held[~held.any(axis=1), 0] = True
    data = {}
    for i, n in enumerate(THREE):
        frame = pd.read_csv(root / f"{n}.csv")
        data[n] = frame[held[frame["rid"].to_numpy(), i]]
    keys = {n: KeyPair.load(root / f"{n}.key") for n in THREE}
    return local_run(data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
                     server_key=KeyPair.load(root / "server.key"))  # fmt: skip


def _restarted(root: Path, cfg: ProtocolConfig) -> tuple[LocalRun, ServerDriver]:
    """The run with its server stopped after the deal (its admit and deal each run alone,
    as a step command runs them) and a new server on the same state folder (a new
    process) to take over."""
    run = _run(root, cfg)
    public = {n: KeyPair.load(root / f"{n}.key").public() for n in THREE}

    def server() -> ServerDriver:
        return ServerDriver(cfg, run.server.transport, public_keys=public, seed=SEED,
                            keypair=KeyPair.load(root / "server.key"),
                            state_dir=root / "server-state")  # fmt: skip

    first = server()
    for server_step, parties_before in ((None, "tokens"), (Kind.ADMIT, "features"),
                                        (Kind.DEAL, "groups")):  # fmt: skip
        if server_step is not None:
            first.run_step(server_step)
        run_in_process(run.parties, before=parties_before)
    assert first.done == [Kind.ADMIT, Kind.DEAL]
    return run, server()


def _sent(run: LocalRun, kind: Kind, to_server: bool = False) -> dict[str, bytes]:
    names = list(THREE)
    pairs = [(n, SERVER) if to_server else (SERVER, n) for n in names]
    return {a + b: bytes(run.server.transport.receive(Message(a, b, kind))) for a, b in pairs}


def test_a_server_restarted_after_its_deal_deals_round_two_as_in_one_process(tmp_path):
    cfg = _files(tmp_path)
    once = _run(tmp_path, cfg)
    model = once.fitted(once.run())
    secure = once.server.server.secure
    assert secure is not None and secure.plan.regions is not None
    layout = secure.plan.layout(secure.data.request.marginals)
    assert any(layout.grows(p, q) for p, q in secure.plan.pairs())  # round 2 happens
    run, server = _restarted(tmp_path, cfg)
    after = LocalRun(server, run.parties)
    again = after.fitted(after.run())
    assert _sent(run, Kind.SELECT_DEAL) == _sent(once, Kind.SELECT_DEAL)
    assert _sent(run, Kind.MEASURE, True) == _sent(once, Kind.MEASURE, True)
    assert again.sample(seed=2).equals(model.sample(seed=2))
    # the select state kept, loaded by a server that never dealt: the same counts and slots
    assert server.state is not None
    path = tmp_path / "select.state"
    path.write_bytes(server.state.secure_state(Kind.SELECT) or b"")
    key = KeyPair.load(tmp_path / "server.key")
    loaded = SecureServer.load_state(cfg, path, seed=SEED, keypair=key)
    assert loaded.record_sets.kept() == secure.record_sets.kept() is not None


def test_a_kept_deal_without_the_slot_assignments_digest_is_refused_with_one_line(tmp_path):
    """A deal state that keeps only the region counts (as one written before the digest
    was kept): select in a new process refuses it rather than deal round 2 on other
    masks."""
    run, server = _restarted(tmp_path, _files(tmp_path))
    db = sqlite3.connect(tmp_path / "server-state" / FILE_NAME, isolation_level=None)
    (kept,) = db.execute("SELECT secure_state FROM steps WHERE name = 'deal'").fetchone()
    regions = json.loads(kept)["counts"]
    db.execute("UPDATE steps SET secure_state = ? WHERE name = 'deal'",
               (json.dumps(regions).encode(),))  # fmt: skip
    db.close()
    with pytest.raises(MessageError, match="slot assignment") as caught:
        LocalRun(server, run.parties).run()
    assert "\n" not in str(caught.value)
