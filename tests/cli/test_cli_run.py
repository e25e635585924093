"""``vertimrf party run`` and ``vertimrf server run``: each role one command, its own process,
over inbox and outbox folders; the run writes simulate's synthetic CSV byte for byte, and a
party re-run from its state resends what it sent (no second draw)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.folder_roles import SERVER, THREE, three_party_args, three_party_files
from tests.helpers import SECRET
from tests.runs import SEED, correlated_table, finish, same_as_simulate, vertimrf_process
from vertimrf import simulate
from vertimrf.protocol import from_preset


@pytest.fixture(scope="module")
def three_party_run(tmp_path_factory) -> dict:
    """A 3-party secure run (select pipeline), each role `party run` / `server run` in its
    own process over the shared mail folder."""
    tmp_path = tmp_path_factory.mktemp("run")
    df, spec = correlated_table()
    cfg = from_preset(
        "default", record_sets="equal",
        epsilon=2.0, delta=1e-5, spec=spec, parties=list(THREE.items()),
        max_rows=512, run_nonce="ef" * 16, secure_binning="auto",
    )  # fmt: skip
    three_party_files(tmp_path, df, cfg)
    done = finish(
        [vertimrf_process(tmp_path, *SERVER)]
        + [vertimrf_process(tmp_path, *three_party_args(n)) for n in THREE]
    )
    for code, _, err in done:
        assert code == 0, err[-2000:]
    return {"root": tmp_path, "df": df, "config": cfg, "out": [out for _, out, _ in done]}


def test_three_parties_and_a_server_write_simulates_bytes(three_party_run):
    root = three_party_run["root"]
    df, cfg = three_party_run["df"], three_party_run["config"]
    same_as_simulate(root / "synth.csv", df, cfg, seed=SEED, secret=SECRET)
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
    [(code, _, err)] = finish([vertimrf_process(root, *three_party_args("A"))])
    assert code == 0, err
    assert {p: p.read_bytes() for p in (root / "mail").glob("*/A.*")} == sent
    other = pd.read_csv(root / "A.csv")
    other["c0"] = (other["c0"] + 1) % 6
    other.to_csv(root / "A-other.csv", index=False)
    [(code, _, err)] = finish([vertimrf_process(root, *three_party_args("A", "A-other.csv"))])
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "this run has released; a corrected table needs a new config (a new run)" in err
    assert {p: p.read_bytes() for p in (root / "mail").glob("*/A.*")} == sent


def test_server_run_never_overwrites_its_output(three_party_run):
    root = three_party_run["root"]
    before = (root / "synth.csv").read_bytes()
    [(code, _, err)] = finish([vertimrf_process(root, *SERVER)])
    assert code == 2 and "synth.csv" in err and "--force" in err, err
    assert (root / "synth.csv").read_bytes() == before


def test_server_run_writes_parquet_by_the_suffix(three_party_run):
    """A finished run's server, run again with --out x.parquet, resumes from its state and
    writes simulate's rows as Parquet (the same values and column types)."""
    root = three_party_run["root"]
    server = SERVER.copy()
    server[server.index("synth.csv")] = "synth.parquet"
    [(code, _, err)] = finish([vertimrf_process(root, *server)])
    assert code == 0, err[-2000:]
    want, _ = simulate(three_party_run["df"], config=three_party_run["config"], seed=SEED,
                       secret=SECRET)  # fmt: skip
    pd.testing.assert_frame_equal(pd.read_parquet(root / "synth.parquet"), want)
