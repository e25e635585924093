"""Every role resolves the public keys it works with in one place, ``RunSetup.keys``: a
role holding its key pair under a pinning config takes the pinned keys (its own pair and any
key files checked against the pins); otherwise the given keys, checked; and a secure
``server run`` over folders with neither says so in one line (it raised a TypeError)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from tests.https_roles import pinned_files
from tests.runs import correlated_table, role_env
from vertimrf.crypto.keys import KeyPair
from vertimrf.errors import ConfigError, KeyMaterialError
from vertimrf.protocol.setup import run_setup

PARTIES = ("A", "B", "C")


@pytest.fixture
def pinned(tmp_path):
    df, spec = correlated_table(60)
    cfg = pinned_files(tmp_path, df, spec)
    pairs = {n: KeyPair.load(tmp_path / f"{n}.key") for n in (*PARTIES, "server")}
    return run_setup(cfg), pairs


def test_a_role_holding_its_pinned_key_pair_takes_the_pinned_keys(pinned):
    setup, pairs = pinned
    keys = setup.keys("A", pairs["A"])
    assert sorted(keys) == ["B", "C"] and keys["B"].raw == pairs["B"].public_bytes
    assert sorted(setup.keys("server", pairs["server"])) == list(PARTIES)
    same = {n: pairs[n].public() for n in ("B", "C")}
    assert setup.keys("A", pairs["A"], same) == keys  # the pinned files themselves: accepted


def test_another_key_pair_or_other_key_files_are_refused_under_pins(pinned):
    setup, pairs = pinned
    with pytest.raises(KeyMaterialError, match="not the one this config pins"):
        setup.keys("A", KeyPair.generate("A"))
    other = {"B": KeyPair.generate("B").public(), "C": pairs["C"].public()}
    with pytest.raises(ConfigError, match=r"given for \['B'\] are not the pinned ones"):
        setup.keys("A", pairs["A"], other)


def test_without_pins_the_given_keys_are_checked(pinned):
    setup, pairs = pinned
    bare = run_setup(dataclasses.replace(setup.config, identities=None))
    assert bare.keys("A") is None
    given = {n: pairs[n].public() for n in ("B", "C")}
    assert bare.keys("A", pairs["A"], given) == given
    with pytest.raises(ConfigError, match="'A''s own public key"):
        bare.keys("A", pairs["A"], {**given, "A": pairs["A"].public()})
    with pytest.raises(ConfigError, match=r"keys of \['server'\], not parties"):
        bare.keys("A", None, {**given, "server": pairs["server"].public()})
    # an in-process run's roles may hold keys other than the pinned ones: no key pair given
    assert setup.keys("server", None, given) == given


def test_a_secure_server_over_folders_without_keys_says_so_in_one_line(tmp_path, pinned):
    setup, _ = pinned
    dataclasses.replace(setup.config, identities=None).save(tmp_path / "bare.json")
    (tmp_path / "in").mkdir()
    (tmp_path / "out").mkdir()
    args = [
        "server", "run", "--config", "bare.json", "--inbox", "in", "--outbox", "out",
        "--server-key", "server.key", "--out", "synth.csv",
    ]  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", *args], cwd=tmp_path, env=role_env(tmp_path),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "method secure needs every party's public key" in proc.stderr
    assert not (tmp_path / "synth.csv").exists()
