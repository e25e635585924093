"""The network service: three parties and a server, each its own process on loopback,
over mutual TLS with the identities the config pins. A networked run writes the synthetic
CSV simulate and the directory transport write, byte for byte; the service survives a
party killed mid-upload and a server killed mid-run; it reports a party that never joins;
it refuses strangers, impostors, replays, another run's messages, oversized and garbage
uploads."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.test_driver import SECRET, SEED
from vertimrf import simulate
from vertimrf.domain import DomainSpec
from vertimrf.protocol.channels import KeyPair
from vertimrf.protocol.config import ProtocolConfig

PARTIES = {"A": ["c0", "c1"], "B": ["c2", "c3"], "C": ["c4"]}


def _table(rows: int = 300) -> tuple[pd.DataFrame, DomainSpec]:
    """A small correlated table: every column a noisy function of one latent code."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 6, rows)
    sizes = [6, 2, 3, 4, 5]
    df = pd.DataFrame(
        {
            f"c{j}": np.where(rng.random(rows) < 0.7, latent % u, rng.integers(0, u, rows))
            for j, u in enumerate(sizes)
        }
    )
    return df, DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(sizes)})


def _pinned(tmp_path: Path, df: pd.DataFrame, spec: DomainSpec, **fields) -> ProtocolConfig:
    """Key files of every role, the config pinning them, the secret and each party's rows
    (shuffled, linked by ``rid``) in ``tmp_path``."""
    base = ProtocolConfig.from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(PARTIES.items()),
        max_rows=512, run_nonce="ef" * 16, **fields,
    )  # fmt: skip
    publics = []
    for name in [*PARTIES, "server"]:
        KeyPair.generate(name).save(tmp_path / f"{name}.key")
        publics.append(KeyPair.load(tmp_path / f"{name}.key").public())
    cfg = base.with_identities(publics)
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    for n, cols in PARTIES.items():
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n) + 7)
        frame.to_csv(tmp_path / f"{n}.csv", index=False)
    return cfg


def _service(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "vertimrf.service", *args], cwd=tmp_path,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def _server(tmp_path: Path, *extra: str, timeout: float = 300) -> tuple[subprocess.Popen, str]:
    """The server process on an ephemeral port, and its URL once it listens."""
    port_file = tmp_path / "port"
    port_file.unlink(missing_ok=True)
    proc = _service(
        tmp_path, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
        "--state-dir", "server-state", "--keys", "server.key", "--party-timeout", str(timeout),
        "--port-file", "port", "--seed", str(SEED), *extra,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not port_file.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.05)
    return proc, f"https://127.0.0.1:{port_file.read_text().strip()}"


def _party(tmp_path: Path, name: str, url: str, env: dict | None = None) -> subprocess.Popen:
    return _service(
        tmp_path, "party", "run", "--server", url, "--config", "config.json",
        "--data", f"{name}.csv", "--keys", f"{name}.key", "--secret", "secret.hex",
        "--state-dir", f"state-{name}", "--id-column", "rid", "--timeout", "300",
        "--seed", str(SEED), env=env,
    )  # fmt: skip


def _finish(procs: list[subprocess.Popen], code: int = 0) -> None:
    try:
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == code, err[-3000:]
    finally:
        for proc in procs:
            proc.kill()


def _directory_run(tmp_path: Path, cfg: ProtocolConfig) -> bytes:
    """The same run over the directory transport (``python -m vertimrf.driver``)."""
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED)]  # fmt: skip
    args = [
        ["server", *common, "--inbox", "mail/server", "--server-key", "server.key",
         "--out", "dir-synth.csv"],
        *[["party", *common, "--inbox", f"mail/{n}", "--name", n, "--data", f"{n}.csv",
           "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
           "--state", f"dir-state-{n}"] for n in PARTIES],
    ]  # fmt: skip
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "vertimrf.driver", *a], cwd=tmp_path,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        for a in args
    ]
    _finish(procs)
    return (tmp_path / "dir-synth.csv").read_bytes()


def test_three_parties_and_a_server_over_https_write_simulates_bytes(tmp_path):
    """Each role its own process; the parties connect out to the service over mutual TLS:
    the synthetic CSV is simulate's and the directory transport's, byte for byte."""
    df, spec = _table()
    cfg = _pinned(tmp_path, df, spec)
    server, url = _server(tmp_path, "--out", "synth.csv", "--exit-when-done")
    _finish([server, *(_party(tmp_path, n, url) for n in PARTIES)])
    want, _ = simulate(df, config=cfg, seed=SEED, secret=SECRET)
    got = (tmp_path / "synth.csv").read_bytes()
    assert got == want.to_csv(index=False).encode()
    assert (tmp_path / "server-state" / "synthetic.csv").read_bytes() == got
    assert _directory_run(tmp_path, cfg) == got
