"""The config's ``dealer``: "server" (the default) keeps every config's bytes and hash;
"own" is written to the file, read back, refused outside method secure, needs the dealer's
identity when the config pins them, and gives the dealer the dealing steps of the schedule
and of the plan's costs."""

from __future__ import annotations

import dataclasses

import pytest

from tests.runs import correlated_table, two_party_config
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ConfigError
from vertimrf.protocol.config import ProtocolConfig
from vertimrf.protocol.options import FOOptions
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.schedule import schedule
from vertimrf.protocol.seeds import DEALER, SERVER

# The hashes of two_party_config(spec of correlated_table) made before the field existed.
BEFORE = {
    "equal": "34b6f8d8ded5c37a0e1da7acc6cabf8dceb562f64f2350f007c51ffa4d84e511",
    "partial": "d6acd65c99333b886f795d8ae00f2423c05bd5b696da2a1e8bbe77e4b5ddafe5",
}


@pytest.mark.parametrize("sets", sorted(BEFORE))
def test_the_server_as_dealer_keeps_the_config_bytes_and_hash(sets):
    _, spec = correlated_table(40)
    cfg = two_party_config(spec, record_sets=sets)
    assert cfg.dealer == "server" and cfg.dealer_role == SERVER
    assert "dealer" not in cfg.to_dict() and cfg.config_hash() == BEFORE[sets]


def test_an_own_dealer_is_written_read_back_and_gets_the_dealing_steps():
    _, spec = correlated_table(40)
    cfg = dataclasses.replace(two_party_config(spec, record_sets="partial"), dealer="own")
    assert cfg.to_dict()["dealer"] == "own" and cfg.config_hash() != BEFORE["partial"]
    assert ProtocolConfig.from_dict(cfg.to_dict()) == cfg
    run = schedule(cfg)
    assert [s.name for s in run.steps(DEALER)] == ["admit", "deal", "select-deal"]
    assert [s.name for s in run.steps(SERVER)] == ["select", "synthesize"]
    assert [s.name for s in run.steps("A")] == [
        "commit", "tokens", "features", "release", "groups", "measure"
    ]  # fmt: skip
    to_dealer = {(m.sender, m.kind) for m in run.messages() if m.receiver == DEALER}
    assert to_dealer == {("A", "commit"), ("B", "commit"), ("A", "tokens"), ("B", "tokens"),
                         (SERVER, "select")}  # fmt: skip
    from_dealer = {m.kind for m in run.messages() if m.sender == DEALER}
    assert from_dealer == {"admit", "deal", "deal-slots", "deal-regions", "select-deal"}
    assert not any(m.sender == DEALER and m.kind in ("release", "measure") for m in run.messages())
    assert not any(
        m.receiver == DEALER and m.kind in ("release", "measure") for m in run.messages()
    )


def test_an_own_dealer_is_refused_where_it_cannot_be():
    _, spec = correlated_table(40)
    cfg = two_party_config(spec)
    with pytest.raises(ConfigError, match="dealer must be one of"):
        dataclasses.replace(cfg, dealer="somebody")
    fo = dataclasses.replace(cfg, options=FOOptions(), record_sets="equal")
    with pytest.raises(ConfigError, match="'own' only for method 'secure'"):
        dataclasses.replace(fo, dealer="own")
    named = dataclasses.replace(cfg, parties=(dataclasses.replace(cfg.parties[0], name="dealer"),
                                              cfg.parties[1]), count_party="")  # fmt: skip
    with pytest.raises(ConfigError, match="not 'server' nor 'dealer'"):
        dataclasses.replace(named, dealer="own")
    keys = [KeyPair.generate(n).public() for n in ("A", "B", "server")]
    own = dataclasses.replace(cfg, dealer="own")
    with pytest.raises(ConfigError, match="not every role"):
        own.with_identities(keys)
    pinned = own.with_identities([*keys, KeyPair.generate("dealer").public()])
    assert list(pinned.public_keys()) == ["A", "B", "dealer", "server"]


def test_the_plan_gives_an_own_dealers_deal_to_the_dealer_not_the_server():
    _, spec = correlated_table(40)
    by_server = run_plan(two_party_config(spec, record_sets="partial"))
    own = run_plan(dataclasses.replace(two_party_config(spec, record_sets="partial"), dealer="own"))
    server = by_server.role(SERVER)
    assert "deal" in server.steps and server.sends > 0
    with pytest.raises(ConfigError):
        by_server.role(DEALER)
    dealer = own.role(DEALER)
    assert dealer.steps == {"deal": server.steps["deal"]} and dealer.sends == server.sends
    assert "deal" not in own.role(SERVER).steps and own.role(SERVER).sends == 0
    assert "dealer: sends" in own.describe() and "server: sends" not in own.describe()
