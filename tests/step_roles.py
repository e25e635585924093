"""The secure method's step commands as processes: each role's folder (a party's ``N/``,
the server's ``S/``), the options every party command shares, the deal, and the select
pipeline's steps after it, the server's relaying a file copy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.runs import SEED, started
from vertimrf.crypto.keys import KeyPair

SERVER_KEY = ("--server-key", "S/server.key")


def command(*args: str) -> list[str]:
    """``python -m vertimrf ARGS``: each role its own process, as on separate machines."""
    return [sys.executable, "-m", "vertimrf", *args]


def run_all(steps: list[list[str]], cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run independent commands at once (each its own process); their completed processes."""
    procs = [started(command(*s), cwd, dict(os.environ)) for s in steps]
    out = []
    for step, proc in zip(steps, procs, strict=True):
        stdout, stderr = proc.communicate(timeout=600)
        out.append(subprocess.CompletedProcess(step, proc.returncode, stdout, stderr))
    return out


def ok(steps: list[list[str]], cwd: Path) -> list[subprocess.CompletedProcess]:
    """Run independent commands at once and require every one to succeed."""
    done = run_all(steps, cwd)
    for proc in done:
        assert proc.returncode == 0, (proc.args, proc.stderr[-2000:])
    return done


def party_args(name: str, parties: dict[str, list[str]]) -> list[str]:
    """The options every secure party command shares, with this party's files."""
    peers = [f"{name}/{q}.pub" for q in parties if q != name]
    return [
        "--config", "config.json", "--name", name, "--data", f"{name}/{name}.csv",
        "--id-column", "rid", "--secret", f"{name}/{name}.secret",
        "--keys", f"{name}/{name}.key", "--peers", *peers, "--deal", f"{name}/{name}.deal",
        "--state-dir", f"{name}/state", "--seed", str(SEED), "--quiet",
    ]  # fmt: skip


def commit_args(name: str, parties: dict[str, list[str]]) -> list[str]:
    """The party options of `party commit` (no deal yet)."""
    args = party_args(name, parties)
    at = args.index("--deal")
    return args[:at] + args[at + 2 :]


def make_deals(root: Path, parties: dict[str, list[str]]) -> None:
    """Every party commits to its data; the server deals on the commitments; each party
    takes its deal (the server's relaying is a file copy)."""
    names = list(parties)
    ok([["party", "commit", *commit_args(n, parties), "--out", f"S/{n}.commit"]
         for n in names], root)  # fmt: skip
    ok([["server", "deal", "--config", "config.json", "--keys", *[f"S/{n}.pub" for n in names],
          "--commits", *[f"S/{n}.commit" for n in names], "--out-dir", "S", *SERVER_KEY]],
        root)  # fmt: skip
    for n in names:
        shutil.copy(root / "S" / f"{n}.deal", root / n)


def make_partial_deals(root: Path, parties: dict[str, list[str]]) -> None:
    """Partial record sets: every party commits, the server admits the commitments, every
    party sends its tokens and the server deals on both (each relay a file copy)."""
    names = list(parties)
    ok([["party", "commit", *commit_args(n, parties), "--out", f"S/{n}.commit"]
        for n in names], root)  # fmt: skip
    commits = [f"S/{n}.commit" for n in names]
    keys = [f"S/{n}.pub" for n in names]
    ok([["server", "admit", "--config", "config.json", "--keys", *keys, "--commits", *commits,
         "--out-dir", "S", *SERVER_KEY]], root)  # fmt: skip
    ok([["party", "tokens", *commit_args(n, parties), "--admit", f"S/{n}.admit", "--out",
         f"S/{n}.tokens"] for n in names], root)  # fmt: skip
    ok([["server", "deal", "--config", "config.json", "--keys", *[f"S/{n}.pub" for n in names],
         "--commits", *commits, "--tokens", *[f"S/{n}.tokens" for n in names], "--out-dir", "S",
         "--state", "S/server.state", "--seed", str(SEED), *SERVER_KEY]], root)  # fmt: skip
    for n in names:  # the deal and its slot map (found beside it: A.deal-slots)
        shutil.copy(root / "S" / f"{n}.deal", root / n)
        shutil.copy(root / "S" / f"{n}.deal-slots", root / n)


