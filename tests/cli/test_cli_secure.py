"""method="secure" as separate processes: ``vertimrf keys``, ``secret share`` / ``open``,
``config --method secure``, ``server deal``, ``party features`` / ``release`` / ``measure``,
``server select`` and ``server synthesize`` exchange only files, write the same synthetic CSV
as ``simulate``, and refuse every bad input with one line and no output file."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.runs import SEED, same_as_simulate
from tests.step_roles import (
    SERVER_KEY,
    command,
    make_deals,
    ok,
    party_args,
    relay_blobs,
    run_all,
    select_run,
)
from vertimrf.crypto.keys import KeyPair, PublicKey, pairwise_key
from vertimrf.domain import DomainSpec
from vertimrf.protocol import load_config
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.features import seal_features
from vertimrf.protocol.secure.release import SecureRelease

ROWS = 300
TWO = {"A": ["c0", "c1", "c2"], "B": ["c3", "c4"]}
THREE = {"A": ["c0", "c3"], "B": ["c1", "c4"], "C": ["c2", "c5"]}

# `server select` of the two-party run: the parties' keys and the round-2 deals' folder.
SELECT_ARGS = ["--keys", "S/A.pub", "S/B.pub", "--select-deals", "S/round2"]


def _table(columns: int, seed: int = 0) -> tuple[pd.DataFrame, DomainSpec]:
    """A small correlated table: every column is a noisy function of one latent code. Two
    columns (c0, c3) have 24 values, 6 per latent block and uniform inside it, so that the
    server measures some of their pairs on bins."""
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, 6, ROWS)
    sizes = [24 if j in (0, 3) else 2 + j % 5 for j in range(columns)]
    df = pd.DataFrame(
        {
            f"c{j}": np.where(rng.random(ROWS) < 0.7, latent % u, rng.integers(0, u, ROWS))
            if u < 24
            else (latent % 4) * 6 + rng.integers(0, 6, ROWS)
            for j, u in enumerate(sizes)
        }
    )
    return df, DomainSpec.from_dict({f"c{j}": u for j, u in enumerate(sizes)})


def _setup(
    root: Path, parties: dict[str, list[str]], *config_flags: str, deal: bool = True
) -> pd.DataFrame:
    """Folders per role (each party's, S for the server, and X for an outsider's key pair),
    the data, the keys, the config, the group secret (share / open) and, with ``deal``, the
    commitments and the deals; the server's relaying is a file copy. Returns the table."""
    names = list(parties)
    first, rest = names[0], names[1:]
    df, spec = _table(sum(len(c) for c in parties.values()))
    for name, cols in parties.items():
        (root / name).mkdir(parents=True)
        frame = df[cols].assign(rid=range(ROWS)).sample(frac=1.0, random_state=len(name))
        frame.to_csv(root / name / f"{name}.csv", index=False)
    spec.to_json(root / "spec.json")
    party_flags = [f"--party={n}={','.join(c)}" for n, c in parties.items()]
    ok([["keys", "--name", n, "--out-dir", n] for n in [*names, "X"]]
        + [["keys", "--name", "server", "--out-dir", "S"]]
        + [["config", "--spec", "spec.json", *party_flags, "--epsilon", "2", "--delta", "1e-5",
            "--method", "secure", "--record-sets", "equal", "--max-rows", "512", *config_flags,
            "--out", "config.json"]], root)  # fmt: skip
    for n in names:  # public keys go to everyone (fingerprints compared out of band)
        for other in [*names, "S"]:
            if other != n:
                (root / other).mkdir(exist_ok=True)
                shutil.copy(root / n / f"{n}.pub", root / other)
    ok([["secret", "share", "--keys", f"{first}/{first}.key",
          "--to", *[f"{first}/{q}.pub" for q in rest], "--out-dir", first]], root)  # fmt: skip
    for n in rest:
        shutil.copy(root / first / f"secret-{first}-to-{n}.sealed", root / n)
    ok([["secret", "open", f"{q}/secret-{first}-to-{q}.sealed", "--keys", f"{q}/{q}.key",
          "--from", f"{q}/{first}.pub", "--out", f"{q}/{q}.secret"] for q in rest],
        root)  # fmt: skip
    if deal:
        make_deals(root, parties)
    return df


