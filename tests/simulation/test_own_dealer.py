"""A dealer of its own in one process: the server, the dealer and two parties finish a
secure run (equal and partial record sets) over one in-process transport, the server holding
no dealer; a dealer in a new process, from its state, deals round 2 again byte for byte."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing

import pytest

from tests.helpers import SECRET
from tests.runs import TWO_PARTIES, correlated_table, two_party_config
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver.dealer import DealerDriver
from vertimrf.driver.inprocess import run_in_process
from vertimrf.driver.party import PartyDriver
from vertimrf.driver.server import ServerDriver
from vertimrf.driver.transport import InProcessTransport
from vertimrf.errors import MessageError
from vertimrf.party.roles import Party
from vertimrf.protocol.setup import run_setup


@pytest.mark.parametrize("sets", ["equal", "partial"])
def test_an_own_dealer_in_process_and_its_round_two_from_its_state(sets, tmp_path):
    df, spec = correlated_table(150)
    keys = {n: KeyPair.generate(n) for n in [*TWO_PARTIES, "server", "dealer"]}
    base = two_party_config(spec, record_sets=sets)
    rows = 512 if sets == "equal" else 4096
    cfg = dataclasses.replace(base, dealer="own", max_rows=rows)
    setup = run_setup(cfg.with_identities([k.public() for k in keys.values()]))
    transport = InProcessTransport()
    server = ServerDriver(setup, transport, keypair=keys["server"], seed=3)
    dealer = DealerDriver(setup, transport, keypair=keys["dealer"], seed=3, state_dir=tmp_path)
    parties = [
        PartyDriver(
            Party(
                n,
                df[cols].assign(id=range(len(df))),
                setup,
                SECRET,
                keypair=keys[n],
                peers={q: keys[q].public() for q in TWO_PARTIES if q != n},
                seed=3,
            ),
            transport,
        )  # fmt: skip
        for n, cols in TWO_PARTIES.items()
    ]
    run_in_process([server, dealer, *parties])
    dealer.close()
    assert len(server.fitted().sample(20)) == 20
    secure = server.server.secure
    assert secure is not None and secure.dealer is None  # the server holds no dealer
    with pytest.raises(MessageError, match="the server deals nothing"):
        secure.group_deals()
    with closing(sqlite3.connect(tmp_path / "dealer.sqlite")) as db:  # as if killed before round 2
        db.execute("DELETE FROM messages WHERE step = 'select-deal'")
        db.execute("DELETE FROM steps WHERE name = 'select-deal'")
        db.commit()
    again = DealerDriver(setup, transport, keypair=keys["dealer"], seed=3, state_dir=tmp_path)
    try:
        again.run_step("select-deal")  # the same bytes: the transport refuses others
    finally:
        again.close()