def relay_blobs(root: Path, names: list[str], step: str = "features") -> None:
    """The server relays each party's blobs of ``step`` to their peers (a file copy): its
    ``NAME-to-PEER.<step>`` and, with coins, ``NAME-to-PEER.<step>-coins``."""
    for n in names:
        for q in names:
            if q != n:
                for path in (root / n).glob(f"{n}-to-{q}.{step}*"):
                    shutil.copy(path, root / q)


def select_run(root: Path, parties: dict[str, list[str]]) -> None:
    """The select pipeline's steps after the deal, each a step command (independent ones at
    once; product "paillier": its reply steps too); the server's relaying is a file copy.
    The synthetic CSV is ``S/synth.csv``, the report ``S/report.json``."""
    names = list(parties)
    paillier = json.loads((root / "config.json").read_text()).get("product") == "paillier"
    ok([["party", "features", *party_args(n, parties), "--out-dir", n] for n in names], root)
    relay_blobs(root, names)
    if paillier:  # each aggregator's replies
        ok([["party", "reply", *party_args(n, parties), "--blobs", n, "--out-dir", n]
            for n in names], root)  # fmt: skip
        relay_blobs(root, names, "reply")
    ok([["party", "release", *party_args(n, parties), "--blobs", n,
          "--out", f"{n}/{n}.select.vmrf"] for n in names], root)  # fmt: skip
    selects = [f"{n}/{n}.select.vmrf" for n in names]
    keys = ["--keys", *(f"S/{n}.pub" for n in names)]
    ok([["server", "select", "--config", "config.json", *keys, "--releases", *selects, "--out",
          "S/request.json", "--select-deals", "S", "--state", "S/server.state", "--seed", str(SEED),
          *SERVER_KEY]], root)  # fmt: skip
    for n in names:
        shutil.copy(root / "S" / "request.json", root / n)
        shutil.copy(root / "S" / f"{n}.select-deal", root / n)
    ok([["party", "groups", *party_args(n, parties), "--out-dir", n, "--request",
          f"{n}/request.json", "--select-deal", f"{n}/{n}.select-deal"] for n in names],
        root)  # fmt: skip
    relay_blobs(root, names, "groups")
    if paillier:
        ok([["party", "group-reply", *party_args(n, parties), "--blobs", n, "--out-dir", n,
              "--request", f"{n}/request.json", "--select-deal", f"{n}/{n}.select-deal"]
             for n in names], root)  # fmt: skip
        relay_blobs(root, names, "group-reply")
    ok([["party", "measure", *party_args(n, parties), "--blobs", n,
          "--request", f"{n}/request.json", "--select-deal", f"{n}/{n}.select-deal",
          "--out", f"{n}/{n}.measure.vmrf"] for n in names], root)  # fmt: skip
    measures = [f"{n}/{n}.measure.vmrf" for n in names]
    ok([["server", "synthesize", "--config", "config.json", "--state", "S/server.state",
          "--releases", *measures, "--out", "S/synth.csv", "--report", "S/report.json",
          "--seed", str(SEED), "--quiet", *SERVER_KEY]], root)  # fmt: skip


def step_files_run(
    root: Path,
    parties: dict[str, list[str]],
    deals: Callable[[Path, dict[str, list[str]]], None] = make_deals,
) -> bytes:
    """Each step a command of its role, in its folder (a party's ``N/``, the server's
    ``S/``), from the role files in ``root`` (every party's ``N.csv`` and ``N.key``, the
    ``server.key`` and ``secret.hex``); the public keys as files, the relaying a file copy,
    ``deals`` the steps up to the deal. The synthetic CSV's bytes."""
    for folder in ["S", *parties]:
        (root / folder).mkdir()
    shutil.copy(root / "server.key", root / "S")
    for n in parties:
        shutil.copy(root / f"{n}.csv", root / n)
        shutil.copy(root / f"{n}.key", root / n)
        shutil.copy(root / "secret.hex", root / n / f"{n}.secret")
        public = KeyPair.load(root / f"{n}.key").public()
        for folder in ["S", *(q for q in parties if q != n)]:
            public.save(root / folder / f"{n}.pub")
    deals(root, parties)
    select_run(root, parties)
    return (root / "S" / "synth.csv").read_bytes()
