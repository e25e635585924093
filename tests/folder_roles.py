"""Runs over folders: each role's files (config, group secret, key pairs, public keys, each
party's rows shuffled and linked by ``rid``) and its ``party run`` / ``server run``
arguments, the roles exchanging messages through one mail folder."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from tests.helpers import SECRET
from tests.runs import SEED, TWO_PARTIES
from vertimrf.crypto.keys import KeyPair
from vertimrf.protocol.config import ProtocolConfig

THREE = {"A": ["c0", "c1"], "B": ["c2", "c3"], "C": ["c4"]}
# The server of a three-party run (keys in keys/, the synthetic CSV in synth.csv).
SERVER = ["server", "run", "--config", "config.json", "--keys-dir", "keys", "--server-key",
          "server.key", "--inbox", "mail/server", "--outbox", "mail", "--timeout", "300",
          "--out", "synth.csv", "--seed", str(SEED), "--quiet"]  # fmt: skip


def role_files(
    tmp_path: Path,
    df: pd.DataFrame,
    cfg: ProtocolConfig,
    parties: Mapping[str, list[str]] = TWO_PARTIES,
    extra: Sequence[str] = (),
) -> tuple[list, list]:
    """The files of a two-party run (``parties``, A and B; ``TWO_PARTIES`` by default) in
    ``tmp_path``, public keys beside the key pairs; the server's and each party's arguments
    to ``vertimrf server run`` / ``party run`` (with ``extra``), sharing the mail folder."""
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    KeyPair.generate("server").save(tmp_path / "server.key")
    for n, cols in parties.items():
        KeyPair.generate(n).save(tmp_path / f"{n}.key")
        KeyPair.load(tmp_path / f"{n}.key").public().save(tmp_path / f"{n}.pub")
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n))
        frame.to_csv(tmp_path / f"{n}.csv", index=False)
    common = ["--config", "config.json", "--outbox", "mail", "--timeout", "300",
              "--seed", str(SEED), *extra]  # fmt: skip
    server = ["server", "run", *common, "--inbox", "mail/server", "--keys", "A.pub", "B.pub",
              "--server-key", "server.key", "--out", "synth.csv"]  # fmt: skip
    runs = [
        ["party", "run", *common, "--inbox", f"mail/{n}", "--name", n, "--data", f"{n}.csv",
         "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
         "--peers", *[f"{q}.pub" for q in parties if q != n], "--state-dir", f"state-{n}"]
        for n in parties
    ]  # fmt: skip
    return server, runs


def three_party_files(tmp_path: Path, df: pd.DataFrame, cfg: ProtocolConfig) -> None:
    """The files of a three-party run (``THREE``) in ``tmp_path``, public keys in keys/."""
    cfg.save(tmp_path / "config.json")
    (tmp_path / "secret.hex").write_text(SECRET.hex())
    KeyPair.generate("server").save(tmp_path / "server.key")
    (tmp_path / "keys").mkdir()
    for n, cols in THREE.items():
        KeyPair.generate(n).save(tmp_path / f"{n}.key")
        KeyPair.load(tmp_path / f"{n}.key").public().save(tmp_path / "keys" / f"{n}.pub")
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(n))
        frame.to_csv(tmp_path / f"{n}.csv", index=False)


def three_party_args(n: str, data: str | None = None) -> list[str]:
    """Party ``n``'s ``party run`` arguments in a three-party run (``data``: its rows)."""
    peers = [f"keys/{q}.pub" for q in THREE if q != n]
    return ["party", "run", "--config", "config.json", "--name", n, "--data", data or f"{n}.csv",
            "--id-column", "rid", "--secret", "secret.hex", "--keys", f"{n}.key",
            "--peers", *peers, "--inbox", f"mail/{n}", "--outbox", "mail", "--timeout", "300",
            "--seed", str(SEED), "--quiet"]  # fmt: skip
