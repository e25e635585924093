"""Partial record sets across re-runs and between peers: what an outside audit found.

1. Two runs of one config from fresh state folders, after a change a user can make between
   them (one value flipped at A; one record removed at B; a new key pair for A and nothing
   else): the server opens both runs' token lists and finds no token in both. (When the
   tokens were keyed by the group secret and the run alone, the tokens in both runs were
   exactly the real records, so the server counted every region exactly.)
2. Within one run, peer B rebuilds A's tokens message for A's true record set with every
   secret B holds (the group secret, its own key) and every public value (the run, the
   admit digest, the server's key): neither the bytes nor the digest match the message A
   sent, while the server, opening it, finds A's records' tokens there as B computes them.

The runs are small (NLTCS's first 600 records and 6 columns over two parties, ε 1) and
their role keys fixed, so the test is deterministic.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.simulation.test_corrected_record import SECRET, fixed_key
from vertimrf import load_dataset
from vertimrf.crypto.keys import KeyPair, PublicKey
from vertimrf.domain import SmallTableWarning
from vertimrf.driver import local_run
from vertimrf.party.records.ids import record_fingerprints
from vertimrf.party.records.tokens import TokenKeys, dummy_tokens, order_tokens, release_tokens
from vertimrf.protocol import ProtocolConfig, from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.commit import read_admit
from vertimrf.protocol.secure.tokens import TokenSeal, read_tokens, tokens_head, write_tokens
from vertimrf.protocol.seeds import SERVER

ROWS = 600


def _scenario() -> tuple[ProtocolConfig, dict[str, pd.DataFrame]]:
    """A holds records 0..449, B records 150..599 (300 shared), each with an ``id``."""
    df, spec = load_dataset("nltcs")
    names = list(spec.names)[:6]
    df = df.iloc[:ROWS][names].reset_index(drop=True).assign(id=np.arange(ROWS))
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=spec.subset(names), max_rows=2048,
        run_nonce="7a" * 16, parties=[("A", names[:3]), ("B", names[3:])],
        record_sets="partial",
    )  # fmt: skip
    data = {
        "A": df.iloc[:450][["id", *names[:3]]].reset_index(drop=True),
        "B": df.iloc[150:][["id", *names[3:]]].reset_index(drop=True),
    }
    return cfg, data


def _run(cfg: ProtocolConfig, data: dict, folder: Path, keys: dict | None = None) -> Path:
    """One run over folders with fresh state; its mail folder."""
    keys = keys or {name: fixed_key(name) for name in data}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallTableWarning)
        local_run(
            data, cfg, SECRET, message_dir=folder / "mail", state_dir=folder / "state",
            keys=keys, server_key=fixed_key("server"),
        ).run()  # fmt: skip
    return folder / "mail"


def _server_tokens(cfg: ProtocolConfig, mail: Path) -> set[int]:
    """Every token the server opens in the run of ``mail``, of every party."""
    most = secure_plan(cfg).max_tokens
    out: set[int] = set()
    for name in ("A", "B"):
        data = (mail / SERVER / f"{name}.tokens").read_bytes()
        tokens = read_tokens(data, cfg.config_hash(), name, most, fixed_key(SERVER))
        out.update(tokens.tolist())
    return out


def _flipped(data: dict) -> dict:
    a = data["A"].copy()
    a.iloc[7, 1] = 1 - a.iloc[7, 1]
    return {**data, "A": a}


def _one_fewer(data: dict) -> dict:
    return {**data, "B": data["B"].drop(index=10).reset_index(drop=True)}


@pytest.mark.parametrize("change", ["a value at A", "a record at B", "A's key pair"])
def test_two_runs_share_no_token_at_the_server(tmp_path, change):
    cfg, data = _scenario()
    first = _server_tokens(cfg, _run(cfg, data, tmp_path / "one"))
    keys = None
    if change == "a value at A":
        data = _flipped(data)
    elif change == "a record at B":
        data = _one_fewer(data)
    else:
        keys = {"A": KeyPair("A", fixed_key("A-new").private_key), "B": fixed_key("B")}
    second = _server_tokens(cfg, _run(cfg, data, tmp_path / "two", keys))
    assert len(first) > 900 and len(second) > 900
    assert not first & second


def test_a_peer_cannot_rebuild_another_partys_tokens_message(tmp_path):
    cfg, data = _scenario()
    mail = _run(cfg, data, tmp_path)
    sent = (mail / SERVER / "A.tokens").read_bytes()
    admit = read_admit((mail / "A" / "server.admit").read_bytes(), cfg.config_hash())
    plan = secure_plan(cfg)
    assert plan.regions is not None
    # B's best rebuild of A's list: A's true records' tokens and the dummies of every
    # region whose secret B holds (its own key stands in for A's own secret).
    b_key = fixed_key("B")
    guess_keys = TokenKeys(SECRET, b_key.local_secret(), cfg.run_context())
    fingerprints = record_fingerprints(data["A"]["id"].to_numpy())
    real = release_tokens(order_tokens(fingerprints, guess_keys), guess_keys, admit.digest)
    listed = np.sort(
        np.concatenate((real, dummy_tokens(guess_keys, admit.digest, plan.regions, 0)))
    )
    head = tokens_head(cfg.config_hash(), "A")
    opened = read_tokens(sent, cfg.config_hash(), "A", plan.max_tokens, fixed_key(SERVER))
    assert set(real.tolist()) <= set(opened.tolist())  # the records are what B computes
    seen_digests = {hashlib.sha256(sent).hexdigest()}
    server = PublicKey(SERVER, admit.server)
    for secret in (b_key.local_secret(), SECRET):
        material = [hashlib.sha256(secret + w).digest() for w in (b"k", b"n", b"r")]
        sealing = TokenSeal(server, material[0], material[1][:12], material[2])
        out = io.BytesIO()
        write_tokens(out, head, listed.size, plan.max_tokens, [listed], sealing)
        guess = out.getvalue()
        assert len(guess) == len(sent)  # the length is public
        assert guess != sent and hashlib.sha256(guess).hexdigest() not in seen_digests
        same = np.frombuffer(guess[len(head) :], np.uint8) == np.frombuffer(
            sent[len(head) :], np.uint8
        )
        assert same.mean() < 0.02  # nothing past the public head agrees beyond chance