def _secure_run(root: Path, parties: dict[str, list[str]]) -> dict:
    """A whole secure run (select pipeline, binning auto) through the commands; independent
    commands run at once. Returns the run's table and folder."""
    df = _setup(root, parties, "--binning", "auto")
    select_run(root, parties)
    return {"root": root, "df": df, "parties": parties}


def _paper_run(root: Path, parties: dict[str, list[str]]) -> dict:
    """A whole secure run of the paper pipeline through the commands: `party local` (the
    count party first, the others take its noisy count), `party features` and `party
    release` (the local message's bins from the party's state), and `server synthesize` on
    the local messages and the releases."""
    names = list(parties)
    df = _setup(root, parties, "--pipeline", "paper", deal=False)
    count = load_config(root / "config.json").count_party
    local = {n: f"{n}/{n}.local.vmrf" for n in names}
    ids = ["--id-column", "rid", "--seed", str(SEED), "--quiet", "--config", "config.json"]

    def local_step(n: str, *extra: str) -> list[str]:
        return ["party", "local", "--name", n, "--data", f"{n}/{n}.csv", "--secret",
                f"{n}/{n}.secret", "--keys", f"{n}/{n}.key", "--peers",
                *[f"{n}/{q}.pub" for q in names if q != n], "--state-dir", f"{n}/state", *ids,
                "--out", local[n], *extra]  # fmt: skip

    ok([local_step(count)], root)
    for n in names:
        shutil.copy(root / local[count], root / n / f"count-{count}.vmrf")
    ok([local_step(n, "--count-from", f"{n}/count-{count}.vmrf") for n in names if n != count],
        root)  # fmt: skip
    make_deals(root, parties)
    ok([["party", "features", *party_args(n, parties), "--out-dir", n] for n in names], root)
    relay_blobs(root, names)
    ok([["party", "release", *party_args(n, parties), "--blobs", n,
          "--out", f"{n}/{n}.cross.vmrf"] for n in names], root)  # fmt: skip
    ok([["server", "synthesize", "--config", "config.json", *local.values(), "--releases",
          *[f"{n}/{n}.cross.vmrf" for n in names], "--out", "S/synth.csv", "--report",
          "S/report.json", "--seed", str(SEED), "--quiet", *SERVER_KEY]], root)  # fmt: skip
    return {"root": root, "df": df, "parties": parties}


def _simulates_bytes_and_report(run: dict) -> None:
    """The synthetic CSV is simulate's with the same config, seed and secret, and the
    report says so: seeded roles, no guarantee, simulate's total."""
    root = run["root"]
    config = load_config(root / "config.json")
    first = next(iter(run["parties"]))
    secret = bytes.fromhex((root / first / f"{first}.secret").read_text().strip())
    _, report = same_as_simulate(root / "S" / "synth.csv", run["df"], config, seed=SEED,
                                 secret=secret)  # fmt: skip
    written = json.loads((root / "S" / "report.json").read_text())
    assert written["method"] == "secure" and written["seeded"] and not written["dp_guarantee"]
    assert written["seeded_roles"] == [*run["parties"], "server"] == list(report.seeded_roles)
    assert written["total_epsilon"] is None
    assert written["total_rho"] == pytest.approx(report.ledger.total_rho)


@pytest.fixture(scope="module")
def two(tmp_path_factory) -> dict:
    """One two-party run, shared by the tests that read its files (the error cases too)."""
    return _secure_run(tmp_path_factory.mktemp("secure2"), TWO)


