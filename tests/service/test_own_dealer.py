"""A dealer of its own (config dealer="own"): the service (the fitting server), the dealer
and two parties, each its own process on 127.0.0.1, finish a secure run with partial record
sets; afterwards the server's store holds no mask (no seed, slot-map key or dealt matrix of
any deal) and the dealer's store no release (no byte of any party's first release or
re-measurement)."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.https_roles import finish_ok, own_dealer_files, start_party, start_server
from tests.runs import SEED, TWO_PARTIES, correlated_table, vertimrf_process
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import codec
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.deal import Deal, GroupDeal

pytestmark = pytest.mark.service  # the test runs the HTTPS service


def _secrets(store: Path, cfg, tmp_path: Path) -> list[bytes]:
    """Every mask seed, slot-map key and dealt matrix (as 32-byte pieces) of both rounds'
    deals, opened with each party's key from the service's store."""
    ctx, plan, run = cfg.run_context(), secure_plan(cfg), cfg.config_hash()
    out = []
    for name in TWO_PARTIES:
        keys = KeyPair.load(tmp_path / f"{name}.key")
        deal = Deal.open((store / name / "dealer.deal").read_bytes(), keys, ctx)
        request = codec.read_request((store / name / "server.select").read_bytes(), plan, run)
        blob = (store / name / "dealer.select-deal").read_bytes()
        group = GroupDeal.open(blob, keys, ctx, request.digest())
        out += [deal.seed_u, deal.slot_key, *deal.seeds_w.values()]
        out += [*group.seeds_u.values(), *group.seeds_w.values()]
        for z in [*deal.z.values(), *group.z_a.values(), *group.z_b.values()]:
            data = z.tobytes()
            out += [data[i : i + 32] for i in range(0, len(data) - 31, max(32, len(data) // 8))]
    return [s for s in out if len(s) == 32 and any(s)]


def _files(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in folder.rglob("*") if p.is_file()]


def test_an_own_dealer_over_https_leaves_no_mask_at_the_server_and_no_release_at_the_dealer(
    tmp_path,
):
    df, spec = correlated_table(120)
    cfg = own_dealer_files(tmp_path, df, spec, record_sets="partial", max_rows=4096)
    server, url = start_server(tmp_path, "--exit-when-done")
    dealer = vertimrf_process(
        tmp_path, "dealer", "run", "--server", url, "--config", "config.json",
        "--keys", "dealer.key", "--state-dir", "dealer-state", "--timeout", "300",
        "--seed", str(SEED), "--quiet",
    )  # fmt: skip
    parties = [start_party(tmp_path, n, url) for n in TWO_PARTIES]
    finish_ok([dealer, *parties, server])
    assert (tmp_path / "server-state" / "synthetic.csv").stat().st_size > 0

    store = tmp_path / "server-state" / "messages"
    secrets = _secrets(store, cfg, tmp_path)
    assert len(secrets) > 10
    held = _files(tmp_path / "server-state")
    assert not [s for s in secrets if any(s in data for data in held)], "a mask at the server"
    with closing(sqlite3.connect(tmp_path / "server-state" / "server.sqlite")) as db:
        steps = [n for (n,) in db.execute("SELECT name FROM steps")]
    assert steps == ["select"]  # the server dealt nothing

    releases = [
        (store / "server" / f"{n}.{kind}").read_bytes()
        for n in TWO_PARTIES
        for kind in ("release", "measure")
    ]
    pieces = [r[i : i + 48] for r in releases for i in range(0, len(r) - 47, max(48, len(r) // 16))]
    kept = _files(tmp_path / "dealer-state")
    assert not [p for p in pieces if any(p in data for data in kept)], "a release at the dealer"
    with closing(sqlite3.connect(tmp_path / "dealer-state" / "dealer.sqlite")) as db:
        read = {k for (k,) in db.execute("SELECT kind FROM messages WHERE direction='received'")}
        steps = [n for (n,) in db.execute("SELECT name FROM steps")]
    assert read == {"commit", "tokens", "select"} and steps == ["admit", "deal", "select-deal"]
