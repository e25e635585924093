"""One config pins a run: ``simulate(df, config=cfg, seed=s, secret=b)`` and the command-line
roles (config, party local per party, server synthesize, all with --seed s and the secret
file holding b) write byte-identical synthetic CSVs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import small_adult
from tests.runs import same_as_simulate
from vertimrf.protocol import load_config

PARTIES = {"alice": ["0", "2", "5"], "bob": ["1", "3", "4"]}
SEED = "7"


def _run(*args, cwd):
    proc = subprocess.run(
        [sys.executable, "-m", "vertimrf", *args], cwd=cwd, capture_output=True, text=True
    )
    assert proc.returncode == 0, (args, proc.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("method", ["fo", "fm"])
def test_simulate_and_the_roles_write_the_same_bytes(tmp_path, method):
    df, spec = small_adult(1200, 6)
    spec.to_json(tmp_path / "spec.json")
    for name, cols in PARTIES.items():
        # Each party's own row order and the row number as the record ID, as simulate uses.
        frame = df[cols].assign(rid=range(len(df))).sample(frac=1.0, random_state=len(name))
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    extra = ["--t", "128", "--allow-non-dp"] if method == "fm" else []
    parties = [f"--party={n}={','.join(c)}" for n, c in PARTIES.items()]
    _run("secret", "--out", "secret.hex", cwd=tmp_path)
    _run("config", "--spec", "spec.json", *parties, "--epsilon", "2", "--delta", "1e-5",
         "--method", method, "--record-sets", "equal", *extra, "--out", "config.json",
         cwd=tmp_path)  # fmt: skip
    for name in PARTIES:
        count = ["--count-from", "alice.vmrf"] if name != "alice" else []
        _run("party", "local", "--config", "config.json", "--party", name, "--data",
             f"{name}.csv", "--id-column", "rid", "--secret-file", "secret.hex", "--seed", SEED,
             "--out", f"{name}.vmrf", "--quiet", *count, cwd=tmp_path)  # fmt: skip
    _run("server", "synthesize", "alice.vmrf", "bob.vmrf", "--config", "config.json",
         "--seed", SEED, "--out", "synth.csv", "--quiet", cwd=tmp_path)  # fmt: skip

    config = load_config(tmp_path / "config.json")
    secret = bytes.fromhex((tmp_path / "secret.hex").read_text().strip())
    _, report = same_as_simulate(tmp_path / "synth.csv", df, config, seed=int(SEED), secret=secret)
    # Every party's noise came from the seed: no guarantee (the server's seed draws no noise).
    assert report.seeded_roles == tuple(PARTIES) and not report.dp_guarantee
