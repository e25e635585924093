"""A corrected record is never disclosed: two runs under one config, party A
flips one value of one record, fresh state folders everywhere, the same role keys.

What the old code published: B's data had not changed, so B's noise and pads repeated, and
the difference of B's two releases was the record's cells (+-1) with no noise; the deal
repeated too, so B subtracted A's two masked blobs and found the one changed row.

Here every keyed stream is bound to every input of its step, and the deal to every party's
data commitment, so:
- every release of either party differs between the runs by fresh noise of the charged
  sigma: few cells equal (fewer than 5% beyond the chance 1 / (2 sigma sqrt(pi)) that two
  independent draws agree), and the within-party tables' differences, each divided by its
  sigma * sqrt(2) (the difference of two independent N_Z(0, sigma^2) draws) and pooled over
  both parties and phases, have a sum of squares inside the two-sided 1e-6 quantiles of
  chi-square with one degree of freedom per cell; the padded cross shares differ by
  uniform words;
- A's two blobs, opened by B, differ in (nearly) every row, not in one.

The roles' keys are fixed (derived from names), so over the directory transport the noise,
and so this test, is deterministic; over HTTPS the config holds fresh TLS identities, so the
noise changes with every run and the bounds are from theory, with a false alarm below 1e-6.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from scipy.stats import chi2

from tests.runs import started
from vertimrf import load_dataset
from vertimrf.crypto.identity import make_tls_identity
from vertimrf.crypto.keys import KeyPair, pairwise_key
from vertimrf.domain import SmallTableWarning
from vertimrf.driver import codec, local_run
from vertimrf.errors import PrivacyBudgetError, RunChangedError
from vertimrf.protocol import ProtocolConfig, from_preset
from vertimrf.protocol.methods import secure_plan
from vertimrf.protocol.secure.features import open_features
from vertimrf.protocol.secure.plan import MEASURE, SELECT, SecurePlan
from vertimrf.protocol.secure.release import SecureRelease

ROWS = 2000
SECRET = bytes(range(32))


def fixed_key(name: str, *, tls: bool = False) -> KeyPair:
    """A key pair derived from the name (tests only: deterministic noise); ``tls`` adds a
    fresh TLS identity for the service (it does not touch the noise)."""
    raw = hashlib.sha256(b"vertimrf-test-key/" + name.encode()).digest()
    identity = make_tls_identity(name) if tls else (None, None)
    return KeyPair(name, X25519PrivateKey.from_private_bytes(raw), *identity)


def correction_scenario() -> tuple[ProtocolConfig, dict, dict]:
    """NLTCS's first 2,000 records over two parties; the config, the data of the first run
    and the data with one value of one record flipped at A (each with an ``id`` column)."""
    df, spec = load_dataset("nltcs")
    df = df.iloc[:ROWS].reset_index(drop=True)
    names = list(spec.names)
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=1.0, delta=1e-6, spec=spec, max_rows=4096, run_nonce="5e" * 16,
        parties=[("A", names[:8]), ("B", names[8:])],
    )  # fmt: skip
    frame = df.assign(id=np.arange(ROWS))
    before = {p.name: frame[["id", *p.columns]] for p in cfg.parties}
    after = dict(before)
    corrected = before["A"].copy()
    column = cfg.party("A").columns[0]
    corrected.loc[7, column] = 1 - corrected.loc[7, column]
    after["A"] = corrected
    return cfg, before, after


def run_in_folder(cfg: ProtocolConfig, data: dict, folder: Path) -> Path:
    """A whole run over the directory transport with fresh state folders; its mail."""
    keys = {p.name: fixed_key(p.name) for p in cfg.parties}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallTableWarning)
        run = local_run(
            data, cfg, SECRET, message_dir=folder / "mail", state_dir=folder / "state",
            keys=keys, server_key=fixed_key("server"),
        )  # fmt: skip
        run.run()
    return folder / "mail"


def _sigma(cfg: ProtocolConfig, plan: SecurePlan, mail: Path, name: str, kind: str) -> float:
    """The sigma the plan charges for ``name``'s ``kind`` release in the run of ``mail``."""
    if kind == "release":
        return plan.sigma(SELECT, plan.all_pairs())
    data = (mail / name / "server.select").read_bytes()
    request = codec.read_request(data, plan, cfg.config_hash())
    return plan.sigma(MEASURE, request.marginals, request.bins)


