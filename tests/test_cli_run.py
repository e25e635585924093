"""``vertimrf party run`` and ``vertimrf server run``: each role one command, its own process,
over inbox and outbox folders; the run writes simulate's synthetic CSV byte for byte, and a
party re-run from its state resends what it sent (no second draw)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.test_driver import SECRET, SEED, _table
from vertimrf import simulate
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol import from_preset
from vertimrf.protocol.config import ProtocolConfig

THREE = {"A": ["c0", "c1"], "B": ["c2", "c3"], "C": ["c4"]}


def _vertimrf(tmp_path: Path, *args: str) -> subprocess.Popen:
    """``vertimrf ARGS`` as its own process in ``tmp_path`` (the per-user state folder
    under ``tmp_path/xdg``)."""
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    return subprocess.Popen(
        [sys.executable, "-m", "vertimrf", *args], cwd=tmp_path, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def _finish(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """Each process's exit code, stdout and stderr (bounded wait; none is left running)."""
    try:
        outs = [p.communicate(timeout=600) for p in procs]
        return [(p.returncode, out, err) for p, (out, err) in zip(procs, outs, strict=True)]
    finally:
        for p in procs:
            p.kill()


def _files(tmp_path: Path, df: pd.DataFrame, cfg: ProtocolConfig) -> None:
    """The config, the group secret, the key pairs, the public keys (in keys/) and each
    party's rows (shuffled, linked by ``rid``)."""
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    KeyPair.generate("server").save(tmp_path / "server.key")
    (tmp_path / "keys").mkdir()
    for n, cols in THREE.items():
        KeyPair.generate(n).save(tmp_path / f"{n}.key")
        KeyPair.load(tmp_path / f"{n}.key").public().save(tmp_path / "keys" / f"{n}.pub")
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n))
        frame.to_csv(tmp_path / f"{n}.csv", index=False)


def _party(n: str, data: str | None = None) -> list[str]:
    peers = [f"keys/{q}.pub" for q in THREE if q != n]
    return ["party", "run", "--config", "config.json", "--name", n, "--data", data or f"{n}.csv",
            "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
            "--peers", *peers, "--inbox", f"mail/{n}", "--outbox", "mail", "--timeout", "300",
            "--seed", str(SEED), "--quiet"]  # fmt: skip


SERVER = ["server", "run", "--config", "config.json", "--keys-dir", "keys", "--server-key",
          "server.key", "--inbox", "mail/server", "--outbox", "mail", "--timeout", "300",
          "--out", "synth.csv", "--seed", str(SEED), "--quiet"]  # fmt: skip


@pytest.fixture(scope="module")
def three_party_run(tmp_path_factory) -> dict:
    """A 3-party secure run (select pipeline), each role `party run` / `server run` in its
    own process over the shared mail folder."""
    tmp_path = tmp_path_factory.mktemp("run")
    df, spec = _table()
    cfg = from_preset(
        "default", epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()),
        max_rows=512, run_nonce="ef" * 16, secure_binning="auto",
    )  # fmt: skip
    _files(tmp_path, df, cfg)
    done = _finish(
        [_vertimrf(tmp_path, *SERVER)] + [_vertimrf(tmp_path, *_party(n)) for n in THREE]
    )
    for code, _, err in done:
        assert code == 0, err[-2000:]
    return {"root": tmp_path, "df": df, "config": cfg, "out": [out for _, out, _ in done]}


def test_three_parties_and_a_server_write_simulates_bytes(three_party_run):
    root = three_party_run["root"]
    want, _ = simulate(three_party_run["df"], config=three_party_run["config"], seed=SEED,
                       secret=SECRET)  # fmt: skip
    assert (root / "synth.csv").read_bytes() == want.to_csv(index=False).encode()
    # Each party's state is in the per-user folder, by party and run; it says what it sent.
    assert {p.name for p in (root / "xdg" / "vertimrf").iterdir()} == {"server", *THREE}
    assert "A: ran commit, features, release, groups, measure; sent" in three_party_run["out"][1]


def test_a_party_rerun_resends_its_bytes_and_another_data_file_is_refused(three_party_run):
    """A second `party run` of A in the same run sends the very bytes of the first (from its
    state, so no second draw: its seed-free noise would be the same too, but nothing is
    drawn); A with other data in the same run is refused before it sends anything."""
    root = three_party_run["root"]
    sent = {p: p.read_bytes() for p in (root / "mail").glob("*/A.*")}
    assert {p.name for p in sent} == {
        "A.commit",
        "A.features",
        "A.groups",
        "A.release",
        "A.measure",
    }
    [(code, _, err)] = _finish([_vertimrf(root, *_party("A"))])
    assert code == 0, err
    assert {p: p.read_bytes() for p in (root / "mail").glob("*/A.*")} == sent
    other = pd.read_csv(root / "A.csv")
    other["c0"] = (other["c0"] + 1) % 6
    other.to_csv(root / "A-other.csv", index=False)
    [(code, _, err)] = _finish([_vertimrf(root, *_party("A", "A-other.csv"))])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "this run has released; a corrected table needs a new config (a new run)" in err
    assert {p: p.read_bytes() for p in (root / "mail").glob("*/A.*")} == sent


def test_server_run_never_overwrites_its_output(three_party_run):
    root = three_party_run["root"]
    before = (root / "synth.csv").read_bytes()
    [(code, _, err)] = _finish([_vertimrf(root, *SERVER)])
    assert code == 2 and "synth.csv" in err and "--force" in err, err
    assert (root / "synth.csv").read_bytes() == before


def test_server_run_writes_parquet_by_the_suffix(three_party_run):
    """A finished run's server, run again with --out x.parquet, resumes from its state and
    writes simulate's rows as Parquet (the same values and column types)."""
    root = three_party_run["root"]
    server = SERVER.copy()
    server[server.index("synth.csv")] = "synth.parquet"
    [(code, _, err)] = _finish([_vertimrf(root, *server)])
    assert code == 0, err[-2000:]
    want, _ = simulate(three_party_run["df"], config=three_party_run["config"], seed=SEED,
                       secret=SECRET)  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_parquet(root / "synth.parquet"), want)
