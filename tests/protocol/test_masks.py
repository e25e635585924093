"""The PRG streams of method="secure" are named and expanded once (vertimrf.protocol.masks):
a party and the dealer expand the same streams from the same seeds, each label names its own
stream, and neither side spells a label or calls the PRG itself."""

from __future__ import annotations

import ast
import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import vertimrf
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.party.secure import SecureParty
from vertimrf.protocol import from_preset, masks
from vertimrf.protocol.masks import RowMask, ShareMask, row_mask, share_mask
from vertimrf.server.secure import SecureServer

SEED = bytes(range(32))
LABELS = {m.value for m in (*RowMask, *ShareMask)}


def _two_rounds(n: int = 30) -> None:
    """A seeded two-party run through both rounds, the pair grown by P0's group, with coins
    (their masks and W_C are dealt streams too)."""
    rng = np.random.default_rng(5)
    sizes = {"P0": {"a": 2, "b": 3}, "P1": {"c": 3, "d": 2}}
    spec = DomainSpec.from_dict({c: u for cols in sizes.values() for c, u in cols.items()})
    parties = [(name, list(cols)) for name, cols in sizes.items()]
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.0, delta=1e-6, spec=spec, parties=parties, method="secure",
        max_rows=n, cross_noise="coins",
    )  # fmt: skip
    keys = {name: KeyPair.generate(name) for name in sizes}
    public = {name: k.public() for name, k in keys.items()}
    members = {}
    for name, cols in sizes.items():
        frame = pd.DataFrame({c: rng.integers(0, u, n) for c, u in cols.items()})
        peers = {q: k for q, k in public.items() if q != name}
        members[name] = SecureParty(
            name, frame.assign(id=np.arange(n)), cfg, SEED, keys[name], peers, seed=1
        )
    server = SecureServer(cfg, seed=1)
    deals = server.deal(public, {name: m.commitment() for name, m in members.items()})
    sent = {name: m.features(deals[name]) for name, m in members.items()}
    coins = {name: m.coins("select") for name, m in members.items()}
    inbox = {name: {q: sent[q][name] for q in members if q != name} for name in members}
    for name, m in members.items():
        m.release(inbox[name], {q: coins[q][name] for q in members if q != name})
    request = server.plan.check_request([(0, 1, 2)])  # P0's group (a, b) against P1's c
    server.data.request = request  # the server's selection, fixed by the test
    group_deals = server.group_deals(public)
    grown = {name: m.groups(group_deals[name], request) for name, m in members.items()}
    coins = {name: m.coins("measure") for name, m in members.items()}
    for name, m in members.items():
        peers = [q for q in members if q != name]
        groups, tossed = ({q: b[q][name] for q in peers} for b in (grown, coins))
        m.measure(request, inbox[name], groups, tossed)


def test_the_parties_expand_the_streams_the_dealer_dealt(monkeypatch):
    """Every mask stream a party expands (key, label), the dealer expanded too, through
    the one module (each side by way of the product backend), and both sides use every
    label."""
    streams: dict[str, set[tuple[bytes, bytes]]] = {"party": set(), "server": set()}
    real = masks.expand

    def spy(key, label, n, start=0, *, word=np.uint64):
        frame = sys._getframe(1)
        while frame.f_globals["__name__"].split(".")[1] not in ("party", "server"):
            frame = frame.f_back  # the role that called the backend that called masks
        side = frame.f_globals["__name__"].split(".")[1]
        if not label.startswith(b"pad/") and label != b"coin-bits":  # a party's own streams
            streams[side].add((key, label))
        return real(key, label, n, start, word=word)

    monkeypatch.setattr(masks, "expand", spy)
    _two_rounds()
    assert streams["party"] <= streams["server"]
    assert {label for _, label in streams["party"]} == LABELS
    assert {label for _, label in streams["server"]} == LABELS


def test_each_label_names_its_own_stream():
    """A changed label changes the masks; a mask's rows are the same words however they
    are blocked."""
    words = [row_mask(SEED, m, 0, 4, 3, np.uint64) for m in RowMask]
    words += [share_mask(SEED, m, (4, 3)) for m in ShareMask]
    assert len(LABELS) == 7
    for a, b in itertools.combinations(words, 2):
        assert not np.array_equal(a, b)
    whole = row_mask(SEED, RowMask.U2, 0, 10, 3, np.uint32)
    blocks = [row_mask(SEED, RowMask.U2, r0, r1, 3, np.uint32) for r0, r1 in ((0, 4), (4, 10))]
    np.testing.assert_array_equal(np.vstack(blocks), whole)


def test_no_role_spells_a_label_or_calls_the_prg():
    """The roles and the product backends reach the PRG only through
    vertimrf.protocol.masks."""
    root = Path(vertimrf.__file__).parent
    paths = [p for pkg in ("party", "server", "product") for p in root.glob(f"{pkg}/**/*.py")]
    assert any(p.parent.name == "product" for p in paths)
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "vertimrf.crypto.prg", path
            if isinstance(node, ast.Constant):
                assert node.value not in LABELS, (path, node.value)