def assert_fresh_noise(cfg: ProtocolConfig, first: Path, second: Path) -> None:
    """Every release of either party differs between the runs by noise of the charged
    sigma, never by a +-1 pattern. Two independent N_Z(0, sigma^2) draws are equal with
    probability about 1 / (2 sigma sqrt(pi)) (the difference is close to N(0, 2 sigma^2));
    the bound adds 5% for the corrected cells and the sampling, and 4 cells for small
    samples. The scaled differences z = diff / (sigma sqrt 2), pooled, are close to N(0, 1),
    so sum z^2 is chi-square with n degrees of freedom: noise of half or twice the charged
    variance falls outside the 1e-6 quantiles at n >= 200 (A's and B's 112 cells each)."""
    plan = secure_plan(cfg)
    scaled = []
    for name in plan.names:
        for kind in ("release", "measure"):
            one = SecureRelease.load(first / "server" / f"{name}.{kind}", plan)
            two = SecureRelease.load(second / "server" / f"{name}.{kind}", plan)
            sigmas = {_sigma(cfg, plan, mail, name, kind) for mail in (first, second)}
            common = sorted(set(one.within) & set(two.within))
            if common:
                diff = np.concatenate([one.within[m] - two.within[m] for m in common])
                # Equal cells are about Binomial(n, p), p = 1 / (2 sigma sqrt(pi)) < 0.01:
                # with few cells (a re-measurement may share 16) one or two equal draws are
                # likely, so the bound adds 4 (P(Binomial(16, 0.01) > 4) < 1e-6); reused
                # noise makes nearly every cell equal.
                p_equal = 1.0 / (2.0 * min(sigmas) * np.sqrt(np.pi))
                equal = int(np.sum(diff == 0))
                assert equal <= diff.size * (0.05 + p_equal) + 4, (name, kind, equal, diff.size)
                if len(sigmas) == 1:  # one charged sigma for both runs
                    scaled.append(diff / (sigmas.pop() * np.sqrt(2.0)))
            for key in set(one.cross) & set(two.cross):
                a, b = one.cross[key], two.cross[key]
                n = min(a.size, b.size)
                small = plan.signed((a[:n] - b[:n]) & plan.ring_mask)
                assert float(np.mean(np.abs(small) <= 1)) < 0.05, (name, kind, key)
    z = np.concatenate(scaled)
    low, high = chi2.ppf([0.5e-6, 1 - 0.5e-6], z.size)
    assert z.size >= 200 and low <= float(np.sum(z**2)) <= high, (z.size, float(np.sum(z**2)))


def assert_no_single_changed_row(cfg: ProtocolConfig, first: Path, second: Path) -> None:
    """B opens A's blob of each run with their pairwise key: the masks changed with A's
    data, so the two differ in (nearly) every row, not in the corrected one alone."""
    plan = secure_plan(cfg)
    ctx = cfg.run_context()
    key = pairwise_key(fixed_key("B"), fixed_key("A").public(), ctx)
    shape = (plan.rows, plan.widths[0])
    opened = [
        open_features(
            key, (mail / "B" / "A.features").read_bytes(), ctx, "A", "B", shape,
            word=plan.word, word_bytes=plan.word_bytes,
        )[0]
        for mail in (first, second)
    ]  # fmt: skip
    changed = np.any(opened[0] != opened[1], axis=1)
    assert changed.mean() > 0.99, int(changed.sum())


@pytest.mark.slow
def test_a_corrected_record_gets_fresh_noise_pads_and_masks(tmp_path):
    cfg, before, after = correction_scenario()
    first = run_in_folder(cfg, before, tmp_path / "one")
    second = run_in_folder(cfg, after, tmp_path / "two")
    assert_fresh_noise(cfg, first, second)
    assert_no_single_changed_row(cfg, first, second)
    # Unchanged inputs, fresh folders: the same bytes (nothing new spent).
    again = run_in_folder(cfg, before, tmp_path / "again")
    for path in sorted(p for p in first.rglob("*") if p.is_file()):
        assert (again / path.relative_to(first)).read_bytes() == path.read_bytes(), path


def test_a_changed_table_in_one_state_folder_is_refused_with_the_run_line(tmp_path):
    """Within one run (the same state folder), a party whose data changed is refused before
    anything is sent, with the one line."""
    cfg, before, after = correction_scenario()
    run_in_folder(cfg, before, tmp_path)
    keys = {p.name: fixed_key(p.name) for p in cfg.parties}
    with pytest.raises(RunChangedError) as caught:
        local_run(after, cfg, SECRET, state_dir=tmp_path / "state", keys=keys)
    line = str(caught.value)
    want = "this run has released; a corrected table needs a new config (a new run), which "
    assert want + "spends a new budget" in line and "\n" not in line


