"""Every argument of ``simulate`` / ``fit_vertical`` is honoured on every path: messages go
through files in ``message_dir`` (the directory transport), ``progress`` shows a bar, and
the report times each phase."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vertimrf import simulate
from vertimrf.domain import DomainSpec

PARTIES = [["c0", "c1"], ["c2", "c3"]]
NAMES = ("party0", "party1")
SERVER_PHASES = {"receive", "graphcom", "initmrf", "optmrf"}
# method -> (extra arguments, the phases the report times besides each party's own)
PATHS = {
    "secure": ({}, {"commit", "deal", "features", "release", "select", "groups", "measure", "fit"}),
    "paper": (
        {"method": "secure", "secure_pipeline": "paper"},
        {"local", "commit", "deal", "features", "release", *SERVER_PHASES},
    ),
    "fo": ({"method": "fo"}, {"local", *SERVER_PHASES}),
    "fm": ({"method": "fm", "allow_non_dp": True, "t": 64}, {"local", *SERVER_PHASES}),
}
# The files of each path, as <receiver>/<sender>.<kind> (the directory transport): deals,
# feature blobs, releases and the request (secure), the count and the party messages (every
# other path) and the paper pipeline's cross releases.
LOCAL = {"server/party0.local", "server/party1.local", "party1/party0.local-count"}
FILES = {
    "secure": {
        "server/party0.commit", "server/party1.commit", "party0/server.deal",
        "party1/server.deal", "party1/party0.features", "party0/party1.features",
        "server/party0.release", "server/party1.release", "party0/server.select",
        "party1/server.select", "server/party0.measure", "server/party1.measure",
        "party0/server.select-deal", "party1/server.select-deal", "party0/party1.groups",
        "party1/party0.groups",
    },
    "paper": {
        *LOCAL, "server/party0.commit", "server/party1.commit", "party0/server.deal",
        "party1/server.deal", "party1/party0.features",
        "party0/party1.features", "server/party0.release", "server/party1.release",
    },
    "fo": LOCAL,
    "fm": LOCAL,
}  # fmt: skip


def _data() -> tuple[pd.DataFrame, DomainSpec]:
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{j}": rng.integers(0, 3, 400) for j in range(4)})
    return df, DomainSpec.from_dict({f"c{j}": 3 for j in range(4)})


@pytest.mark.parametrize("path", sorted(PATHS))
def test_every_path_honours_message_dir_progress_and_times_each_phase(path, tmp_path, capfd):
    df, spec = _data()
    extra, phases = PATHS[path]
    synth, report = simulate(
        df, spec, PARTIES, 2.0, 1e-6, seed=1, max_rows=512, message_dir=tmp_path,
        progress=True, **extra,
    )  # fmt: skip
    assert len(synth) == report.n_hat
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert files == FILES[path]
    party = {k for k in report.seconds if k.startswith(NAMES)}
    assert set(report.seconds) - party == phases | {"sample"}
    assert all(v >= 0 for v in report.seconds.values())
    assert "vertimrf fit" in capfd.readouterr().err  # the progress bar, on stderr
    simulate(df, spec, PARTIES, 2.0, 1e-6, seed=1, max_rows=512, **extra)
    assert "vertimrf fit" not in capfd.readouterr().err
