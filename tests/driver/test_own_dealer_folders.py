"""A dealer of its own over folders: the server, the dealer (`vertimrf dealer run`) and two
parties, each its own process sharing one mail folder, finish a secure run; the server's
state records no deal, and the dealer read no release (only the commitments and the
request)."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from tests.https_roles import finish_ok, own_dealer_files
from tests.runs import SEED, TWO_PARTIES, correlated_table, vertimrf_process


def test_an_own_dealer_over_folders_finishes_a_run(tmp_path):
    df, spec = correlated_table(120)
    own_dealer_files(tmp_path, df, spec)
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED), "--quiet"]  # fmt: skip
    server = vertimrf_process(
        tmp_path, "server", "run", *common, "--inbox", "mail/server", "--server-key",
        "server.key", "--state-dir", "server-state", "--out", "synth.csv",
    )  # fmt: skip
    dealer = vertimrf_process(
        tmp_path, "dealer", "run", *common, "--inbox", "mail/dealer", "--keys", "dealer.key",
        "--state-dir", "dealer-state",
    )  # fmt: skip
    parties = [
        vertimrf_process(
            tmp_path,
            "party",
            "run",
            *common,
            "--inbox",
            f"mail/{n}",
            "--name",
            n,
            "--data",
            f"{n}.csv",
            "--id-column",
            "rid",
            "--secret",
            "secret.hex",
            "--keys",
            f"{n}.key",
            "--state-dir",
            f"state-{n}",
        )  # fmt: skip
        for n in TWO_PARTIES
    ]
    finish_ok([server, dealer, *parties])
    assert len((tmp_path / "synth.csv").read_text().splitlines()) > 1
    assert sorted(p.name for p in (tmp_path / "mail" / "dealer").iterdir()) == [
        "A.commit", "B.commit", "server.select",
    ]  # fmt: skip
    with closing(sqlite3.connect(tmp_path / "server-state" / "server.sqlite")) as db:
        assert [n for (n,) in db.execute("SELECT name FROM steps")] == ["select"]
    with closing(sqlite3.connect(tmp_path / "dealer-state" / "dealer.sqlite")) as db:
        steps = [n for (n,) in db.execute("SELECT name FROM steps")]
    assert steps == ["deal", "select-deal"]
