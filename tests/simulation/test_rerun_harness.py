"""Two runs of one config share nothing a viewer receives: for every input a user can change
between runs (each party's data, each role's key pair, the group secret), run 1 and run 2
from fresh state and message folders, and every viewer (the server, each party) finds no
high-entropy 8-byte window of run 2 in run 1 beyond public metadata and, at the server, the
commitment of a party whose data and key did not change; the server finds no token of
run 1 among the tokens of run 2 (real or dummy). With identical inputs, every byte a viewer
receives is identical. The comparison is defined once in :mod:`tests.rerun_harness`."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile

import numpy as np
import pytest

from tests.rerun_harness import (
    HTTPS,
    IN_PROCESS,
    NOTHING,
    Scenario,
    markdown,
    message_windows,
    rerun_matrix,
    shared_windows,
)


def _assert_nothing_shared(findings) -> None:
    failing = [f for f in findings if not f.ok]
    assert findings and not failing, "\n" + markdown(failing)


def _zip(**members: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


def test_a_repeated_secret_counts_and_public_low_entropy_and_allowed_bytes_do_not():
    """The comparison itself: 8 random bytes repeated anywhere in a viewer's messages count
    (raw, as hex text, inside a zip container); a public value, small integers, text,
    structure bytes, an allowed value and a member's SHA-256 in its container do not."""
    rng = np.random.default_rng(0)
    secret, public, allowed = (rng.bytes(32) for _ in range(3))
    counts = np.arange(40, dtype="<i8").tobytes()
    member = json.dumps({"n": 3}).encode()
    fresh = [rng.bytes(64) for _ in range(2)]
    one, two = (
        {
            "x.commit": json.dumps({"commitment": allowed.hex(), "run": public.hex()}).encode(),
            "x.release": _zip(m=member, sums=hashlib.sha256(member).hexdigest().encode()),
            "x.counts": counts,
            "x.blob": public + bytes(16) + b"\xff" * 8 + b"format/1" + noise,
        }
        for noise in fresh
    )
    assert shared_windows(one, two, [public], [allowed]) == {}
    for where, data in (("raw", secret), ("hex", secret.hex().encode())):
        leaked = {**two, "x.blob": two["x.blob"] + data}
        found = shared_windows({**one, "y": secret}, leaked, [public], [allowed])
        assert found == {"x.blob": 25}, where  # every window of the 32 bytes
    zipped = {**two, "x.release": _zip(inner=secret)}
    found = shared_windows({**one, "y": secret}, zipped, [public], [allowed])
    assert found == {"x.release": 25}
    assert shared_windows(one, two, [public]) == {"x.commit": 25}  # not allowed: counted
    assert message_windows(public, [public]).size == 0


def test_a_changed_value_with_partial_record_sets_gives_the_server_fresh_tokens(tmp_path):
    """The cheap guard of the matrix below: partial record sets, two parties, party A
    changes one value; the server's view of run 2 (its tokens included) shares nothing with
    run 1's, and a re-run with the same inputs is byte-identical."""
    scenario = Scenario("partial", 2)
    changes = (NOTHING, "A: one value changed")
    _assert_nothing_shared(rerun_matrix(scenario, tmp_path, only=changes))


@pytest.mark.slow
@pytest.mark.parametrize(
    "scenario", IN_PROCESS,
    ids=lambda s: f"{s.record_sets}-{s.parties}-{s.cross_noise}-{s.product}",
)  # fmt: skip
def test_a_rerun_with_any_one_input_changed_shares_nothing_a_viewer_receives(tmp_path, scenario):
    """In process over folder mail, every input changed in turn (and none), for equal and
    partial record sets, two and three parties, with coins (partial, two parties) and with
    product "paillier", split and with coins (equal, two parties)."""
    _assert_nothing_shared(rerun_matrix(scenario, tmp_path))


@pytest.mark.slow
@pytest.mark.service
@pytest.mark.parametrize(
    ("scenario", "changes"), HTTPS, ids=[f"{s.record_sets}-{s.parties}" for s, _ in HTTPS]
)
def test_a_rerun_over_https_shares_nothing_a_viewer_receives(tmp_path, scenario, changes):
    """Over the HTTPS service (every role a process on 127.0.0.1, fresh state folders, the
    server's too): partial record sets over two parties (nothing changed, one value at A,
    the server's key pair) and equal record sets over three (nothing, one value at B)."""
    _assert_nothing_shared(rerun_matrix(scenario, tmp_path, "https", changes))
