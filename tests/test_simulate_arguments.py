"""Every argument of ``simulate`` / ``fit_vertical`` is honoured on every path: messages go
through files in ``message_dir``, ``progress`` shows a bar, and the report times each
phase."""

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
    "secure": ({}, {"deal", "features", "release", "select", "measure", "fit"}),
    "paper": (
        {"method": "secure", "secure_pipeline": "paper"},
        {"release", "deal", "features", "cross release", *SERVER_PHASES},
    ),
    "fo": ({"method": "fo"}, {"release", *SERVER_PHASES}),
    "fm": ({"method": "fm", "allow_non_dp": True, "t": 64}, {"release", *SERVER_PHASES}),
}
# The files of each path: deals, feature blobs, releases and the request (secure), the
# party messages (every other path) and the paper pipeline's cross releases.
FILES = {
    "secure": {
        "party0.deal", "party1.deal", "party0-to-party1.blob", "party1-to-party0.blob",
        "party0.select.vmrf", "party1.select.vmrf", "request.json",
        "party0.measure.vmrf", "party1.measure.vmrf",
    },
    "paper": {
        "party0.vmrf", "party1.vmrf", "party0.deal", "party1.deal",
        "party0-to-party1.blob", "party1-to-party0.blob", "party0.cross.vmrf",
        "party1.cross.vmrf",
    },
    "fo": {"party0.vmrf", "party1.vmrf"},
    "fm": {"party0.vmrf", "party1.vmrf"},
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
    assert {p.name for p in tmp_path.iterdir()} == FILES[path]
    party = {k for k in report.seconds if k.startswith(NAMES)}
    assert set(report.seconds) - party == phases | {"sample"}
    assert all(v >= 0 for v in report.seconds.values())
    assert "vertimrf fit" in capfd.readouterr().err  # the progress bar, on stderr
    simulate(df, spec, PARTIES, 2.0, 1e-6, seed=1, max_rows=512, **extra)
    assert "vertimrf fit" not in capfd.readouterr().err
