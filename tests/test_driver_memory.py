"""A party running all its steps in one process holds no more than a step command did: a
large message is received as a mapped file (the HTTPS transport spools it to disk first),
a step re-maps it on each access instead of holding every input, and the party does not
keep its input table once it is encoded."""

from __future__ import annotations

import gc
import hashlib
import ssl
import weakref

import numpy as np
import pytest

from tests.test_driver import PARTIES, SECRET, SEED, _config, _table
from vertimrf.driver import DirectoryTransport, Message
from vertimrf.driver.role import Inputs
from vertimrf.driver.transport import MAP_BYTES
from vertimrf.errors import ServiceError
from vertimrf.party.roles import Party
from vertimrf.protocol.channels import KeyPair
from vertimrf.service.client import HttpTransport

BLOB = Message("B", "A", "blob")
DEAL = Message("server", "A", "deal")


class _Counting:
    """A transport that counts its receives."""

    def __init__(self, inner: DirectoryTransport) -> None:
        self.inner, self.calls = inner, 0

    def receive(self, message: Message):  # noqa: ANN201
        self.calls += 1
        return self.inner.receive(message)


def test_a_large_message_is_mapped_and_a_step_maps_it_again_on_each_access(tmp_path):
    big = np.random.default_rng(0).bytes(MAP_BYTES)
    directory = DirectoryTransport(tmp_path / "A", tmp_path)
    directory.send(BLOB, big)
    directory.send(DEAL, b"sealed deal")
    got = directory.receive(BLOB)
    assert isinstance(got, memoryview) and got.readonly and got == big
    assert directory.receive(DEAL) == b"sealed deal"
    transport = _Counting(directory)
    inputs = Inputs(transport, (BLOB, DEAL))  # each received once: both have arrived
    assert transport.calls == 2 and list(inputs) == [BLOB, DEAL]
    assert inputs[DEAL] == b"sealed deal" and transport.calls == 2  # small: held
    assert inputs[BLOB] == big and inputs[BLOB] == big
    assert transport.calls == 4  # large: mapped again on each access, never held


class _Response:
    """What HttpTransport reads of a download: headers and the body in chunks."""

    def __init__(self, body: bytes, digest: str) -> None:
        self.headers = {"Content-Length": str(len(body)), "X-Content-SHA256": digest}
        self._body = body

    def iter_content(self, size: int):  # noqa: ANN201
        for at in range(0, len(self._body), size):
            yield self._body[at : at + size]


def test_a_large_download_is_spooled_checked_and_mapped_again_without_the_network(tmp_path):
    body = np.random.default_rng(1).bytes(MAP_BYTES + 5)
    nowhere = "https://127.0.0.1:9"  # nothing listens: a receive that asks the server fails
    spool = tmp_path / "received"
    transport = HttpTransport(
        nowhere, "ab" * 32, ssl.create_default_context(), timeout=0.2, spool=spool
    )
    with pytest.raises(ServiceError, match="arrived cut or altered"):
        transport._read(BLOB, _Response(body, hashlib.sha256(b"other").hexdigest()))
    assert list(spool.iterdir()) == []  # nothing kept of an altered download
    got = transport._read(BLOB, _Response(body, hashlib.sha256(body).hexdigest()))
    assert isinstance(got, memoryview) and got == body
    assert (spool / "B.A.blob").read_bytes() == body
    assert transport.receive(BLOB) == body  # from the spool: no request made
    with pytest.raises(ServiceError, match="cannot reach the server"):
        transport.receive(DEAL)
    small = transport._read(DEAL, _Response(b"deal", hashlib.sha256(b"deal").hexdigest()))
    assert small == b"deal" and isinstance(small, bytes)


def test_a_secure_party_does_not_keep_its_input_table():
    df, spec = _table(50)
    cfg = _config(spec)
    keys = {n: KeyPair.generate(n) for n in PARTIES}
    frame = df.assign(id=np.arange(len(df)))[["id", *PARTIES["A"]]]
    alive = weakref.ref(frame)
    party = Party(
        "A", frame, cfg, SECRET, keypair=keys["A"], peers={"B": keys["B"].public()}, seed=SEED
    )
    del frame
    gc.collect()
    assert alive() is None and party.secure is not None