def test_simulate_twice_under_one_config_is_refused_unseeded():
    """The Python API: a second unseeded fit of one run in one process would draw fresh
    noise under one config; it is refused, and a new run goes through."""
    from vertimrf import simulate

    df, spec = load_dataset("nltcs")
    names = list(spec.names)[:8]  # a small run: the refusal is what counts here
    df, spec = df[names].iloc[:300], spec.subset(names)
    cfg = from_preset(
        "default", record_sets="equal", epsilon=1.0, delta=1e-6, spec=spec, max_rows=512,
        parties=[("A", names[:4]), ("B", names[4:])],
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallTableWarning)
        simulate(df, config=cfg)
        with pytest.raises(PrivacyBudgetError, match=r"config.new_run\(\)"):
            simulate(df, config=cfg)
        synth, _ = simulate(df, config=cfg.new_run())
        seeded = [simulate(df, config=cfg.new_run().with_changes(run_nonce="ab" * 16), seed=2)]
        seeded.append(simulate(df, config=cfg.with_changes(run_nonce="ab" * 16), seed=2))
    assert len(synth) > 0
    assert seeded[0][0].equals(seeded[1][0])  # seeded: reproduced, not refused


# ------------------------------------------------------------------ over HTTPS


def _start(folder: Path, *args: str) -> subprocess.Popen:
    return started([sys.executable, "-m", "vertimrf", *args], folder, dict(os.environ))


def _serve(folder: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """The server on an ephemeral port of 127.0.0.1, on the state folder ``server-state``."""
    (folder / "port").unlink(missing_ok=True)
    server = _start(
        folder, "server", "run", "--config", "config.json", "--listen", "127.0.0.1:0",
        "--state-dir", "server-state", "--server-key", "server.key", "--port-file", "port",
        "--quiet", *extra,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (folder / "port").exists():
        assert server.poll() is None, server.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the server never listened"
        time.sleep(0.05)
    return server, f"https://127.0.0.1:{(folder / 'port').read_text().strip()}"


def _party(folder: Path, url: str, name: str, data: str, state: str) -> subprocess.Popen:
    return _start(
        folder, "party", "run", "--server", url, "--config", "config.json", "--data", data,
        "--keys", f"{name}.key", "--secret", "secret.hex", "--state-dir", state,
        "--timeout", "300", "--quiet",
    )  # fmt: skip


def _https_run(folder: Path, cfg: ProtocolConfig, data: dict, keys: dict) -> Path:
    """The whole run as real processes on 127.0.0.1 over the HTTPS service, unseeded, with
    fresh state folders (the server's too); the server's message store."""
    folder.mkdir()
    for name, key in keys.items():
        key.save(folder / f"{name}.key")
    cfg.save(folder / "config.json")
    (folder / "secret.hex").write_text(SECRET.hex())
    for name, frame in data.items():
        frame.to_csv(folder / f"{name}.csv", index=False)
    server, url = _serve(folder, "--out", "synth.csv", "--exit-when-done")
    procs = [server]
    try:
        procs += [_party(folder, url, n, f"{n}.csv", f"state-{n}") for n in data]
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
    finally:
        for proc in procs:
            proc.kill()
    return folder / "server-state" / "messages"


def _refused_on_the_old_server(folder: Path, frame) -> None:
    """The server of a released run, served again on its state; party A with a corrected
    table and a fresh state folder: refused with the run's one line, exit 2."""
    frame.to_csv(folder / "A-corrected.csv", index=False)
    server, url = _serve(folder, "--out", "again.csv")
    try:
        party = _party(folder, url, "A", "A-corrected.csv", "state-A-fresh")
        _, err = party.communicate(timeout=300)
    finally:
        server.terminate()
        server.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert party.returncode == 2 and len(lines) == 1, err
    assert "this run has released; a corrected table needs a new config" in lines[0]


@pytest.mark.slow
@pytest.mark.service
def test_a_corrected_record_over_https_with_fresh_server_state(tmp_path):
    """The same scenario over the HTTPS service: every role a process on loopback, fresh
    state folders for every role, the server's included. Within the run (the released
    server's state), the corrected table is refused with one line."""
    cfg, before, after = correction_scenario()
    names = [p.name for p in cfg.parties]
    keys = {n: fixed_key(n, tls=True) for n in [*names, "server"]}
    cfg = cfg.with_identities([k.public() for k in keys.values()])
    first = _https_run(tmp_path / "one", cfg, before, keys)
    _refused_on_the_old_server(tmp_path / "one", after["A"])
    second = _https_run(tmp_path / "two", cfg, after, keys)
    assert_fresh_noise(cfg, first, second)
    assert_no_single_changed_row(cfg, first, second)
