"""One run, every transport: the same config, table, keys and seed, run in process, over
folders (``party run`` / ``server run`` exchanging files), through the step commands'
files and over HTTPS, writes simulate's synthetic CSV byte for byte, with split noise and
with coins, and with product "paillier"."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd
import pytest

from tests.folder_roles import THREE
from tests.helpers import SECRET
from tests.https_roles import finish_ok, pinned_files, start_party, start_server
from tests.runs import SEED, correlated_table, finish, same_as_simulate, vertimrf_process
from tests.step_roles import step_files_run
from vertimrf.crypto.keys import KeyPair
from vertimrf.driver import local_run
from vertimrf.protocol.config import ProtocolConfig


def _in_process(root: Path, cfg: ProtocolConfig) -> bytes:
    """Every role's driver in this process, over one in-process transport."""
    data = {n: pd.read_csv(root / f"{n}.csv") for n in THREE}
    keys = {n: KeyPair.load(root / f"{n}.key") for n in THREE}
    run = local_run(
        data, cfg, SECRET, seed=SEED, id_column="rid", keys=keys,
        server_key=KeyPair.load(root / "server.key"),
    )  # fmt: skip
    return run.fitted(run.run()).sample().to_csv(index=False).encode()


def folders_run(
    root: Path, cfg: ProtocolConfig, extra: Mapping[str, list[str]] | None = None
) -> bytes:
    """Each role its own process; every role's outbox the mail folder, its inbox the
    subfolder of its name (``extra``: more arguments of a party's ``party run``, by name;
    a repeated option's last value counts)."""
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED), "--quiet"]  # fmt: skip
    extra = extra or {}
    procs = [
        vertimrf_process(root, "server", "run", *common, "--inbox", "mail/server",
                         "--server-key", "server.key", "--out", "synth.csv"),
        *[vertimrf_process(root, "party", "run", *common, "--inbox", f"mail/{n}", "--name", n,
                           "--data", f"{n}.csv", "--id-column", "rid", "--secret", "secret.hex",
                           "--keys", f"{n}.key", "--state-dir", f"state-{n}", *extra.get(n, []))
          for n in THREE],
    ]  # fmt: skip
    for code, _, err in finish(procs):
        assert code == 0, err[-2000:]
    assert {p.name for p in (root / "mail").iterdir()} == {"server", *THREE}
    return (root / "synth.csv").read_bytes()


def _step_files(root: Path, cfg: ProtocolConfig) -> bytes:
    """Each step a command of its role (``cfg`` pins no keys: the commands take every
    public key as a file)."""
    return step_files_run(root, THREE)


def _https(root: Path, cfg: ProtocolConfig) -> bytes:
    """Each role its own process; the parties connect out to the service over mutual TLS."""
    server, url = start_server(root, "--out", "synth.csv", "--exit-when-done")
    finish_ok([server, *(start_party(root, n, url) for n in THREE)])
    got = (root / "synth.csv").read_bytes()
    assert (root / "server-state" / "synthetic.csv").read_bytes() == got
    return got


TRANSPORTS: dict[str, Callable[[Path, ProtocolConfig], bytes]] = {
    "in process": _in_process,
    "folders": folders_run,
    "step files": _step_files,
    "https": _https,
}


@pytest.mark.parametrize(
    ("transport", "noise"),
    [
        ("in process", "split"),
        ("in process", "coins"),
        pytest.param("folders", "split", marks=pytest.mark.slow),  # fast: test_cli_run.py
        # coins through folders, through files with each step a new process (the coins'
        # resume), and HTTPS; split's step files: test_partial_transports.py
        pytest.param("folders", "coins", marks=pytest.mark.slow),
        pytest.param("step files", "coins", marks=pytest.mark.slow),
        pytest.param("https", "split", marks=pytest.mark.service),
        pytest.param("https", "coins", marks=pytest.mark.service),
        # product "paillier": its reply steps over every transport (coins: the coin replies)
        ("in process", "paillier"),
        pytest.param("folders", "paillier", marks=pytest.mark.slow),
        pytest.param("step files", "paillier", marks=pytest.mark.slow),
        pytest.param("https", "paillier", marks=pytest.mark.service),
        ("in process", "paillier-coins"),
        pytest.param("step files", "paillier-coins", marks=pytest.mark.slow),
        pytest.param("https", "paillier-coins", marks=pytest.mark.service),
    ],
)
def test_every_transport_writes_simulates_bytes(tmp_path, transport, noise):
    df, spec = correlated_table()
    fields = {"cross_noise": noise}
    if noise.startswith("paillier"):
        fields = {"cross_noise": "coins" if noise.endswith("coins") else "split",
                  "product": "paillier"}  # fmt: skip
    cfg = pinned_files(tmp_path, df, spec, secure_binning="auto", **fields)
    if transport == "step files":  # the step commands take the public keys as files
        cfg = dataclasses.replace(cfg, identities=None)
        cfg.save(tmp_path / "config.json")
    same_as_simulate(TRANSPORTS[transport](tmp_path, cfg), df, cfg, seed=SEED, secret=SECRET)