@pytest.mark.slow
def test_two_party_run_writes_the_same_bytes_as_simulate(two):
    _simulates_bytes_and_report(two)
    root = two["root"]
    secret = (root / "A" / "A.secret").read_text()
    assert (root / "B" / "B.secret").read_text() == secret  # share / open round trip
    assert len(bytes.fromhex(secret.strip())) == 32
    assert stat.S_IMODE(os.stat(root / "A" / "A.key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(root / "A" / "A.secret").st_mode) == 0o600
    request = json.loads((root / "S" / "request.json").read_text())
    assert set(request) == {"config_hash", "marginals", "bins"}
    assert request["bins"]  # the 24-value columns' pairs: the request file carries bin maps
    assert request["config_hash"] == load_config(root / "config.json").config_hash()
    steps = json.loads((_state(root, "A") / "steps.json").read_text())
    assert steps["config_hash"] == request["config_hash"]
    assert set(steps["steps"]) == {"commit", "features", "release", "groups", "measure"}


@pytest.mark.slow
def test_paper_pipeline_run_writes_the_same_bytes_as_simulate(tmp_path):
    """The paper pipeline's roles (local, features, release; synthesize) as processes."""
    run = _paper_run(tmp_path, TWO)
    _simulates_bytes_and_report(run)
    config = load_config(tmp_path / "config.json")
    assert config.pipeline == "paper"
    state = _state(tmp_path, "B")
    steps = json.loads((state / "steps.json").read_text())
    assert steps["config_hash"] == config.config_hash()
    assert set(steps["steps"]) == {"local", "commit", "features", "release"}
    assert not (state / "secure.state.vmrf").exists()  # no measure step, so no shares kept
    # A second `party local` spends nothing new: it writes the recorded message again.
    base = ["--config", "config.json", "--name", "B", "--data", "B/B.csv", "--secret",
            "B/B.secret", "--keys", "B/B.key", "--peers", "B/A.pub", "--state-dir", "B/state",
            "--id-column", "rid", "--quiet"]  # fmt: skip
    count = config.count_party
    extra = [] if count == "B" else ["--count-from", f"B/count-{count}.vmrf"]
    ok([["party", "local", *base, *extra, "--out", "B/again.vmrf"]], tmp_path)
    assert (tmp_path / "B" / "again.vmrf").read_bytes() == (
        tmp_path / "B/B.local.vmrf"
    ).read_bytes()
    for cmd, pattern in (
        (["party", "measure", *party_args("B", TWO), "--request", "x.json", "--out", "B/m"],
         "not a step of method secure/paper"),
        (["server", "select", "--config", "config.json", *SELECT_ARGS, "--releases",
          "B/B.cross.vmrf",
          "--out", "S/r.json", "--state", "S/s", *SERVER_KEY], "not a step of method secure/paper"),
    ):  # fmt: skip
        proc = subprocess.run(command(*cmd), cwd=tmp_path, capture_output=True, text=True)
        _one_line_error(proc, pattern)
    assert not any((tmp_path / p).exists() for p in ("B/m", "S/r.json", "S/s"))


@pytest.mark.slow
def test_three_party_run_writes_the_same_bytes_as_simulate(tmp_path):
    run = _secure_run(tmp_path, THREE)
    _simulates_bytes_and_report(run)
    secrets = {(tmp_path / n / f"{n}.secret").read_text() for n in THREE}
    assert len(secrets) == 1  # share / open gave every party the one group secret


def _state(root: Path, name: str) -> Path:
    """``name``'s private state folder of the run (``NAME/state/<config hash>``)."""
    (folder,) = (p for p in (root / name / "state").iterdir() if p.is_dir())  # not the marker
    return folder


def _copy_state(root: Path, name: str, folder: str, keep: set[str]) -> str:
    """A copy of ``name``'s state in ``folder`` recording only the steps in ``keep``."""
    source = _state(root, name)
    target = root / folder / source.name
    shutil.copytree(source, target)
    record = json.loads((target / "steps.json").read_text())
    record["steps"] = {k: v for k, v in record["steps"].items() if k in keep}
    (target / "steps.json").write_text(json.dumps(record))
    return folder


def _one_line_error(proc: subprocess.CompletedProcess, pattern: str) -> None:
    """Exit 2 and one line on stderr naming the problem: no traceback."""
    assert proc.returncode == 2, (proc.args, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vertimrf: error:"), proc.stderr
    assert "Traceback" not in proc.stderr and pattern in lines[0], lines[0]


@pytest.mark.slow
def test_every_bad_input_is_a_one_line_error_and_writes_nothing(two):
    root = two["root"]
    bad = root / "bad"
    (bad / "empty").mkdir(parents=True)
    (bad / "renamed").mkdir()
    (bad / "replayed").mkdir()
    # A's own blob for B, renamed as if it came from B.
    shutil.copy(root / "A" / "A-to-B.features", bad / "renamed" / "B-to-A.features")
    # B's blob for A of another run with the same keys (another config: another nonce).
    config = load_config(root / "config.json")
    plan = secure_plan(config)
    other = config.with_changes(run_nonce="ab" * 16).run_context()
    key = pairwise_key(
        KeyPair.load(root / "B" / "B.key"), PublicKey.load(root / "B" / "A.pub"), other
    )
    digest = (root / "A" / "B-to-A.features").read_bytes()[:32]
    words = np.zeros((plan.rows, plan.widths[1]), plan.word)
    replayed = seal_features(key, words, other, "B", "A", digest, word_bytes=plan.word_bytes)
    (bad / "replayed" / "B-to-A.features").write_bytes(replayed)
    # Copies of A's state after features only, and after release (for measure).
    features_only = _copy_state(root, "A", "bad/fstate", {"commit", "features"})
    released = _copy_state(root, "A", "bad/rstate", {"commit", "features", "release", "groups"})
    (ledger_path,) = (root / features_only).glob("*/steps.json")
    ledger = ledger_path.read_bytes()
    # A record set without one row: A's features from it (B's blob is from the full set).
    pd.read_csv(root / "A" / "A.csv").iloc[1:].to_csv(bad / "short.csv", index=False)
    short = ["--data", "bad/short.csv"]
    # A request and a release of another run (another config hash).
    request = json.loads((root / "S" / "request.json").read_text())
    (bad / "request.json").write_text(json.dumps({**request, "config_hash": "0" * 64}))
    release = SecureRelease.load(root / "B" / "B.select.vmrf", plan)
    SecureRelease(**{**release.__dict__, "config_hash": "1" * 64}).save(bad / "B.other.vmrf")
    ok([["secret", "--out", "bad/other.secret"]], root)

    def release_a(out: str, *override: str) -> list[str]:
        """A's release into ``out`` after features only; a repeated option in ``override``
        replaces the usual."""
        return ["party", "release", *party_args("A", TWO), "--blobs", "A", "--out", out,
                "--state-dir", features_only, *override]  # fmt: skip

    measure_a = ["party", "measure", *party_args("A", TWO), "--state-dir", released,
                 "--request", "bad/request.json", "--blobs", "A", "--select-deal",
                 "A/A.select-deal", "--out", "bad/m.vmrf"]  # fmt: skip
    corrected = "a corrected table needs a new config"  # the deal was made for other data
    cases = [
        (["party", "features", *party_args("A", TWO), *short, "--out-dir", "bad/short",
          "--state-dir", "bad/short-state"], "bad/short", corrected),
        (["party", "features", *party_args("A", TWO), "--secret", "bad/other.secret",
          "--out-dir", "bad/secret", "--state-dir", "bad/secret-state"], "bad/secret", corrected),
        (release_a("bad/data.vmrf", *short), "bad/data.vmrf", corrected),
        (release_a("bad/deal.vmrf", "--deal", "B/B.deal"), "bad/deal.vmrf",
         "differs from the one this party used earlier in this run"),
        (release_a("bad/first.vmrf", "--state-dir", "bad/none"), "bad/first.vmrf",
         "records no 'features' step of party 'A' in this run"),
        (release_a("bad/missing.vmrf", "--blobs", "bad/empty"), "bad/missing.vmrf",
         "no such file (the features from B to A)"),
        (release_a("bad/renamed.vmrf", "--blobs", "bad/renamed"), "bad/renamed.vmrf",
         "is more than any features of this run"),  # the schedule's limit: B's planned size
        (release_a("bad/replayed.vmrf", "--blobs", "bad/replayed"), "bad/replayed.vmrf",
         "not from this peer for this run"),
        (["party", "features", *party_args("A", TWO), "--deal", "B/B.deal",
          "--state-dir", "bad/fresh", "--out-dir", "bad/features"], "bad/features",
         "not sealed to A's key"),
        (measure_a, "bad/m.vmrf", "belongs to another run"),
        (["server", "select", "--config", "config.json", *SELECT_ARGS, "--releases",
          "A/A.select.vmrf",
          "bad/B.other.vmrf", "--out", "bad/request2.json", "--state", "bad/state",
          *SERVER_KEY],
         "bad/request2.json", "replayed or foreign"),
        (["server", "synthesize", "--config", "config.json", "--state", "S/server.state",
          "--releases", "A/A.measure.vmrf", "B/B.select.vmrf", "--out", "bad/s.csv",
          *SERVER_KEY],
         "bad/s.csv", "replayed or foreign"),
        (["config", "--spec", "spec.json", "--party", "A=c0,c1,c2", "--party", "B=c3,c4",
          "--epsilon", "1", "--delta", "1e-5", "--method", "secure", "--out", "bad/c.json"],
         "bad/c.json", "--max-rows"),
        (["secret", "open", "B/secret-A-to-B.sealed", "--keys", "B/B.key", "--from", "X/X.pub",
          "--out", "bad/sender.secret"], "bad/sender.secret",
         "not a group secret sealed by 'X' for 'B'"),
        (["secret", "open", "B/secret-A-to-B.sealed", "--keys", "X/X.key", "--from", "A/A.pub",
          "--out", "bad/receiver.secret"], "bad/receiver.secret",
         "not a group secret sealed by 'A' for 'X'"),
        (["keys", "--name", "A", "--out-dir", "A"], None, "refusing to overwrite"),
    ]  # fmt: skip
    key = (root / "A" / "A.key").read_bytes()
    done = run_all([c[0] for c in cases], root)
    for proc, (_, output, pattern) in zip(done, cases, strict=True):
        _one_line_error(proc, pattern)
        assert output is None or not (root / output).exists(), output
    assert (root / "A" / "A.key").read_bytes() == key
    assert not list(root.rglob("*.part")), "a failed command left a temporary file"
    assert ledger_path.read_bytes() == ledger  # no failed step was recorded
    assert not list((bad / "none").glob("*/steps.json"))


@pytest.mark.parametrize(
    "cmd",
    [
        ["keys"],
        ["secret", "share"],
        ["secret", "open"],
        ["party", "features"],
        ["party", "measure"],
        ["server", "deal"],
        ["server", "select"],
    ],
)
def test_every_secure_command_has_help(cmd):
    proc = subprocess.run(command(*cmd, "--help"), capture_output=True, text=True)
    assert proc.returncode == 0 and "usage: vertimrf" in proc.stdout


@pytest.mark.slow
def test_measure_reads_the_private_state_and_refuses_a_foreign_one(two):
    """`party release` keeps the shares in the party's state folder (mode 0700); `party
    measure` refuses missing, swapped or altered shares with one line."""
    root = two["root"]
    shares = _state(root, "A") / "secure.state.vmrf"
    assert stat.S_IMODE(os.stat(shares.parent).st_mode) == 0o700
    cases = {"missing": None, "swapped": _state(root, "B") / shares.name, "altered": shares}
    for folder, source in cases.items():
        copy = root / _copy_state(root, "A", f"{folder}-state", {"features", "release", "groups"})
        kept = next(p for p in copy.iterdir() if p.is_dir()) / shares.name
        kept.unlink()
        if source is not None:
            raw = bytearray(source.read_bytes())
            if folder == "altered":
                raw[-40] ^= 1
            kept.write_bytes(bytes(raw))
    done = run_all(
        [["party", "measure", *party_args("A", TWO), "--request", "A/request.json",
          "--blobs", "A", "--select-deal", "A/A.select-deal",
          "--state-dir", f"{folder}-state", "--out", f"{folder}.m.vmrf"] for folder in cases],
        root,
    )  # fmt: skip
    patterns = ["no shares of this party's release", "not the shares", "not the shares"]
    for proc, folder, pattern in zip(done, cases, patterns, strict=True):
        _one_line_error(proc, pattern)
        assert not (root / f"{folder}.m.vmrf").exists()


@pytest.mark.slow
def test_a_second_release_writes_the_recorded_bytes_and_spends_nothing(two):
    """A second `party release` in the same run is not computed again: the driver resends
    what its state recorded, so the file is byte-identical and the state holds one release."""
    root = two["root"]
    before = (_state(root, "A") / "steps.json").read_bytes()
    ok([["party", "release", *party_args("A", TWO), "--blobs", "A",
          "--out", "A/A.again.vmrf"]], root)  # fmt: skip
    again = (root / "A" / "A.again.vmrf").read_bytes()
    assert again == (root / "A" / "A.select.vmrf").read_bytes()
    assert (_state(root, "A") / "steps.json").read_bytes() == before
    steps = json.loads(before)["steps"]
    assert list(steps).count("release") == 1 and set(steps["release"]) == {"server.release"}


@pytest.mark.slow
def test_the_same_release_twice_names_its_party(two):
    """`server select` given A's first release twice says so, before any selection."""
    root = two["root"]
    cmd = ["server", "select", "--config", "config.json", *SELECT_ARGS, "--releases",
           "A/A.select.vmrf",
           "A/A.select.vmrf", "--out", "S/twice.json", "--state", "S/twice.state",
           *SERVER_KEY]  # fmt: skip
    proc = subprocess.run(command(*cmd), cwd=root, capture_output=True, text=True, timeout=300)
    _one_line_error(proc, "two releases from party A")
    assert not (root / "S" / "twice.json").exists() and not (root / "S" / "twice.state").exists()


@pytest.mark.slow  # in process: test_rerunning_features_and_release_writes_identical_bytes
def test_features_and_release_rerun_in_a_fresh_folder_write_identical_bytes(two):
    """Party A runs `party features` and `party release` unseeded, twice, each time in a
    fresh folder with a fresh state (a double-spend route): the noise is
    keyed to A's own key and inputs, so both runs write the same blobs and the same release,
    and a second release spends nothing new. Another data file with the same deal is
    refused with the run's one line (the deal was made for A's commitment)."""
    root = two["root"]
    inputs = ["A/A.csv", "A/A.key", "A/A.secret", "A/A.deal", "A/B.pub", "A/B-to-A.features"]
    runs = {}
    for run in ("fresh1", "fresh2", "other"):
        (root / run).mkdir()
        for name in inputs:
            shutil.copy(root / name, root / run)
        if run == "other":  # one cell changed: other data
            frame = pd.read_csv(root / run / "A.csv")
            frame.loc[0, "c0"] = (frame.loc[0, "c0"] + 1) % 24
            frame.to_csv(root / run / "A.csv", index=False)
        args = [
            "--config", "config.json", "--name", "A", "--data", f"{run}/A.csv",
            "--id-column", "rid", "--secret", f"{run}/A.secret", "--keys", f"{run}/A.key",
            "--peers", f"{run}/B.pub", "--deal", f"{run}/A.deal", "--state-dir",
            f"{run}/state", "--quiet",
        ]  # fmt: skip
        if run == "other":
            (proc,) = run_all([["party", "features", *args, "--out-dir", run]], root)
            _one_line_error(proc, "this run has released; a corrected table needs a new config")
            assert not (root / run / "A-to-B.features").exists()
            continue
        ok([["party", "features", *args, "--out-dir", run]], root)
        ok([["party", "release", *args, "--blobs", run, "--out", f"{run}/A.select.vmrf"]], root)
        runs[run] = {f: (root / run / f).read_bytes() for f in ("A-to-B.features", "A.select.vmrf")}
    assert runs["fresh1"] == runs["fresh2"]
    assert (root / "fresh2" / "A.select.vmrf").read_bytes() != (
        root / "A" / "A.select.vmrf"
    ).read_bytes()  # the seeded run of the fixture draws other noise
